package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/procstat"
	"github.com/voiced/voiced/cmd/voicebench/internal/report"
)

// monitor samples the run once a second for the CPU-against-concurrency
// chart and, unless quiet, redraws a progress line on the terminal.
type monitor struct {
	g       *load.Generator
	pids    []int
	out     io.Writer
	quiet   bool
	tty     bool
	want    int
	stopc   chan struct{}
	wg      sync.WaitGroup
	samples []report.Sample
}

func startMonitor(g *load.Generator, pids []int, want int, out io.Writer, quiet bool) *monitor {
	m := &monitor{g: g, pids: pids, want: max(want, 1), out: out, quiet: quiet, stopc: make(chan struct{})}
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			m.tty = true
		}
	}
	m.wg.Add(1)
	go m.loop()
	return m
}

func (m *monitor) stop() []report.Sample {
	close(m.stopc)
	m.wg.Wait()
	if !m.quiet && m.tty {
		fmt.Fprintln(m.out)
	}
	return m.samples
}

func (m *monitor) targetCPU() time.Duration {
	var t time.Duration
	for _, pid := range m.pids {
		if v, err := procstat.Process(pid); err == nil {
			t += v
		}
	}
	return t
}

func (m *monitor) loop() {
	defer m.wg.Done()
	t0 := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	prevT, prevTarget := t0, m.targetCPU()
	prevSelf, _ := procstat.Process(os.Getpid())
	prevHost, _ := procstat.ReadHost()
	prev := m.g.Progress()
	for {
		select {
		case <-m.stopc:
			return
		case now := <-tick.C:
			p := m.g.Progress()
			target := m.targetCPU()
			self, _ := procstat.Process(os.Getpid())
			host, _ := procstat.ReadHost()
			secs := now.Sub(prevT).Seconds()
			all, _ := procstat.Percent(prevHost, host)
			s := report.Sample{T: now.Sub(t0).Seconds(), Calls: p.Active, HostCPUPct: all,
				TargetCPUPct: 100 * (target - prevTarget).Seconds() / secs, GenCPUPct: 100 * (self - prevSelf).Seconds() / secs}
			m.samples = append(m.samples, s)
			if !m.quiet {
				m.draw(p, prev, s, secs)
			}
			prevT, prevTarget, prevSelf, prevHost, prev = now, target, self, host, p
		}
	}
}

func (m *monitor) draw(p, prev load.Progress, s report.Sample, secs float64) {
	const width = 24
	fill := int(float64(width) * float64(p.Active) / float64(m.want))
	bar := strings.Repeat("#", min(fill, width)) + strings.Repeat("-", width-min(fill, width))
	tx := float64(p.Sent-prev.Sent) / secs
	rx := float64(p.Received-prev.Received) / secs
	line := fmt.Sprintf("%5.0fs [%s] %d/%d calls up, %d failed | tx %s/s rx %s/s | target CPU %.0f%% host %.0f%% voicebench %.0f%% | pacer late p99 %.1f ms",
		s.T, bar, p.Active, m.want, p.Failed, si(tx), si(rx), s.TargetCPUPct, s.HostCPUPct, s.GenCPUPct, float64(p.PacerLateP99)/1e6)
	if m.tty {
		fmt.Fprintf(m.out, "\r%s\033[K", line)
	} else {
		fmt.Fprintln(m.out, line)
	}
}

// si formats a rate compactly: 950, 12.3k, 1.2M.
func si(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
