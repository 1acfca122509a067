package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/echo"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/ng"
	"github.com/voiced/voiced/cmd/voicebench/internal/report"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtc"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtpe"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtws"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
	"github.com/voiced/voiced/cmd/voicebench/internal/sipua"
)

// runLoad is the load command: build the target, ramp, measure (once, or
// per step with --find-max), hang up, report.
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseLoadFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	src, promptName, err := loadSource(f)
	if err != nil {
		return err
	}
	codec, ok := sdp.CodecByName(f.codec)
	if !ok {
		return fmt.Errorf("--codec %q: PCMU, PCMA or opus", f.codec)
	}
	codecName := codec.Name
	switch f.mode {
	case "ws":
		codecName = f.wsFormat
	case "webrtc":
		codec, codecName = sdp.Opus, "opus (WebRTC)"
	}
	topo, err := parseTopology(f.topology)
	if err != nil {
		return err
	}
	target, targetName, pids, closeTarget, err := buildTarget(ctx, f, src, log)
	if err != nil {
		return err
	}
	defer closeTarget()
	pids = append(pids, f.pids...)

	started := time.Now()
	g, err := load.New(load.Config{Codec: codec, Source: src, Topology: topo, Rate: f.rate, Duration: f.duration,
		Lanes: f.lanes, Phases: f.phases, Probe: f.probe, TargetPIDs: pids}, target, log)
	if err != nil {
		return err
	}
	want := f.calls
	if f.findMax {
		want = f.maxCalls
	}
	mon := startMonitor(g, pids, want, stderr, f.quiet)
	rep := &report.Report{}
	runErr := drive(ctx, f, g, rep)
	results := g.Stop()
	samples := mon.stop()

	full := report.New(report.Settings{Mode: f.mode, Target: targetName, Codec: codecName, Topology: topo.String(), Calls: f.calls,
		Rate: f.rate, HoldS: f.hold.Seconds(), CallS: f.duration.Seconds(), Lanes: f.lanes, Phases: f.phases, Prompt: promptName,
		FindMax: f.findMax}, results, g.JitterHistogram())
	full.Started = started
	full.Window, full.Steps, full.MaxSustained, full.Bound = rep.Window, rep.Steps, rep.MaxSustained, rep.Bound
	full.Samples = samples
	full.OmitCalls = !f.perCall
	if err := full.WriteFiles(f.out); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	printSummary(stdout, full, f.out)
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return nil
}

// drive ramps and measures; it fills rep's Window or Steps.
func drive(ctx context.Context, f *loadFlags, g *load.Generator, rep *report.Report) error {
	g.Maintain(f.duration > 0)
	if !f.findMax {
		if _, err := g.Scale(ctx, f.calls); err != nil {
			return err
		}
		if err := sleep(ctx, f.settle); err != nil {
			return err
		}
		w, err := g.Measure(ctx, f.hold)
		if err != nil {
			return err
		}
		rep.Window = &w
		return nil
	}
	rep.Bound = fmt.Sprintf("loss ≤ %g%%, p99 |D| ≤ %v, no setup failures, voicebench itself on time (p99 tick lateness ≤ %v, CPU ≤ 90%%)", f.maxLoss, f.maxJitter, f.maxJitter)
	for n := f.start; n <= f.maxCalls; {
		failed, err := g.Scale(ctx, n)
		if err != nil {
			return err
		}
		if err := sleep(ctx, f.settle); err != nil {
			return err
		}
		w, err := g.Measure(ctx, f.window)
		if err != nil {
			return err
		}
		st := report.Step{Calls: n, Window: w}
		st.Pass, st.Reason = judge(f, w, failed)
		// A shared or virtual machine stalls now and then for tens of ms,
		// which alone can push one window's p99 over the bound. A load the
		// target cannot carry fails again; a stall does not repeat on cue.
		// So a step that failed on media (not on setups) is measured once
		// more and passes if the second window does; both are reported.
		for retry := 0; !st.Pass && failed == 0 && retry < f.retries; retry++ {
			rep.Steps = append(rep.Steps, st)
			if w, err = g.Measure(ctx, f.window); err != nil {
				return err
			}
			st = report.Step{Calls: n, Window: w, Retry: true}
			st.Pass, st.Reason = judge(f, w, 0)
		}
		rep.Steps = append(rep.Steps, st)
		if !st.Pass {
			break
		}
		rep.MaxSustained = n
		if f.step > 0 {
			n += f.step
		} else {
			n = int(math.Ceil(float64(n) * f.factor))
		}
	}
	return nil
}

// stealNote is the steal, in percent of a core, from which a failed
// step's reason names it: 1% is 10 ms a second, which in one stall
// delays about 1% of the packets by up to half a frame, so it can break
// a 2 ms p99 bound on its own.
const stealNote = 1.0

// judge applies the --find-max bounds to a window.
func judge(f *loadFlags, w load.Window, failed int) (bool, string) {
	var why []string
	if failed > 0 || w.Failures > 0 {
		why = append(why, fmt.Sprintf("%d setup failures", failed+int(w.Failures)))
	}
	if w.LossPct > f.maxLoss {
		why = append(why, fmt.Sprintf("loss %.3f%% > %g%%", w.LossPct, f.maxLoss))
	}
	if lim := float64(f.maxJitter) / float64(time.Millisecond); w.JitterP99Ms > lim {
		why = append(why, fmt.Sprintf("p99 |D| %.2f ms > %g ms", w.JitterP99Ms, lim))
	}
	if w.Received == 0 {
		why = append(why, "no media came back")
	}
	// A generator that cannot keep its own clock measures itself, not
	// the target: say so instead of blaming the target.
	if lim := float64(f.maxJitter) / float64(time.Millisecond); w.PacerLateP99Ms > lim || w.PacerSkipped > 0 || w.GeneratorCPUPct > 90 {
		why = append(why, fmt.Sprintf("generator-bound (voicebench CPU %.0f%%, ticks late p99 %.2f ms, %d skipped)", w.GeneratorCPUPct, w.PacerLateP99Ms, w.PacerSkipped))
	}
	// A virtual machine's hypervisor that takes its cores away stalls
	// the target and voicebench alike. It does not pass or fail a step;
	// the reason says so, so that a failure on such a host is read as
	// the host's.
	if st, core := w.MaxCoreSteal(); len(why) > 0 && st >= stealNote {
		why = append(why, fmt.Sprintf("host steal %.1f%% on cpu%d", st, core))
	}
	return len(why) == 0, strings.Join(why, "; ")
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func loadSource(f *loadFlags) (*audio.Source, string, error) {
	var pcm []int16
	var rate int
	var err error
	name := "embedded espeak-ng prompt"
	if f.wav != "" {
		pcm, rate, err = audio.ReadPrompt(f.wav)
		name = filepath.Base(f.wav)
	} else {
		pcm, rate, err = audio.DefaultPrompt()
	}
	if err != nil {
		return nil, "", err
	}
	src, err := audio.NewSource(pcm, rate, f.gap)
	if err != nil {
		return nil, "", err
	}
	return src, fmt.Sprintf("%s + %v silence", name, f.gap), nil
}

func parseTopology(s string) (load.Topology, error) {
	switch s {
	case "echo":
		return load.Echo, nil
	case "relay":
		return load.Relay, nil
	case "agent":
		return load.Agent, nil
	}
	return 0, fmt.Errorf("--topology %q: echo, relay or agent", s)
}

// buildTarget makes the load.Target for --mode, the processes to watch,
// and a function that releases it.
func buildTarget(ctx context.Context, f *loadFlags, src *audio.Source, log *slog.Logger) (load.Target, string, []int, func(), error) {
	nop := func() {}
	switch f.mode {
	case "ws":
		format, err := rtws.ParseFormat(f.wsFormat, f.wsRate)
		if err != nil {
			return nil, "", nil, nop, err
		}
		t, err := rtws.NewTarget(rtws.Config{URL: f.url, APIKey: f.apiKey, Format: format, Source: src})
		if err != nil {
			return nil, "", nil, nop, err
		}
		return t, f.url, nil, nop, nil
	case "sip":
		ua, err := sipua.New(sipua.Config{Server: f.sipServer, To: f.to, From: f.from}, log)
		if err != nil {
			return nil, "", nil, nop, err
		}
		return ua, "sip:" + f.to + "@" + f.sipServer, nil, func() { ua.Close() }, nil
	case "rtpengine":
		var tc *sdp.Codec
		if f.transcode != "" {
			c, ok := sdp.CodecByName(f.transcode)
			if !ok {
				return nil, "", nil, nop, fmt.Errorf("--transcode %q: PCMU, PCMA or opus", f.transcode)
			}
			tc = &c
		}
		runID := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
		name := "rtpengine at " + f.ngAddr
		if tc != nil {
			name += " transcoding to " + tc.Name
		}
		if f.rtpeStart {
			lo, hi, err := portRange(f.rtpePorts)
			if err != nil {
				return nil, "", nil, nop, err
			}
			ngAP, err := netip.ParseAddrPort(f.ngAddr)
			if err != nil {
				return nil, "", nil, nop, fmt.Errorf("--ng: %w", err)
			}
			d, err := rtpe.Start(ctx, rtpe.DaemonConfig{NG: ngAP, PortMin: lo, PortMax: hi, CPU: f.rtpeCPU, Threads: f.rtpeThreads}, log)
			if err != nil {
				return nil, "", nil, nop, err
			}
			return &rtpe.Target{Client: d.Client(), Transcode: tc, RunID: runID}, name, []int{d.PID()}, func() { d.Close() }, nil
		}
		c, err := ng.Dial(f.ngAddr, ng.Config{})
		if err != nil {
			return nil, "", nil, nop, err
		}
		return &rtpe.Target{Client: c, Transcode: tc, RunID: runID}, name, nil, func() { c.Close() }, nil
	case "echo":
		addrs, err := echoAddrs(f)
		if err != nil {
			return nil, "", nil, nop, err
		}
		return echo.Target{Addrs: addrs}, fmt.Sprintf("voicebench echo %s (%d sockets)", addrs[0], len(addrs)), nil, nop, nil
	case "webrtc":
		t, err := rtc.NewTarget(rtc.Config{Source: src, Probe: f.probe,
			Signal: &rtc.MicSession{Base: f.apiBase, APIKey: f.apiKey, AgentID: f.agentID}})
		if err != nil {
			return nil, "", nil, nop, err
		}
		return t, fmt.Sprintf("%s/v1/mic-session (agent %d)", f.apiBase, f.agentID), nil, nop, nil
	}
	return nil, "", nil, nop, fmt.Errorf("--mode %q: sip, rtpengine, echo, ws or webrtc", f.mode)
}

// echoAddrs reads --echo-list, or spells out --echo and --echo-count.
func echoAddrs(f *loadFlags) ([]netip.AddrPort, error) {
	if f.echoList != "" {
		b, err := os.ReadFile(f.echoList)
		if err != nil {
			return nil, fmt.Errorf("--echo-list: %w", err)
		}
		var addrs []netip.AddrPort
		for _, line := range strings.Fields(string(b)) {
			a, err := netip.ParseAddrPort(line)
			if err != nil {
				return nil, fmt.Errorf("--echo-list %s: %w", f.echoList, err)
			}
			addrs = append(addrs, a)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("--echo-list %s: no addresses", f.echoList)
		}
		return addrs, nil
	}
	first, err := netip.ParseAddrPort(f.echoAddr)
	if err != nil {
		return nil, fmt.Errorf("--echo: %w", err)
	}
	if f.echoCount <= 0 || int(first.Port())+f.echoCount > 65536 {
		return nil, fmt.Errorf("--echo-count %d from port %d", f.echoCount, first.Port())
	}
	addrs := make([]netip.AddrPort, f.echoCount)
	for i := range addrs {
		addrs[i] = netip.AddrPortFrom(first.Addr(), first.Port()+uint16(i))
	}
	return addrs, nil
}

func portRange(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "-")
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || lo <= 0 || hi < lo || hi > 65535 {
		return 0, 0, fmt.Errorf("port range %q: want LOW-HIGH", s)
	}
	return lo, hi, nil
}

// printSummary prints the figures a terminal user wants first.
func printSummary(w io.Writer, r *report.Report, dir string) {
	s := r.Summary
	if s.OK > 0 && s.Received == 0 {
		fmt.Fprintln(w, "\nwarning: no media came back from the target")
	}
	fmt.Fprintf(w, "\n%d calls attempted, %d ok, %d failed; loss %.4f%%; setup p50 %.1f ms p99 %.1f ms\n",
		s.Attempted, s.OK, s.Failed, s.LossPct, s.Setup.P50, s.Setup.P99)
	if s.JitterD.N > 0 {
		fmt.Fprintf(w, "per-packet |D| p50 %.3f ms p99 %.3f ms max %.3f ms; per-call jitter p99 %.3f ms\n", s.JitterD.P50, s.JitterD.P99, s.JitterD.Max, s.Jitter.P99)
	}
	if s.OneWay.N > 0 {
		fmt.Fprintf(w, "one-way delay p50 %.2f ms p99 %.2f ms (%d calls)\n", s.OneWay.P50, s.OneWay.P99, s.OneWay.N)
	}
	if s.Response.N > 0 {
		fmt.Fprintf(w, "agent response p50 %.0f ms p99 %.0f ms (%d calls)\n", s.Response.P50, s.Response.P99, s.Response.N)
	}
	if s.FirstAudio.N > 0 {
		fmt.Fprintf(w, "first audio p50 %.0f ms p99 %.0f ms\n", s.FirstAudio.P50, s.FirstAudio.P99)
	}
	if s.MOS.N > 0 {
		fmt.Fprintf(w, "MOS (E-model) mean %.2f min %.2f\n", s.MOS.Mean, s.MOS.Min)
	}
	if x := r.Window; x != nil && x.TargetCPUPct > 0 {
		fmt.Fprintf(w, "target CPU %.1f%% of a core, %.2f µs per packet received\n", x.TargetCPUPct, x.TargetUsPerPacket)
	}
	if x := r.Window; x != nil {
		if st, core := x.MaxCoreSteal(); st > 0 {
			fmt.Fprintf(w, "host steal %.1f%% of all cores, up to %.1f%% on cpu%d (a hypervisor's stalls)\n", x.HostStealPct, st, core)
		}
	}
	if len(r.Steps) > 0 {
		fmt.Fprintf(w, "largest sustained: %s (%s)\n", r.Knee(), r.Bound)
	}
	fmt.Fprintf(w, "results in %s/summary.md\n", dir)
}
