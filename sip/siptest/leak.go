package siptest

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// CheckLeaks fails t at cleanup if goroutines started during the test
// are still running 5 s after it (sipgo transactions wind down on their
// timers). Register it first so it runs after every other cleanup.
func CheckLeaks(t testing.TB) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if os.Getenv("SIPTEST_DUMP") != "" {
			time.Sleep(time.Second)
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Logf("after 1s: %d goroutines (before %d)\n%s", runtime.NumGoroutine(), before, interesting(string(buf)))
		}
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("%d goroutines leaked:\n%s", n-before, interesting(string(buf)))
		}
	})
}

// interesting drops the testing framework's own goroutines from a dump.
func interesting(dump string) string {
	var out []string
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.Contains(g, "testing.(*T).Run") || strings.Contains(g, "testing.tRunner") && !strings.Contains(g, "siptest") ||
			strings.Contains(g, "runtime.goexit") && strings.Contains(g, "testing.(*M)") {
			continue
		}
		out = append(out, g)
	}
	return strings.Join(out, "\n\n")
}
