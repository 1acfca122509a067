package main

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/media/hugepage"
)

var hugeSink []byte

// TestServeAdvisesTheHeap: serve (--huge-pages defaults on) advises the Go
// heap for huge pages where the system gives them on request, including
// heap mapped after it started.
func TestServeAdvisesTheHeap(t *testing.T) {
	startServe(t)
	hugeSink = make([]byte, 96<<20) // heap the runtime maps after serve started
	p := unsafe.Pointer(&hugeSink[len(hugeSink)/2])
	switch hugepage.Mode() {
	case "madvise", "always":
		require.Eventually(t, func() bool {
			advised, _, err := hugepage.Advised(p)
			require.NoError(t, err)
			return advised
		}, 3*hugePagePeriod+5*time.Second, 100*time.Millisecond)
	default:
		advised, _, err := hugepage.Advised(p)
		require.NoError(t, err)
		require.False(t, advised)
	}
}
