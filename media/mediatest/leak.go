// Package mediatest holds test helpers for the media packages.
package mediatest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// RunWithLeakCheck runs a package's tests and then fails the run if any
// goroutine executing this module's media code is still alive 3 s later
// (receive loops, pacer clocks and workers, readers). Goroutines of the
// testing and fuzzing machinery are not counted. Call it from TestMain:
//
//	func TestMain(m *testing.M) { mediatest.RunWithLeakCheck(m) }
func RunWithLeakCheck(m *testing.M) {
	code := m.Run()
	var left []string
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left = mediaGoroutines()
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

// mediaGoroutines returns the stacks of live goroutines that run code of
// github.com/voiced/voiced/media, other than this check.
func mediaGoroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var left []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/voiced/voiced/media/") && !strings.Contains(g, "mediatest.RunWithLeakCheck(") {
			left = append(left, g)
		}
	}
	return left
}
