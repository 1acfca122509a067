package main

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPprofAddr: --pprof-addr serves Go's profiler on its own address,
// and the API's address does not.
func TestPprofAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	paddr := ln.Addr().String()
	ln.Close()
	addr, _ := startServe(t, "--pprof-addr", paddr)
	var body []byte
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + paddr + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)
	require.Regexp(t, regexp.MustCompile(`goroutine profile: total \d+`), string(body))
	require.True(t, strings.Contains(string(body), "cmd/voiced.servePprof"), "the node's own goroutines: %s", body)

	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "not on the API's address")
}
