package rtp

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain checks, after all tests, that no goroutine running this
// module's media code is left (sessions' receive loops, pacers, readers).
// Goroutines of the testing and fuzzing machinery are not counted.
func TestMain(m *testing.M) {
	code := m.Run()
	var left []string
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left = ours()
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "%d goroutines leaked:\n\n%s\n", len(left), strings.Join(left, "\n\n"))
		code = 1
	}
	os.Exit(code)
}

// ours returns the stacks of live goroutines that run code of
// github.com/voiced/voiced/media, other than this check.
func ours() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var left []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/voiced/voiced/media/") && !strings.Contains(g, ".TestMain(") {
			left = append(left, g)
		}
	}
	return left
}
