package rtp

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMain checks, after all tests, that every goroutine a test started
// (sessions' receive loops, pacers, readers) has ended.
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before && code == 0 {
		buf := make([]byte, 1<<20)
		fmt.Fprintf(os.Stderr, "goroutines leaked: %d before the tests, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
		code = 1
	}
	os.Exit(code)
}
