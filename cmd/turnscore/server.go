package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// server is a `voiced serve` the scorecard started: its own data
// directory, loopback addresses, and the offline providers (no LLM, TTS or
// STT URL: the echo model, espeak-ng and PocketSphinx).
type server struct {
	addr, key string
	cmd       *exec.Cmd
	dir       string
	log       *tail
	done      chan error
}

// tail keeps the last lines a process wrote, for an error message.
type tail struct {
	mu    sync.Mutex
	lines []string
	file  *os.File // all lines, when TURNSCORE_SERVER_LOG names one
}

func (t *tail) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, s)
	if t.file != nil {
		_, _ = t.file.WriteString(s + "\n")
	}
	if len(t.lines) > 40 {
		t.lines = t.lines[len(t.lines)-40:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

var (
	servingRe = regexp.MustCompile(`msg=serving http_addr=(127\.0\.0\.1:\d+)`)
	keyRe     = regexp.MustCompile(`sk_live_[0-9a-f]+`)
	orgRe     = regexp.MustCompile(`created organization (\d+)`)
)

// startServer runs bin serve and waits for its address and first API key.
func startServer(ctx context.Context, bin, sipAddr string, extra []string) (*server, error) {
	dir, err := os.MkdirTemp("", "turnscore-serve-")
	if err != nil {
		return nil, err
	}
	// RTP ports are bound per call; a random range keeps two scorecards
	// (or other tests on the machine) from meeting.
	lo := 20000 + 200*rand.IntN(100)
	args := append([]string{"serve", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--sip-addr", sipAddr,
		"--rtp-ports", fmt.Sprintf("%d-%d", lo, lo+199), "--access-log=false"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, dir: dir, log: &tail{}, done: make(chan error, 1)}
	if p := os.Getenv("TURNSCORE_SERVER_LOG"); p != "" {
		// Debugging: every line the server writes, appended to this file.
		if s.log.file, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return nil, err
		}
	}
	addrc, keyc := make(chan string, 1), make(chan string, 1)
	scan := func(r io.Reader, re *regexp.Regexp, group int, c chan string) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			s.log.add(line)
			if m := re.FindStringSubmatch(line); m != nil && !sent {
				c <- m[group]
				sent = true
			}
		}
	}
	orgc := make(chan string, 1)
	go func() {
		// The first-use banner names the organization, then its key.
		pr, pw := io.Pipe()
		go scan(pr, orgRe, 1, orgc)
		scan(io.TeeReader(stdout, pw), keyRe, 0, keyc)
		pw.Close()
	}()
	go scan(stderr, servingRe, 1, addrc)
	go func() { s.done <- cmd.Wait() }()
	timeout := time.After(60 * time.Second)
	for s.addr == "" || s.key == "" {
		select {
		case s.addr = <-addrc:
		case s.key = <-keyc:
		case err := <-s.done:
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("%s serve exited (%v) before serving:\n%s", bin, err, s.log)
		case <-timeout:
			s.stop()
			return nil, fmt.Errorf("%s serve: no address and key within 60 s:\n%s", bin, s.log)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		}
	}
	// A first-use organization starts with little credit; a scorecard's
	// hundreds of sessions need more (every session is a billed call).
	org := ""
	select {
	case org = <-orgc:
	case <-time.After(5 * time.Second):
	}
	if org == "" {
		s.stop()
		return nil, fmt.Errorf("%s serve: no organization in the first-use banner:\n%s", bin, s.log)
	}
	out, err := exec.CommandContext(ctx, bin, "admin", "add-credit", "--data-dir", dir, "--org-id", org, "--cents", "100000000", "--note", "turnscore").CombinedOutput()
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("%s admin add-credit: %v: %s", bin, err, out)
	}
	return s, nil
}

// stop ends the server (SIGINT, then a kill after 20 s) and removes its data.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	_ = os.RemoveAll(s.dir)
}
