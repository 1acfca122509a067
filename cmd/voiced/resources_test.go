package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBadDIDPoolFileNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	pool := filepath.Join(dir, "pool.csv")
	require.NoError(t, os.WriteFile(pool, []byte("number,area_code,city,state\n+14155550100,415,San Francisco,CA\n4155550101\n"), 0o600))
	err := run(context.Background(), []string{"serve", "--data-dir", dir, "--did-pool", pool}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "--did-pool")
	require.ErrorContains(t, err, "line 3")
}

// TestServeHandsOutDemoNumbers runs serve with a DID pool: a requested
// number comes from the pool and the provisioning pass makes it active.
func TestServeHandsOutDemoNumbers(t *testing.T) {
	dir := t.TempDir()
	pool := filepath.Join(dir, "pool.csv")
	require.NoError(t, os.WriteFile(pool, []byte("# demo DIDs\n+14155550100,,San Francisco,CA\n"), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuf
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--did-pool", pool, "--products", "storm-base=7"}, &stdout, &stderr)
	}()
	addrRe := regexp.MustCompile(`http_addr=(127\.0\.0\.1:\d+)`)
	var addr string
	require.Eventually(t, func() bool {
		m := addrRe.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 20*time.Second, 20*time.Millisecond, "stderr: %s", stderr.String())
	require.Contains(t, stderr.String(), "demo_numbers=1")
	key := regexp.MustCompile(`sk_live_[0-9a-f]+`).FindString(stdout.String())
	call := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var m map[string]any
		b, _ := io.ReadAll(res.Body)
		_ = json.Unmarshal(b, &m)
		return res.StatusCode, m
	}
	st, n := call("POST", "/v1/phone-numbers", `{"area_code":"415"}`)
	require.Equal(t, 201, st, "%v", n)
	require.Equal(t, "+14155550100", n["number"])
	path := fmt.Sprintf("/v1/phone-numbers/%d", int64(n["id"].(float64)))
	require.Eventually(t, func() bool {
		_, got := call("GET", path, "")
		return got["status"] == "active"
	}, 10*time.Second, 50*time.Millisecond)
	st, ag := call("POST", "/v1/agents", `{"name":"Front desk"}`)
	require.Equal(t, 201, st, "%v", ag)
	require.Equal(t, "storm-base", ag["product"])
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	_, err := os.Stat(filepath.Join(dir, "blobs"))
	require.NoError(t, err, "the blob store directory is created")
}
