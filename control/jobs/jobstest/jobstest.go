// Package jobstest runs a replica of a durable worker (webhook deliveries,
// grading, knowledge ingestion) in a process of its own, so that a test
// can kill it (SIGKILL) mid-job and check that another replica takes the
// job over. The replica is the test binary itself, started again to run
// one test function that serves as the replica's main (the os/exec
// helper-process pattern).
package jobstest

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Replica is a running replica process.
type Replica struct {
	cmd *exec.Cmd
	out output
}

// Start runs this test binary's test named test (a function that returns
// at once unless its environment asks it to be a replica) in a new
// process, with env added to this one's. The test's cleanup kills what
// is still running.
func Start(t testing.TB, test string, env ...string) *Replica {
	t.Helper()
	r := &Replica{cmd: exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")}
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	require.NoError(t, r.cmd.Start())
	t.Cleanup(func() { _ = r.cmd.Process.Kill(); _ = r.cmd.Wait() })
	return r
}

// Kill sends SIGKILL and checks that the replica died of it (not of an
// earlier failure of its own).
func (r *Replica) Kill(t testing.TB) {
	t.Helper()
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGKILL))
	err := r.cmd.Wait()
	require.Error(t, err, "the replica had exited by itself; its output:\n%s", r.Output())
	ee, ok := err.(*exec.ExitError)
	require.True(t, ok, "%v", err)
	require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal(), "its output:\n%s", r.Output())
}

// Stop ends the replica as an operator would (SIGTERM) and waits for it.
func (r *Replica) Stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	_ = r.cmd.Wait()
}

// Output is what the replica has written so far, stdout and stderr.
func (r *Replica) Output() string { return r.out.String() }

// output collects the replica's two pipes.
type output struct {
	mu sync.Mutex
	b  []byte
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b = append(o.b, p...)
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.b)
}
