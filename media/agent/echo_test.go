package agent

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/ai/tts/espeak"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/dsp"
)

// The self-echo harness (issue 31, item 1): a session speaks espeak-ng
// sentences and its own audio comes back into the caller's microphone at
// a set level and delay, through a short room response and over line
// noise, frame by frame and faster than real time, through the engine's
// whole input path (reference, echo canceller, VAD, gate, turn
// detection). It counts barge-ins by echo, and, with a caller who
// interrupts, whether and how fast the barge-in is decided. Every trial
// is a new session, as every call is: the echo path is learned from
// nothing each time.
//
//	go test -count=1 -run TestEchoScorecard -v ./media/agent/ -echo.trials 40
//
// prints before/after figures (before: the engine with the gate and the
// delay estimate taken out, the canceller on its fixed hint).

var echoTrials = flag.Int("echo.trials", 0, "trials per condition of TestEchoScorecard (0: a short run)")

// echoChannel is a channel's rates: the realtime WebSocket plays 24 kHz
// and listens at 16 kHz, a phone call 8 kHz both ways, WebRTC 16 kHz.
type echoChannel struct {
	name    string
	out, in int
	hint    time.Duration // the canceller's configured delay
	aec     bool          // the engine's echo canceller runs
}

var echoChannels = []echoChannel{
	{"realtime", media.Rate24k, media.Rate16k, 120 * time.Millisecond, true},
	{"phone", media.Rate8k, media.Rate8k, 0, true},
	// A browser cancels its own echo, so the engine's canceller is off
	// (call.ChannelBrowser): the echo here is what the browser's left.
	{"webrtc", media.Rate16k, media.Rate16k, 0, false},
}

var agentSentences = []string{
	"Thanks for calling. Your order shipped this morning and should arrive on Thursday between nine and noon.",
	"I can book that for you. We have a table for four at seven thirty, or a quieter one by the window at eight.",
	"Your balance is forty two dollars and sixteen cents, and the next payment is due on the fifth of next month.",
	"Let me check the schedule. The next train leaves at ten past six from platform three and arrives at eight.",
	"Sure, I have changed the delivery address. Is there anything else you would like me to update today?",
}

var agentVoices = []string{"en-us", "en-gb", "en-us+f3", "en-gb+m3", "en-us+m7"}

var callerSentences = []string{
	"Wait, sorry, can we make that Saturday instead?",
	"Hold on, that is not what I asked for.",
	"No no, I meant the other account please.",
	"Excuse me, could you repeat the last part?",
}

var callerVoices = []string{"en-gb+f3", "en-us+f2", "en-gb-scotland", "en-us+m2"}

// corpus synthesizes each text once per voice and rate with espeak-ng.
type corpus struct {
	mu    sync.Mutex
	synth *espeak.Synth
	pcm   map[string][]int16
}

var echoCorpus corpus

func (c *corpus) get(t testing.TB, text, voice string, rate int) []int16 {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.synth == nil {
		s, err := espeak.New(espeak.Config{})
		require.NoError(t, err)
		c.synth, c.pcm = s, map[string][]int16{}
	}
	key := fmt.Sprint(text, voice, rate)
	if p, ok := c.pcm[key]; ok {
		return p
	}
	a, err := c.synth.Synthesize(context.Background(), tts.Request{Text: text, Voice: voice, SampleRate: rate})
	require.NoError(t, err)
	pcm, err := tts.ReadAll(a)
	require.NoError(t, err)
	c.pcm[key] = pcm
	return pcm
}

// echoTrial is one call of the harness.
type echoTrial struct {
	ch     echoChannel
	gainDB float64       // the echo's level relative to the playout
	delay  time.Duration // the echo path's delay after the pacer's frame
	agent  []int16       // what the agent says, at ch.out
	caller []int16       // a caller's interruption at ch.in, nil: none
	at     time.Duration // when the caller starts, from the agent's first frame
	before bool          // the engine before the gate: fixed hint, no gate
	seed   uint64
}

type echoOutcome struct {
	bargeIn  bool          // a barge-in was decided
	byEcho   bool          // ... before the caller said anything
	latency  time.Duration // caller's onset to the decision
	estimate time.Duration // the delay the engine estimated (-1: none)
	// pausedByEcho counts the agent's pauses before the caller said
	// anything.
	pausedByEcho int
}

// room is the echo's impulse response relative to its direct path, at
// 1 ms spacing: a handset or speakerphone's short reflections.
var room = []float64{1, 0, 0.3, 0, 0, 0.15, 0, 0, 0, 0.08}

func runEchoTrial(t testing.TB, tr echoTrial) echoOutcome {
	t.Helper()
	k := newSink()
	cfg := Config{OutputRate: tr.ch.out, InputRate: tr.ch.in,
		TurnDetection: &TurnDetection{InterruptResponse: true},
		DSP:           dsp.Config{EchoCancellation: tr.ch.aec, EchoDelay: tr.ch.hint}}
	s, err := New(cfg, nil, Deps{LLM: &fakeLLM{}, STT: &fakeSTT{}, TTS: &fakeTTS{pcm: tr.agent}}, k)
	require.NoError(t, err)
	defer s.Close()
	if tr.before {
		s.in.echo, s.in.bi.off = nil, true
	}
	var rs *resample.Resampler
	if tr.ch.out != tr.ch.in {
		rs, err = resample.New(tr.ch.out, tr.ch.in, resample.QualityHigh)
		require.NoError(t, err)
		defer rs.Close()
	}
	require.NoError(t, s.Say("", "x"))
	deadline := time.Now().Add(5 * time.Second)
	for s.play.Load() == nil {
		require.True(t, time.Now().Before(deadline), "no playout")
		time.Sleep(100 * time.Microsecond)
	}
	m := &sim{t: nil, s: s, out: make([]int16, media.SamplesPerFrame(tr.ch.out))}
	fin := media.SamplesPerFrame(tr.ch.in)
	gain := math.Pow(10, tr.gainDB/20)
	d := int(tr.delay.Seconds() * float64(tr.ch.in))
	ms := tr.ch.in / 1000
	rnd := rand.New(rand.NewPCG(tr.seed, 31))
	var played []float64 // the playout at ch.in, from the first frame
	farIn := make([]int16, fin)
	near := make([]int16, fin)
	callerAt := int(tr.at.Seconds() * float64(tr.ch.in))
	onset := -1
	if tr.caller != nil {
		on, _ := activeSpan(tr.caller, fin)
		onset = callerAt/fin + on
	}
	frames := (len(tr.agent)*tr.ch.in/tr.ch.out)/fin + 20
	if tr.caller != nil {
		frames = max(frames, (callerAt+len(tr.caller))/fin+20)
	}
	out := echoOutcome{estimate: -1}
	for f := range frames {
		m.ready()
		p := s.ReadFrame(m.out)
		if p == nil {
			clear(m.out)
		}
		n := copy(farIn, m.out)
		if rs != nil {
			n, err = rs.ProcessTo(farIn, m.out)
			require.NoError(t, err)
		}
		for _, v := range farIn[:n] {
			played = append(played, float64(v))
		}
		for j := range near {
			at := f*fin + j
			x := rnd.NormFloat64() * 30
			for tap, g := range room {
				if i := at - d - tap*ms; i >= 0 && i < len(played) && g != 0 {
					x += played[i] * g * gain
				}
			}
			if c := at - callerAt; tr.caller != nil && c >= 0 && c < len(tr.caller) {
				x += float64(tr.caller[c])
			}
			near[j] = int16(max(-32768, min(32767, math.Round(x))))
		}
		was, held := s.in.det.Speaking(), s.in.bi.held != nil
		require.NoError(t, s.WriteFrame(near))
		if !held && s.in.bi.held != nil && (onset < 0 || f < onset) {
			out.pausedByEcho++
		}
		// The agent is playing, or paused at the caller's onset.
		if !was && s.in.det.Speaking() && s.play.Load() != nil {
			out.bargeIn = true
			out.byEcho = onset < 0 || f < onset
			out.latency = time.Duration(f+1-onset) * media.FrameDuration
			break
		}
	}
	if s.in.echo != nil {
		out.estimate = s.in.echo.Delay()
	}
	return out
}

// activeSpan returns the first and last+1 frames of pcm within 30 dB of
// its loudest frame.
func activeSpan(pcm []int16, frame int) (int, int) {
	n := len(pcm) / frame
	e := make([]float64, n)
	var peak float64
	for f := range n {
		for _, v := range pcm[f*frame : (f+1)*frame] {
			e[f] += float64(v) * float64(v)
		}
		peak = max(peak, e[f])
	}
	first, last := -1, -1
	for f := range n {
		if e[f] > peak*1e-3 {
			if first < 0 {
				first = f
			}
			last = f
		}
	}
	return first, last + 1
}

// agentTurn is trial i's agent answer: two sentences, one voice.
func agentTurn(t testing.TB, i, rate int) []int16 {
	v := agentVoices[i%len(agentVoices)]
	a := echoCorpus.get(t, agentSentences[i%len(agentSentences)], v, rate)
	b := echoCorpus.get(t, agentSentences[(i+1)%len(agentSentences)], v, rate)
	return append(append(slices.Clip(a), make([]int16, rate/4)...), b...)
}

// echoCondition is a row of the scorecard.
type echoCondition struct {
	gainDB           float64
	minDelay, maxDel time.Duration
}

func (c echoCondition) String() string {
	if c.gainDB <= -100 {
		return "none"
	}
	return fmt.Sprintf("%.0f dB, %d-%d ms", c.gainDB, c.minDelay.Milliseconds(), c.maxDel.Milliseconds())
}

type echoScore struct {
	trials, byEcho       int
	caller, missed, echo int
	pausedByEcho         int // trials, echo only, in which the echo paused the agent
	latencies            []time.Duration
	estErr               []time.Duration
}

func (sc echoScore) p(q float64) time.Duration {
	if len(sc.latencies) == 0 {
		return 0
	}
	l := slices.Clone(sc.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, int(q*float64(len(l))))]
}

// scoreEcho runs n echo-only trials and n trials with a caller who
// interrupts, over the condition's delays.
func scoreEcho(t *testing.T, ch echoChannel, c echoCondition, n int, before bool) echoScore {
	var sc echoScore
	for i := range n {
		delay := c.minDelay + time.Duration(i)*(c.maxDel-c.minDelay)/time.Duration(max(1, n-1))
		tr := echoTrial{ch: ch, gainDB: c.gainDB, delay: delay, agent: agentTurn(t, i, ch.out), before: before, seed: uint64(i)}
		o := runEchoTrial(t, tr)
		sc.trials++
		if o.bargeIn {
			sc.byEcho++
		}
		if o.pausedByEcho > 0 {
			sc.pausedByEcho++
		}
		if o.estimate >= 0 {
			sc.estErr = append(sc.estErr, o.estimate-delay)
		}
		v := callerVoices[i%len(callerVoices)]
		tr.caller = echoCorpus.get(t, callerSentences[i%len(callerSentences)], v, ch.in)
		tr.at = 1500*time.Millisecond + time.Duration(i%5)*400*time.Millisecond
		o = runEchoTrial(t, tr)
		sc.caller++
		switch {
		case !o.bargeIn:
			sc.missed++
		case o.byEcho:
			sc.echo++
		default:
			sc.latencies = append(sc.latencies, o.latency)
		}
	}
	return sc
}

// TestEchoScorecard is the harness's scorecard: before and after in one
// run. The short run (the default) asserts the figures of the engine as
// it is: no barge-in by echo, every interruption heard.
func TestEchoScorecard(t *testing.T) {
	n := *echoTrials
	conds := []echoCondition{{-100, 40 * time.Millisecond, 40 * time.Millisecond}, {-10, 40 * time.Millisecond, 120 * time.Millisecond}, {-20, 40 * time.Millisecond, 120 * time.Millisecond}}
	channels := echoChannels[:1]
	if n == 0 {
		n = 5
	} else {
		conds = append(conds, echoCondition{-6, 0, 300 * time.Millisecond}, echoCondition{-10, 0, 300 * time.Millisecond},
			echoCondition{-20, 0, 300 * time.Millisecond})
		channels = echoChannels
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| channel | echo | engine | barge-ins by echo | pauses by echo | interruptions missed | cut by echo first | barge-in latency p50 / max | delay estimate error p50 / max |\n|---|---|---|---|---|---|---|---|---|\n")
	var failed []string
	for _, ch := range channels {
		for _, c := range conds {
			var before echoScore
			for _, old := range []bool{true, false} {
				sc := scoreEcho(t, ch, c, n, old)
				name := "after"
				if old {
					name, before = "before", sc
				}
				est := "-"
				if len(sc.estErr) > 0 {
					e := slices.Clone(sc.estErr)
					slices.SortFunc(e, func(a, b time.Duration) int { return int(a.Abs() - b.Abs()) })
					est = fmt.Sprintf("%d / %d ms (%d of %d)", e[len(e)/2].Abs().Milliseconds(), e[len(e)-1].Abs().Milliseconds(), len(e), sc.trials)
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %d / %d | %d / %d | %d / %d | %d | %d / %d ms | %s |\n", ch.name, c, name,
					sc.byEcho, sc.trials, sc.pausedByEcho, sc.trials, sc.missed, sc.caller, sc.echo, sc.p(0.5).Milliseconds(), sc.p(1).Milliseconds(), est)
				if old {
					continue
				}
				// The gate never lets the echo through, and it hears every
				// interruption the engine heard before it (where the echo
				// did not cut the agent off first).
				if sc.byEcho > 0 || sc.echo > 0 {
					failed = append(failed, fmt.Sprintf("%s %s: %d barge-ins by echo, %d before the caller", ch.name, c, sc.byEcho, sc.echo))
				}
				if sc.missed > before.missed || sc.missed > 0 {
					failed = append(failed, fmt.Sprintf("%s %s: %d interruptions missed, %d before", ch.name, c, sc.missed, before.missed))
				}
			}
		}
	}
	t.Log(b.String())
	require.Empty(t, failed)
}

// echoFrames returns n frames of a recorded voice (the reference) and of
// the microphone hearing it 100 ms later 10 dB down over noise.
func echoFrames(t testing.TB, n int) (far, near [][]int16) {
	agent := loadWAV(t, "agent16k.wav")
	rnd := rand.New(rand.NewPCG(3, 3))
	for f := range n {
		a := make([]int16, callerFrame)
		b := make([]int16, callerFrame)
		for j := range a {
			i := (f*callerFrame + j) % len(agent)
			a[j] = agent[i]
			x := rnd.NormFloat64() * 30
			if k := f*callerFrame + j - 1600; k >= 0 {
				x += float64(agent[k%len(agent)]) * 0.316
			}
			b[j] = int16(x)
		}
		far, near = append(far, a), append(near, b)
	}
	return far, near
}

func TestEchoGateAllocatesNothing(t *testing.T) {
	far, near := echoFrames(t, 200)
	e := newEchoPath(media.Rate16k)
	i := 0
	allocs := testing.AllocsPerRun(199, func() {
		e.Listen(far[i], near[i])
		e.Explained(near[i], 0)
		i++
	})
	require.Zero(t, allocs)
	require.Equal(t, 100*time.Millisecond, e.Delay())
}

// BenchmarkEchoGate is the gate's own cost per 20 ms caller frame at
// 16 kHz: delay estimation, prediction and the decision.
func BenchmarkEchoGate(b *testing.B) {
	far, near := echoFrames(b, 500)
	e := newEchoPath(media.Rate16k)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e.Listen(far[i%500], near[i%500])
		// A line-noise floor (-62 dBFS), so that the whole gate runs.
		e.Explained(near[i%500], 100)
		i++
	}
}

// BenchmarkInputFrame is the session's whole input path per caller frame
// (reference, echo canceller, VAD, turn detection, buffer) with the
// agent talking, with and without the gate: the ratio is the gate's
// share.
func BenchmarkInputFrame(b *testing.B) {
	far, near := echoFrames(b, 500)
	for _, gate := range []bool{false, true} {
		b.Run(map[bool]string{false: "before", true: "after"}[gate], func(b *testing.B) {
			s, err := New(Config{OutputRate: media.Rate16k, TurnDetection: serverVAD(), DSP: dspAEC()}, nil,
				Deps{LLM: &fakeLLM{}, STT: &fakeSTT{}, TTS: &fakeTTS{}}, newSink())
			require.NoError(b, err)
			defer s.Close()
			if !gate {
				s.in.echo = nil
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s.far.Write(far[i%500])
				if err := s.WriteFrame(near[i%500]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
