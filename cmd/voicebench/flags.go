package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// loadFlags are the flags of the load command.
type loadFlags struct {
	mode string

	sipServer, to, from string

	ngAddr      string
	rtpeStart   bool
	rtpeCPU     int
	rtpeThreads int
	rtpePorts   string
	transcode   string

	echoAddr  string
	echoCount int
	echoList  string

	url, apiKey string
	apiBase     string
	agentID     int64
	wsFormat    string
	wsRate      int

	codec    string
	calls    int
	rate     float64
	hold     time.Duration
	duration time.Duration
	settle   time.Duration
	wav      string
	gap      time.Duration
	topology string
	lanes    int
	phases   int
	probe    int
	pids     intList
	out      string
	quiet    bool
	perCall  bool

	findMax   bool
	start     int
	step      int
	factor    float64
	maxCalls  int
	window    time.Duration
	maxLoss   float64
	maxJitter time.Duration
	retries   int
}

// intList is a repeatable integer flag.
type intList []int

// String implements flag.Value.
func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, v := range *l {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

// Set implements flag.Value.
func (l *intList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return err
		}
		*l = append(*l, n)
	}
	return nil
}

func parseLoadFlags(args []string, stderr io.Writer) (*loadFlags, error) {
	f := &loadFlags{}
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.mode, "mode", "sip", "target kind: sip (SIP+RTP to a media node or any UAS), rtpengine (ng-driven relay), echo (voicebench echo floor), ws (realtime WebSocket), webrtc (browser calls through mic sessions)")

	fs.StringVar(&f.sipServer, "sip", "127.0.0.1:5060", "sip: the SIP server host:port (UDP)")
	fs.StringVar(&f.to, "to", "", "sip: the number (user part) to call, e.g. one assigned to an audio-loopback agent")
	fs.StringVar(&f.from, "from", "voicebench", "sip: our user part")

	fs.StringVar(&f.ngAddr, "ng", "127.0.0.1:22222", "rtpengine: ng control address")
	fs.BoolVar(&f.rtpeStart, "rtpengine-start", false, "rtpengine: start rtpengine (userspace, loopback) on --ng instead of using a running one")
	fs.IntVar(&f.rtpeCPU, "rtpengine-cpu", -1, "rtpengine: with --rtpengine-start, pin it to this core (taskset)")
	fs.IntVar(&f.rtpeThreads, "rtpengine-threads", 1, "rtpengine: with --rtpengine-start, --num-threads")
	fs.StringVar(&f.rtpePorts, "rtpengine-ports", "30000-39999", "rtpengine: with --rtpengine-start, its media port range")
	fs.StringVar(&f.transcode, "transcode", "", "rtpengine: answer the B leg with this codec (opus) so rtpengine transcodes")

	fs.StringVar(&f.echoAddr, "echo", "127.0.0.1:31000", "echo: first address of a running `voicebench echo`")
	fs.IntVar(&f.echoCount, "echo-count", 1000, "echo: its number of sockets")
	fs.StringVar(&f.echoList, "echo-list", "", "echo: file of the echo's socket addresses (voicebench echo --list), instead of --echo/--echo-count")

	fs.StringVar(&f.url, "url", "ws://127.0.0.1:8080/v1/realtime", "ws: realtime WebSocket URL (add ?agent_id=N for a saved agent)")
	fs.StringVar(&f.apiKey, "api-key", "", "ws, webrtc: API key (Authorization: Bearer)")
	fs.StringVar(&f.apiBase, "api", "http://127.0.0.1:8080", "webrtc: the API root that serves /v1/mic-session")
	fs.Int64Var(&f.agentID, "agent-id", 0, "webrtc: the agent each mic session calls")
	fs.StringVar(&f.wsFormat, "ws-format", "pcm16", "ws: audio format both ways: pcm16, g711_ulaw or g711_alaw")
	fs.IntVar(&f.wsRate, "ws-rate", 16000, "ws: PCM rate, 16000 or 24000 (G.711 is always 8000)")

	fs.StringVar(&f.codec, "codec", "PCMU", "RTP codec to send: PCMU, PCMA or opus")
	fs.IntVar(&f.calls, "calls", 10, "concurrent calls")
	fs.Float64Var(&f.rate, "rate", 20, "call attempts per second while ramping")
	fs.DurationVar(&f.hold, "hold", 30*time.Second, "measurement window at full concurrency")
	fs.DurationVar(&f.duration, "duration", 0, "length of each call; 0 = until the run ends; shorter calls are replaced as they end")
	fs.DurationVar(&f.settle, "settle", 2*time.Second, "wait after ramping before measuring")
	fs.StringVar(&f.wav, "wav", "", "audio to send (WAV); default the embedded espeak-ng prompt")
	fs.DurationVar(&f.gap, "gap", 4*time.Second, "silence after each prompt (long enough for an agent to answer before the next one)")
	fs.StringVar(&f.topology, "topology", "", "how returning media relates to what was sent: echo, relay or agent (default: agent for sip and ws, relay for rtpengine, echo for echo)")
	fs.IntVar(&f.lanes, "lanes", 4, "shared UDP sockets for all calls' media")
	fs.IntVar(&f.phases, "phases", 10, "send phases per 20 ms (calls spread over 2 ms sub-ticks of one pacer)")
	fs.IntVar(&f.probe, "probe", 0, "calls that decode audio to recover delay (0 = all for G.711, 16 for Opus; -1 = none)")
	fs.Var(&f.pids, "pid", "process id of the system under test, for its CPU (repeatable, comma-separated)")
	fs.StringVar(&f.out, "out", "voicebench-results", "directory for results.json, summary.md and charts")
	fs.BoolVar(&f.quiet, "quiet", false, "no live progress line")
	fs.BoolVar(&f.perCall, "per-call", true, "include every call's figures in results.json (large for thousands of calls)")

	fs.BoolVar(&f.findMax, "find-max", false, "step concurrency up until a quality bound breaks; report the largest sustained N")
	fs.IntVar(&f.start, "start", 50, "find-max: first concurrency")
	fs.IntVar(&f.step, "step", 0, "find-max: add this many calls per step (0: multiply by --factor)")
	fs.Float64Var(&f.factor, "factor", 1.5, "find-max: multiply concurrency by this per step when --step is 0")
	fs.IntVar(&f.maxCalls, "max", 5000, "find-max: stop at this concurrency")
	fs.DurationVar(&f.window, "window", 15*time.Second, "find-max: measurement window per step")
	fs.Float64Var(&f.maxLoss, "max-loss", 0.1, "find-max: loss bound in percent")
	fs.DurationVar(&f.maxJitter, "max-jitter", 2*time.Millisecond, "find-max: bound on the p99 per-packet transit difference |D|")
	fs.IntVar(&f.retries, "retries", 1, "find-max: windows measured again when a step fails on loss or jitter (a host stall should not end the search)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case f.calls <= 0:
		return nil, errors.New("--calls must be positive")
	case f.rate <= 0:
		return nil, errors.New("--rate must be positive")
	case f.findMax && (f.start <= 0 || (f.step <= 0 && f.factor <= 1)):
		return nil, errors.New("--find-max needs --start > 0 and --step > 0 or --factor > 1")
	case f.mode == "sip" && f.to == "":
		return nil, errors.New("--mode sip needs --to (the number to call)")
	case f.mode == "webrtc" && (f.agentID <= 0 || f.apiKey == ""):
		return nil, errors.New("--mode webrtc needs --agent-id and --api-key")
	}
	if f.topology == "" {
		switch f.mode {
		case "rtpengine":
			f.topology = "relay"
		case "echo":
			f.topology = "echo"
		default:
			f.topology = "agent"
		}
	}
	return f, nil
}
