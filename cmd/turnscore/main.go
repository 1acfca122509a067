// Command turnscore is issue 31's turn-taking scorecard: it starts a
// `voiced serve` with the offline providers (PocketSphinx, the echo model,
// espeak-ng), streams a generated corpus through the realtime WebSocket
// in real time as a client would, and prints, per condition, what the
// caller would have heard: the agent interrupted by its own echo, stopped
// by a backchannel, a cough or noise, missing a real interruption, how
// fast it went quiet, cutting off a hesitating caller, how fast it
// answered with 10 sessions at once, and sessions closed without a reason.
//
//	go run ./cmd/turnscore -items 40                      # one build, table + JSON
//	go run ./cmd/turnscore -a bin/voiced-old -b bin/voiced # A/B: exit 1 if B is worse
//
// Every item is drawn from -seed, so two runs (and A and B) stream the
// same audio; espeak-ng clips are cached under -cache.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

type options struct {
	items     int
	channel   string
	bin       string
	a, b      string
	seed      uint64
	parallel  int
	only      string
	jsonOut   string
	cache     string
	tolRate   float64
	tolMS     float64
	serveArgs string
	turn      string
	duration  time.Duration
	goals     goals
}

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	code, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "turnscore:", err)
	}
	os.Exit(code)
}

// report is the JSON result of one build.
type report struct {
	Binary  string   `json:"binary"`
	Channel string   `json:"channel"`
	Items   int      `json:"items"`
	Seed    uint64   `json:"seed"`
	Started string   `json:"started"`
	Seconds float64  `json:"seconds"`
	Rounds  int      `json:"rounds"` // -duration: how many times the conditions ran
	Rows    []row    `json:"conditions"`
	Results []result `json:"trials,omitempty"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("turnscore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.items, "items", 40, "trials per condition")
	fs.StringVar(&o.channel, "channel", "realtime", "front door to score: realtime (the WebSocket) or sip (phone calls over SIP/RTP: the conditions over the agent's speech only)")
	fs.StringVar(&o.bin, "bin", "", "voiced binary to score (empty: go build ./cmd/voiced into the cache)")
	fs.StringVar(&o.a, "a", "", "A/B: the baseline voiced binary")
	fs.StringVar(&o.b, "b", "", "A/B: the candidate voiced binary; exit 1 if it is worse than -a beyond the tolerances")
	var seed uint
	fs.UintVar(&seed, "seed", 31, "corpus seed")
	fs.IntVar(&o.parallel, "parallel", 10, "sessions at once (the latency condition always runs 10)")
	fs.StringVar(&o.only, "conditions", "", "comma-separated substrings: score only the conditions whose name contains one")
	fs.StringVar(&o.jsonOut, "json", "", "write the JSON result to this file (- : stdout)")
	def, _ := os.UserCacheDir()
	fs.StringVar(&o.cache, "cache", filepath.Join(def, "voiced-turnscore"), "where generated audio is kept between runs")
	fs.Float64Var(&o.tolRate, "tol-rate", 0.05, "A/B: how much higher a failure rate B may have (0.05 = 5 points)")
	fs.Float64Var(&o.tolMS, "tol-ms", 100, "A/B: how many milliseconds slower a latency figure B may be")
	fs.StringVar(&o.serveArgs, "serve-args", "", "extra flags for voiced serve, space-separated")
	fs.DurationVar(&o.duration, "duration", 0, "soak: repeat the conditions, each round with the next seed, starting trials until this much time has passed (0: one round of -items)")
	fs.StringVar(&o.turn, "turn-detection", "", `the sessions' turn_detection object, e.g. {"type":"semantic_vad","eagerness":"high"} (empty: server_vad's defaults); sets the end-of-turn and latency goals`)
	if err := fs.Parse(args); err != nil {
		return 2, nil
	}
	o.seed = uint64(seed)
	var err error
	if o.goals, err = goalsFor(o.turn); err != nil {
		return 2, err
	}
	switch {
	case o.channel != "realtime" && o.channel != "sip":
		return 2, fmt.Errorf("-channel %q: realtime or sip", o.channel)
	case o.items < 1:
		return 2, fmt.Errorf("-items must be at least 1, not %d", o.items)
	case o.parallel < 1:
		return 2, fmt.Errorf("-parallel must be at least 1, not %d", o.parallel)
	case o.duration < 0:
		return 2, fmt.Errorf("-duration must not be negative, not %s", o.duration)
	case (o.a == "") != (o.b == ""):
		return 2, errors.New("-a and -b go together")
	case o.a != "" && o.bin != "":
		return 2, errors.New("-bin or -a/-b, not both")
	}
	conds := pick(o.only)
	if o.channel == "sip" {
		// sipgo logs retransmitted responses through the default logger.
		slog.SetDefault(slog.New(slog.DiscardHandler))
		// A phone call has no turn events: hesitation cut-offs and the
		// answer latency are scored on the realtime socket only.
		var over []condition
		for _, c := range conds {
			if c.Kind != kindHesitation && c.Kind != kindLatency {
				over = append(over, c)
			}
		}
		conds = over
	}
	if len(conds) == 0 {
		return 2, fmt.Errorf("-conditions %q matches none", o.only)
	}
	v, err := newVoices(o.cache)
	if err != nil {
		return 1, err
	}
	if o.a == "" {
		bin := o.bin
		if bin == "" {
			if bin, err = build(ctx, o.cache); err != nil {
				return 1, err
			}
		}
		rep, err := score(ctx, o, conds, bin, v, stderr)
		if err != nil {
			return 1, err
		}
		fmt.Fprintf(stdout, "\n%s, %s, %d items per condition, seed %d, %.0f s:\n\n", bin, o.channel, o.items, o.seed, rep.Seconds)
		if rep.Rounds > 1 {
			fmt.Fprintf(stdout, "soak: %d rounds (seeds %d-%d), %d sessions, %d closed by the server, %d of them without a reason\n\n",
				rep.Rounds, o.seed, o.seed+uint64(rep.Rounds)-1, len(rep.Results), rep.closed(), rep.closedNoReason())
		}
		printTable(stdout, rep.Rows)
		if err := writeJSON(o.jsonOut, stdout, rep); err != nil {
			return 1, err
		}
		if o.duration > 0 && rep.closedNoReason() > 0 {
			// The soak's goal: no session closed without a reason.
			return 1, nil
		}
		return 0, nil
	}
	var reps [2]*report
	for i, bin := range []string{o.a, o.b} {
		if reps[i], err = score(ctx, o, conds, bin, v, stderr); err != nil {
			return 1, fmt.Errorf("%s: %w", bin, err)
		}
		fmt.Fprintf(stdout, "\n%s: %s, %d items per condition, seed %d:\n\n", []string{"A", "B"}[i], bin, o.items, o.seed)
		printTable(stdout, reps[i].Rows)
	}
	regs := compare(reps[0].Rows, reps[1].Rows, o.tolRate, o.tolMS)
	if err := writeJSON(o.jsonOut, stdout, map[string]any{"a": reps[0], "b": reps[1], "regressions": regs}); err != nil {
		return 1, err
	}
	if len(regs) > 0 {
		fmt.Fprintf(stdout, "\nB is worse than A (tolerances %.2f, %.0f ms):\n", o.tolRate, o.tolMS)
		for _, r := range regs {
			fmt.Fprintf(stdout, "  %s: %s %.3g -> %.3g\n", r.Condition, r.Figure, r.A, r.B)
		}
		return 1, nil
	}
	fmt.Fprintln(stdout, "\nB is no worse than A on any goal.")
	return 0, nil
}

func pick(only string) []condition {
	if only == "" {
		return conditions
	}
	var out []condition
	for _, c := range conditions {
		for _, s := range strings.Split(only, ",") {
			if s = strings.TrimSpace(s); s != "" && strings.Contains(c.Name, s) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

func writeJSON(path string, stdout io.Writer, v any) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if path == "-" {
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// build compiles ./cmd/voiced (the tree turnscore runs in) into dir.
func build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "voiced")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/voiced/voiced/cmd/voiced")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build cmd/voiced: %v\n%s", err, out)
	}
	return bin, nil
}

// score runs every condition against one build.
func score(ctx context.Context, o options, conds []condition, bin string, v *voices, log io.Writer) (*report, error) {
	began := time.Now()
	var extra []string
	if o.serveArgs != "" {
		extra = strings.Fields(o.serveArgs)
	}
	sipAddr := "127.0.0.1:0"
	if o.channel == "sip" {
		port, err := freeUDPPort()
		if err != nil {
			return nil, err
		}
		sipAddr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	srv, err := startServer(ctx, bin, sipAddr, extra)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	r := &runner{addr: srv.addr, key: srv.key, voices: v, refs: reference{}, turn: o.turn}
	if o.channel == "sip" {
		if err := sipSetup(ctx, srv); err != nil {
			return nil, fmt.Errorf("phone setup: %w", err)
		}
		r.sip = sipAddr
	}
	// Warm-up: the server loads its speech-to-text decoders on first use
	// (about 0.5 s each, one per core), which would stall the first
	// trials' audio; two spoken turns at once load them. Not scored.
	if r.sip == "" {
		warm := items(condition{Name: "warm-up", Kind: kindLatency}, 2, o.seed)
		parallel(len(warm), len(warm), func(i int) { _ = r.run(ctx, warm[i]) })
	} else if s, err := dialSIP(ctx, r.sip, sipNumber(0)); err == nil {
		// A phone call has no turns to warm up with, but the first
		// speech the server synthesizes must not be a reference: it is
		// espeak-ng's exact rendering, and later ones (every trial's)
		// run up to 2% shorter, which on one agent text took 5 of the
		// 6 loud frames' slack for lost words before any pause.
		var loud []bool
		_ = r.overAgent(ctx, s, item{Cond: condition{Name: "warm-up", Kind: kindNoise}, Seed: 99}, &result{}, &loud)
		s.close()
	}
	// Two clean renderings of each agent text, for telling a pause from
	// the agent's own pauses and for counting lost words (rendering).
	var mu sync.Mutex
	var refErr error
	parallel(len(agentTexts), min(o.parallel, len(agentTexts)), func(i int) {
		var masks [][]bool
		for attempt := 0; attempt < 4 && len(masks) < refRenderings; attempt++ {
			var loud []bool
			var s *session
			var err error
			if r.sip != "" {
				s, err = dialSIP(ctx, r.sip, sipNumber(i))
			} else {
				s, err = dial(ctx, r.addr, r.key, "")
			}
			if err == nil {
				var res result
				err = r.overAgent(ctx, s, item{Cond: condition{Name: "reference", Kind: kindNoise}, AgentText: i, Seed: uint64(i)}, &res, &loud)
				s.close()
			}
			if err != nil {
				mu.Lock()
				refErr = fmt.Errorf("reference rendering of agent text %d: %w", i, err)
				mu.Unlock()
				continue
			}
			masks = append(masks, loud)
		}
		if len(masks) == refRenderings {
			mu.Lock()
			r.refs[i] = newRendering(masks...)
			mu.Unlock()
		}
	})
	if len(r.refs) < len(agentTexts) {
		return nil, fmt.Errorf("%w\nserve's log:\n%s", refErr, srv.log)
	}
	rep := &report{Binary: bin, Channel: o.channel, Items: o.items, Seed: o.seed, Started: began.UTC().Format(time.RFC3339)}
	// A soak (-duration) runs round after round, each from the next seed,
	// and starts no trial once the time is up; the trials a round did not
	// start are not scored.
	deadline := began.Add(o.duration)
	expired := func() bool { return o.duration > 0 && time.Now().After(deadline) }
	var results []result
	var done int
	for round := 0; round == 0 || (o.duration > 0 && !expired()); round++ {
		if ctx.Err() != nil {
			break
		}
		rep.Rounds++
		seed := o.seed + uint64(round)
		var all []item
		var lat []item
		for _, c := range conds {
			if c.Kind == kindLatency {
				lat = append(lat, items(c, o.items, seed)...)
			} else {
				all = append(all, items(c, o.items, seed)...)
			}
		}
		rs := make([]result, len(all)+len(lat))
		ran := make([]bool, len(rs))
		progress := func() {
			mu.Lock()
			done++
			if done%20 == 0 {
				fmt.Fprintf(log, "turnscore: %s: round %d, %d trials, %.0f s\n", filepath.Base(bin), round+1, done, time.Since(began).Seconds())
			}
			mu.Unlock()
		}
		parallel(len(all), o.parallel, func(i int) {
			if expired() {
				return
			}
			rs[i], ran[i] = r.run(ctx, all[i]), true
			progress()
		})
		// End of speech to first audio: 10 sessions at once, nothing else
		// (a soak keeps to -parallel).
		k := 10
		if o.duration > 0 {
			k = min(k, o.parallel)
		}
		parallel(len(lat), k, func(i int) {
			if expired() {
				return
			}
			rs[len(all)+i], ran[len(all)+i] = r.run(ctx, lat[i]), true
			progress()
		})
		for i := range rs {
			if ran[i] {
				results = append(results, rs[i])
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, c := range conds {
		var rs []result
		for _, res := range results {
			if res.Cond == c.Name {
				rs = append(rs, res)
			}
		}
		g := o.goals
		if c.Turn != "" {
			if g, err = goalsFor(c.Turn); err != nil {
				return nil, err
			}
		}
		rep.Rows = append(rep.Rows, summarize(c, rs, g))
	}
	rep.Results = results
	rep.Seconds = time.Since(began).Seconds()
	return rep, nil
}

// closed counts the trials the server closed; closedNoReason those of
// them that carried no reason.
func (r *report) closed() (n int) {
	for _, res := range r.Results {
		if res.Closed != "" {
			n++
		}
	}
	return n
}

func (r *report) closedNoReason() (n int) {
	for _, res := range r.Results {
		if res.ClosedNoReason {
			n++
		}
	}
	return n
}

// parallel calls f(0..n-1) on at most k goroutines.
func parallel(n, k int, f func(int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(n, k) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
