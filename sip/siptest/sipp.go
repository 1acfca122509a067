package siptest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"
)

// Binary returns the path of the program name. When it is missing the
// test is skipped, or fails under CI=true (where the packages of
// deploy/debian-deps.sh test are installed).
func Binary(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found (Debian package %s): deploy/debian-deps.sh test installs it", name, pkg)
	}
	t.Skipf("%s not found: apt-get install %s", name, pkg)
	return ""
}

// FreePort returns a port that was free for UDP and TCP on ip a moment
// ago.
func FreePort(t testing.TB, ip string) int {
	t.Helper()
	for range 50 {
		l, err := net.ListenPacket("udp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		port := l.LocalAddr().(*net.UDPAddr).Port
		l.Close()
		if tl, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port))); err == nil {
			tl.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

// FreeMediaPorts returns an even port p such that UDP ports p to p+3 were
// free on ip a moment ago: sipp binds audio RTP and RTCP at -mp and -mp+1
// and video RTP and RTCP at -mp+2 and -mp+3, and any of those taken by
// another test makes it exit.
func FreeMediaPorts(t testing.TB, ip string) int {
	t.Helper()
	for range 100 {
		l, err := net.ListenPacket("udp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		base := l.LocalAddr().(*net.UDPAddr).Port &^ 1
		l.Close()
		if base+3 > 65535 {
			continue
		}
		var held []net.PacketConn
		ok := true
		for i := range 4 {
			c, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(base+i)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no four free consecutive UDP ports")
	return 0
}

// Proc is a running sipp.
type Proc struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan error
	dir  string
	// Port is sipp's SIP port; MediaPort its RTP port.
	Port, MediaPort int
}

// Sipp starts sipp on 127.0.0.1 with a scenario file (a path) and extra
// arguments (a remote host:port last for a UAC). It always binds its
// SIP and media ports explicitly, writes its error trace to a temporary
// directory and stops on its own after timeout. Wait collects it; the
// test's cleanup kills it if still running.
func Sipp(t testing.TB, scenario string, timeout time.Duration, args ...string) *Proc {
	t.Helper()
	bin := Binary(t, "sipp", "sip-tester")
	abs, err := filepath.Abs(scenario)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{dir: t.TempDir(), done: make(chan error, 1), Port: FreePort(t, "127.0.0.1"), MediaPort: FreeMediaPorts(t, "127.0.0.1")}
	all := []string{"-sf", abs, "-i", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-mi", "127.0.0.1", "-mp", strconv.Itoa(p.MediaPort),
		"-timeout", strconv.Itoa(int(timeout.Seconds()+0.5)) + "s", "-timeout_error", "-nostdin", "-trace_err",
		"-error_file", filepath.Join(p.dir, "errors.log")}
	all = append(all, args...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+5*time.Second)
	p.cmd = exec.CommandContext(ctx, bin, all...)
	p.cmd.Dir = p.dir
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start sipp: %v", err)
	}
	go func() {
		p.done <- p.cmd.Wait()
		cancel()
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// Wait waits for sipp to exit and returns its error (nil when every
// call of the scenario succeeded) with its error trace in the message.
func (p *Proc) Wait() error {
	err := <-p.done
	p.done <- err // later Waits and the cleanup see it too
	if err == nil {
		return nil
	}
	trace, _ := os.ReadFile(filepath.Join(p.dir, "errors.log"))
	out := p.out.String()
	if i := strings.LastIndex(out, "------------------------------ Scenario Screen"); i >= 0 {
		out = out[i:]
	}
	if len(out) > 4000 {
		out = out[len(out)-4000:]
	}
	return fmt.Errorf("sipp: %v\nerrors:\n%s\nscreen:\n%s", err, trace, out)
}

// Addr returns sipp's SIP address.
func (p *Proc) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.Port) }

// Dir is sipp's working directory (its statistics files land there).
func (p *Proc) Dir() string { return p.dir }

// Scenario renders the templated sipp scenario at path (a .tmpl file)
// with data into a temporary file and returns that file's path.
func Scenario(t testing.TB, path string, data any) string {
	t.Helper()
	tpl, err := template.ParseFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".tmpl"))
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := tpl.Execute(f, data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}
