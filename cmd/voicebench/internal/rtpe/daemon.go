// Package rtpe runs rtpengine (Sipwise's media relay, Debian package
// rtpengine-daemon) in userspace mode on loopback and makes it a
// load.Target through its ng control protocol, so voicebench can put the
// same load on it as on a voiced media node.
//
// # Topology
//
// Each call is one offer/answer pair. The A leg is the generator's
// sending socket, the B leg its receiving socket: the generator sends RTP
// to rtpengine's A-facing port, rtpengine relays (or transcodes) it to B,
// and the generator measures it there. rtpengine thus receives one packet
// and sends one packet per call per 20 ms, as a voiced node with an
// audio-loopback agent does, and the delay measured is one way (Relay).
// With Transcode set, the offer asks rtpengine to add that codec towards
// B and B answers with it alone, so every packet is decoded from the
// offered codec and encoded again (PCMU to Opus for the S2 comparison).
package rtpe

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/voiced/voiced/cmd/voicebench/internal/ng"
)

// DaemonConfig says how to run rtpengine. Zero values mean the defaults.
type DaemonConfig struct {
	// Bin is the executable; "" means rtpengine from PATH.
	Bin string
	// NG is the ng control address; zero means 127.0.0.1:22222.
	NG netip.AddrPort
	// Interface is the media address; zero means 127.0.0.1.
	Interface netip.Addr
	// PortMin and PortMax bound rtpengine's media ports; zero means
	// 30000-39999.
	PortMin, PortMax int
	// Threads is --num-threads (media worker threads); 0 means 1, the
	// one-core comparison.
	Threads int
	// CPU pins the daemon to this core with taskset; -1 means no pinning.
	CPU int
	// LogLevel is --log-level (syslog levels); 0 means 4 (warnings).
	LogLevel int
	// Files is the open-file limit given to the daemon (four sockets per
	// call); 0 means 65536.
	Files uint64
}

// Daemon is a running rtpengine.
type Daemon struct {
	cmd    *exec.Cmd
	client *ng.Client
	out    *lockedBuffer
	done   chan error
}

// Start runs rtpengine in the foreground, userspace only (--table=-1, no
// config file), and waits until it answers an ng ping.
func Start(ctx context.Context, cfg DaemonConfig, log *slog.Logger) (*Daemon, error) {
	if cfg.Bin == "" {
		cfg.Bin = "rtpengine"
	}
	bin, err := exec.LookPath(cfg.Bin)
	if err != nil {
		return nil, ErrNotInstalled
	}
	if !cfg.NG.IsValid() {
		cfg.NG = netip.MustParseAddrPort("127.0.0.1:22222")
	}
	if !cfg.Interface.IsValid() {
		cfg.Interface = netip.MustParseAddr("127.0.0.1")
	}
	if cfg.PortMin == 0 {
		cfg.PortMin, cfg.PortMax = 30000, 39999
	}
	if cfg.Threads <= 0 {
		cfg.Threads = 1
	}
	if cfg.LogLevel == 0 {
		cfg.LogLevel = 4
	}
	if cfg.Files == 0 {
		cfg.Files = 65536
	}
	args := []string{bin, "--foreground", "--log-stderr", "--config-file=none", "--table=-1",
		"--interface=" + cfg.Interface.String(), "--listen-ng=" + cfg.NG.String(),
		"--port-min=" + strconv.Itoa(cfg.PortMin), "--port-max=" + strconv.Itoa(cfg.PortMax),
		"--num-threads=" + strconv.Itoa(cfg.Threads), "--log-level=" + strconv.Itoa(cfg.LogLevel),
		"--delete-delay=0", "--timeout=60"}
	if cfg.CPU >= 0 {
		ts, err := exec.LookPath("taskset")
		if err != nil {
			return nil, fmt.Errorf("pin rtpengine: %w", err)
		}
		args = append([]string{ts, "-c", strconv.Itoa(cfg.CPU)}, args...)
	}
	d := &Daemon{out: &lockedBuffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command(args[0], args[1:]...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start rtpengine: %w", err)
	}
	// taskset execs rtpengine in place, so the pid is rtpengine's.
	lim := unix.Rlimit{Cur: cfg.Files, Max: cfg.Files}
	if err := unix.Prlimit(d.cmd.Process.Pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil && log != nil {
		log.Warn("raise rtpengine open-file limit", "err", err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	d.client, err = ng.Dial(cfg.NG.String(), ng.Config{RetryInterval: 200 * time.Millisecond, Attempts: 2})
	if err != nil {
		d.Close()
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		res, err := d.client.Do(pctx, map[string]any{"command": "ping"})
		cancel()
		if err == nil && res["result"] == "pong" {
			return d, nil
		}
		select {
		case err := <-d.done:
			d.done <- err
			d.client.Close()
			return nil, fmt.Errorf("rtpengine exited: %v: %s", err, d.out.tail(2000))
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			d.Close()
			return nil, fmt.Errorf("rtpengine did not answer ng ping: %v: %s", err, d.out.tail(2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// PID returns the daemon's process id (for CPU accounting).
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// Client returns the ng client connected to the daemon.
func (d *Daemon) Client() *ng.Client { return d.client }

// Log returns the end of the daemon's output.
func (d *Daemon) Log() string { return d.out.tail(4000) }

// Close stops the daemon (SIGTERM, then SIGKILL after 5 s) and waits.
func (d *Daemon) Close() error {
	if d.client != nil {
		d.client.Close()
	}
	_ = d.cmd.Process.Signal(unix.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	return nil
}

// lockedBuffer collects the daemon's output for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 {
		l.b.Reset() // keep memory bounded; the tail is what matters
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.b.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
