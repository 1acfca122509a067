package mediatest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Capture runs Debian's tshark on the loopback interface with the capture
// filter filter (BPF) until stop is called, and returns the capture file's
// path. It returns once the filter is live. Without tshark the test fails
// under CI=true and is skipped otherwise.
func Capture(t testing.TB, filter string) (file string, stop func()) {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tshark not installed (Debian package tshark)")
		}
		t.Skip("tshark not installed (Debian package tshark)")
	}
	file = filepath.Join(t.TempDir(), "capture.pcap")
	cmd := exec.Command(tshark, "-i", "lo", "-f", filter, "-w", file, "-q")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "Capturing on") {
				once = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("tshark did not start capturing")
	}
	time.Sleep(200 * time.Millisecond) // the capture filter is live
	return file, func() {
		// dumpcap hands packets over in batches (up to a second apart);
		// a SIGINT earlier loses the last ones.
		time.Sleep(1500 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
}
