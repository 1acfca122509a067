package agent

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/dsp"
)

// The barge-in scorecard (issue 31, items 2 and 3): a session speaks two
// espeak-ng sentences while the caller's microphone hears the agent's
// echo (-20 dB, 40-120 ms late, through a short room response, over line
// noise) and, per condition, a backchannel, a cough or a door, steady
// babble or pink noise, or a real interruption in quiet or in noise. Frame
// by frame and faster than real time, through the engine's whole input
// path and the pacer's reads, it counts per condition:
//   - stops: barge-ins decided (the detector's SpeechStarted with
//     Interrupt, after which only the transcript can bring the agent
//     back); on anything but an interruption they are false stops;
//   - pauses, and pauses that resumed with every sample of the agent's
//     answer played once, in order (no lost words, no restart);
//   - missed interruptions: no barge-in decided by 1 s after the caller
//     stopped;
//   - pause latency: from the caller's onset (the first 20 ms within 30 dB
//     of their loudest) to the end of the fade to silence.
//
//	go test -count=1 -run TestBargeInScorecard -v ./media/agent/ -barge.trials 40
//
// runs 40 trials per condition on the realtime, phone and WebRTC rates;
// without the flag (make test) it runs a few trials of the echo-free
// cases that must hold: backchannels and bursts do not stop the agent and
// resume it whole, interruptions in quiet are heard and paused fast.

var bargeAll = flag.Bool("barge.all", false, "the short run of TestBargeInScorecard covers every condition")

var bargeTrials = flag.Int("barge.trials", 0, "trials per condition of TestBargeInScorecard (0: the short run)")

// speechRMS is the caller's speech level (active frames), about -26 dBFS;
// noise levels are set against it.
const speechRMS = 1640.0

var backchannels = []string{"mm-hmm", "okay", "uh-huh", "yeah", "right", "sure", "yes", "I see"}

// bargeCondition is a row of the scorecard.
type bargeCondition struct {
	name      string
	caller    string  // "", "backchannel", "cough", "door", "interrupt"
	noise     string  // "", "babble", "pink"
	snrDB     float64 // the steady noise's level under speechRMS
	interrupt bool
}

var bargeConditions = []bargeCondition{
	{name: "backchannel", caller: "backchannel"},
	{name: "cough", caller: "cough"},
	{name: "door", caller: "door"},
	{name: "babble 20 dB", noise: "babble", snrDB: 20},
	{name: "babble 10 dB", noise: "babble", snrDB: 10},
	{name: "pink 20 dB", noise: "pink", snrDB: 20},
	{name: "pink 10 dB", noise: "pink", snrDB: 10},
	{name: "interruption, quiet", caller: "interrupt", interrupt: true},
	{name: "interruption, babble 10 dB", caller: "interrupt", noise: "babble", snrDB: 10, interrupt: true},
	{name: "interruption, pink 10 dB", caller: "interrupt", noise: "pink", snrDB: 10, interrupt: true},
}

// normalize scales pcm so that its frames within 30 dB of the loudest
// have rms level.
func normalize(pcm []int16, frame int, level float64) []int16 {
	first, last := activeSpan(pcm, frame)
	var e float64
	var n int
	for _, v := range pcm[first*frame : last*frame] {
		e += float64(v) * float64(v)
		n++
	}
	g := level / math.Sqrt(e/float64(max(1, n)))
	out := make([]int16, len(pcm))
	for i, v := range pcm {
		out[i] = int16(max(-32768, min(32767, math.Round(float64(v)*g))))
	}
	return out
}

// scaleTo scales x to rms level over its whole length.
func scaleTo(x []float64, level float64) {
	var e float64
	for _, v := range x {
		e += v * v
	}
	g := level / math.Sqrt(e/float64(max(1, len(x))))
	for i := range x {
		x[i] *= g
	}
}

// pinkNoise returns n samples of pink noise (Paul Kellet's filter over
// white noise) at rms level.
func pinkNoise(rnd *rand.Rand, n int, level float64) []float64 {
	var b0, b1, b2, b3, b4, b5, b6 float64
	x := make([]float64, n)
	for i := range x {
		w := rnd.NormFloat64()
		b0 = 0.99886*b0 + w*0.0555179
		b1 = 0.99332*b1 + w*0.0750759
		b2 = 0.96900*b2 + w*0.1538520
		b3 = 0.86650*b3 + w*0.3104856
		b4 = 0.55000*b4 + w*0.5329522
		b5 = -0.7616*b5 - w*0.0168980
		x[i] = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w*0.5362
		b6 = w * 0.115926
	}
	scaleTo(x, level)
	return x
}

// babble returns n samples of six espeak-ng talkers at once, each
// sentence looping from its own offset, at rms level.
func babble(t testing.TB, rnd *rand.Rand, n, rate int, level float64) []float64 {
	x := make([]float64, n)
	texts := append(slices.Clone(agentSentences), callerSentences...)
	voices := append(slices.Clone(agentVoices), callerVoices...)
	for k := range 6 {
		v := voices[(k*3+rnd.IntN(len(voices)))%len(voices)]
		pcm := normalize(echoCorpus.get(t, texts[rnd.IntN(len(texts))], v, rate), rate/50, 1000)
		off := rnd.IntN(len(pcm))
		for i := range x {
			x[i] += float64(pcm[(off+i)%len(pcm)])
		}
	}
	scaleTo(x, level)
	return x
}

// onePoleLP low-passes x in place (cutoff in Hz).
func onePoleLP(x []float64, cutoff float64, rate int) {
	a := 1 - math.Exp(-2*math.Pi*cutoff/float64(rate))
	var y float64
	for i, v := range x {
		y += a * (v - y)
		x[i] = y
	}
}

// cough returns a cough-like burst: one or two 150-300 ms bursts of
// band-limited noise, fast attack and exponential decay, as loud as
// speech up to 6 dB louder.
func cough(rnd *rand.Rand, rate int) []int16 {
	var out []float64
	for range 1 + rnd.IntN(2) {
		n := rate * (150 + rnd.IntN(150)) / 1000
		x := make([]float64, n)
		for i := range x {
			x[i] = rnd.NormFloat64()
		}
		onePoleLP(x, 2500, rate)
		lo := slices.Clone(x)
		onePoleLP(lo, 300, rate)
		tau := float64(rate) * (0.04 + 0.04*rnd.Float64())
		for i := range x {
			env := math.Min(1, float64(i)/(0.01*float64(rate))) * math.Exp(-float64(i)/tau)
			x[i] = (x[i] - lo[i]) * env
		}
		out = append(out, x...)
		out = append(out, make([]float64, rate*(80+rnd.IntN(120))/1000)...)
	}
	return burst(out, speechRMS*math.Pow(10, rnd.Float64()*6/20))
}

// door returns a door-like slam or knocks: two or three impulses, each a
// click and low resonances (80-250 Hz) decaying in 30-80 ms, 10-20 dB
// louder than speech at their peak.
func door(rnd *rand.Rand, rate int) []int16 {
	var out []float64
	for range 2 + rnd.IntN(2) {
		n := rate / 5
		x := make([]float64, n)
		f1, f2 := 80+rnd.Float64()*60, 150+rnd.Float64()*100
		tau := float64(rate) * (0.03 + 0.05*rnd.Float64())
		for i := range x {
			tt := float64(i) / float64(rate)
			env := math.Exp(-float64(i) / tau)
			x[i] = env * (math.Sin(2*math.Pi*f1*tt) + 0.6*math.Sin(2*math.Pi*f2*tt))
			if i < rate/500 {
				x[i] += rnd.NormFloat64() * 2
			}
		}
		out = append(out, x...)
		out = append(out, make([]float64, rate*(60+rnd.IntN(200))/1000)...)
	}
	return burst(out, speechRMS*math.Pow(10, (10+rnd.Float64()*10)/20)/3)
}

// burst scales x so that its first 100 ms has rms level, as int16.
func burst(x []float64, level float64) []int16 {
	var e float64
	n := min(len(x), 1600)
	for _, v := range x[:n] {
		e += v * v
	}
	g := level / math.Sqrt(e/float64(n))
	out := make([]int16, len(x))
	for i, v := range x {
		out[i] = int16(max(-32768, min(32767, math.Round(v*g))))
	}
	return out
}

// bargeTrial is one call of the scorecard.
type bargeTrial struct {
	ch     echoChannel
	agent  []int16       // at ch.out
	caller []int16       // at ch.in: speech or a burst, nil: none
	at     time.Duration // when caller starts, from the agent's first frame
	noise  []float64     // steady noise at ch.in from the first frame, nil: none
	echoDB float64       // the echo's level (-100: none)
	delay  time.Duration
	seed   uint64
}

type bargeOutcome struct {
	stop    bool          // a barge-in was decided
	paused  bool          // the agent's audio paused at least once
	latency time.Duration // caller's onset to the first fade's end
	timed   bool          // latency is set
	pauses  int           // fades to silence
	whole   bool          // the whole answer played once, in order
	events  []Event
}

func runBargeTrial(t testing.TB, tr bargeTrial) bargeOutcome {
	t.Helper()
	k := newSink()
	cfg := Config{OutputRate: tr.ch.out, InputRate: tr.ch.in,
		TurnDetection: &TurnDetection{InterruptResponse: true},
		DSP:           dsp.Config{EchoCancellation: tr.ch.aec, EchoDelay: tr.ch.hint}}
	s, err := New(cfg, nil, Deps{LLM: &fakeLLM{}, STT: &fakeSTT{}, TTS: &fakeTTS{pcm: tr.agent}}, k)
	require.NoError(t, err)
	defer s.Close()
	var rs *resample.Resampler
	if tr.ch.out != tr.ch.in {
		rs, err = resample.New(tr.ch.out, tr.ch.in, resample.QualityHigh)
		require.NoError(t, err)
		defer rs.Close()
	}
	m := &sim{s: s, out: make([]int16, media.SamplesPerFrame(tr.ch.out))}
	fin := media.SamplesPerFrame(tr.ch.in)
	rnd := rand.New(rand.NewPCG(tr.seed, 32))
	near := make([]int16, fin)
	// The call's first second, before the agent speaks: line noise and the
	// steady noise, as a call has while its greeting is being made.
	lead := 50
	for f := range lead {
		s.ReadFrame(m.out)
		for j := range near {
			x := rnd.NormFloat64() * 30
			if tr.noise != nil {
				x += tr.noise[(f*fin+j)%len(tr.noise)]
			}
			near[j] = int16(max(-32768, min(32767, math.Round(x))))
		}
		require.NoError(t, s.WriteFrame(near))
	}
	require.NoError(t, s.Say("", "x"))
	deadline := time.Now().Add(5 * time.Second)
	for s.play.Load() == nil {
		require.True(t, time.Now().Before(deadline), "no playout")
		time.Sleep(100 * time.Microsecond)
	}
	gain := math.Pow(10, tr.echoDB/20)
	d := int(tr.delay.Seconds() * float64(tr.ch.in))
	ms := tr.ch.in / 1000
	var played []float64
	var heard []int16 // the answer's samples as they left, faded frames out
	farIn := make([]int16, fin)
	callerAt := int(tr.at.Seconds() * float64(tr.ch.in))
	onset, end := -1, -1
	if tr.caller != nil {
		on, off := activeSpan(tr.caller, fin)
		onset, end = callerAt/fin+on, callerAt/fin+off
	}
	frames := (len(tr.agent)*tr.ch.in/tr.ch.out)/fin + 1000
	out := bargeOutcome{}
	pl := s.play.Load()
	fades := 0
	for f := 0; f < frames; f++ {
		m.ready()
		before := pl.Played()
		p := s.ReadFrame(m.out)
		switch {
		case p == nil:
			clear(m.out)
		case pl.Played() > before:
			heard = append(heard, m.out...)
		default:
			// A frame that consumed nothing: the fade to silence.
			out.paused = true
			fades++
			if onset >= 0 && f >= onset && !out.timed {
				out.timed = true
				out.latency = time.Duration(f-onset)*media.FrameDuration + fadeMS*time.Millisecond
			}
		}
		if f == onset && pl.paused() {
			out.timed = true // already paused (by a noise) when the caller began
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
			if gain > 0 {
				for tap, g := range room {
					if i := at - d - tap*ms; i >= 0 && i < len(played) && g != 0 {
						x += played[i] * g * gain
					}
				}
			}
			if c := at - callerAt; tr.caller != nil && c >= 0 && c < len(tr.caller) {
				x += float64(tr.caller[c])
			}
			if tr.noise != nil {
				x += tr.noise[(at+lead*fin)%len(tr.noise)]
			}
			near[j] = int16(max(-32768, min(32767, math.Round(x))))
		}
		was := s.in.det.Speaking()
		require.NoError(t, s.WriteFrame(near))
		if !was && s.in.det.Speaking() {
			out.stop = true
			break
		}
		if pl.state.Load() == playFinished && (end < 0 || f > end+50) {
			break
		}
	}
	if !out.stop {
		want := tr.agent
		if tail := len(want) % len(m.out); tail != 0 {
			want = append(slices.Clone(want), make([]int16, len(m.out)-tail)...)
		}
		out.whole = sameAnswer(heard, want, fades*tr.ch.out*fadeMS/1000)
	}
	out.events = k.all()
	out.pauses = fades
	return out
}

// sameAnswer reports whether heard is want played once, in order: equal
// but for at most faded samples brought down towards zero (the fades
// back in after each pause).
func sameAnswer(heard, want []int16, faded int) bool {
	if len(heard) != len(want) {
		return false
	}
	for i, h := range heard {
		w := want[i]
		if h == w {
			continue
		}
		if faded--; faded < 0 || (h > 0) != (w > 0) && h != 0 || abs(int(h)) > abs(int(w)) {
			return false
		}
	}
	return true
}

type bargeScore struct {
	trials, stops, paused, resumedWhole int
	pausedOnly                          int // paused and not stopped
	pauses                              int // in all trials
	latencies                           []time.Duration
}

func (sc bargeScore) p(q float64) time.Duration {
	if len(sc.latencies) == 0 {
		return 0
	}
	l := slices.Clone(sc.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, int(q*float64(len(l))))]
}

// bargeCaller is trial i's caller sound for c at rate.
func bargeCaller(t testing.TB, c bargeCondition, i int, rnd *rand.Rand, rate int) []int16 {
	switch c.caller {
	case "backchannel":
		v := callerVoices[i%len(callerVoices)]
		return normalize(echoCorpus.get(t, backchannels[i%len(backchannels)], v, rate), rate/50, speechRMS)
	case "cough":
		return cough(rnd, rate)
	case "door":
		return door(rnd, rate)
	case "interrupt":
		v := callerVoices[i%len(callerVoices)]
		return normalize(echoCorpus.get(t, callerSentences[(i/len(callerVoices)+i)%len(callerSentences)], v, rate), rate/50, speechRMS)
	}
	return nil
}

func scoreBarge(t *testing.T, ch echoChannel, c bargeCondition, n int, echoDB float64) bargeScore {
	var sc bargeScore
	for i := range n {
		rnd := rand.New(rand.NewPCG(uint64(i), 77))
		tr := bargeTrial{ch: ch, agent: agentTurn(t, i, ch.out), echoDB: echoDB,
			delay: 40*time.Millisecond + time.Duration(i%9)*10*time.Millisecond, seed: uint64(i)}
		tr.caller = bargeCaller(t, c, i, rnd, ch.in)
		tr.at = 1500*time.Millisecond + time.Duration(i%5)*400*time.Millisecond
		switch c.noise {
		case "babble":
			tr.noise = babble(t, rnd, 10*ch.in, ch.in, speechRMS*math.Pow(10, -c.snrDB/20))
		case "pink":
			tr.noise = pinkNoise(rnd, 10*ch.in, speechRMS*math.Pow(10, -c.snrDB/20))
		}
		o := runBargeTrial(t, tr)
		sc.trials++
		if o.stop {
			sc.stops++
		}
		sc.pauses += o.pauses
		if o.paused {
			sc.paused++
			if !o.stop {
				sc.pausedOnly++
				if o.whole {
					sc.resumedWhole++
				}
			}
			if c.interrupt && o.timed {
				sc.latencies = append(sc.latencies, o.latency)
			}
		}
	}
	return sc
}

// TestBargeInScorecard prints the scorecard and asserts the goals: false
// stops under 2% (backchannels, bursts, steady noise), every pause that
// was no stop resumed whole, missed interruptions under 2% in quiet and
// 5% in noise, pauses within 150 ms p50 and 250 ms p99. The short run
// (make test) covers backchannels, bursts and interruptions in quiet on
// the realtime rates.
func TestBargeInScorecard(t *testing.T) {
	n := *bargeTrials
	conds := bargeConditions
	channels := echoChannels
	if n == 0 {
		n, channels = 6, echoChannels[:1]
		conds = []bargeCondition{bargeConditions[0], bargeConditions[1], bargeConditions[2], bargeConditions[7]}
		if *bargeAll {
			conds = bargeConditions
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| channel | condition | stops | trials paused | paused, not stopped, resumed whole | missed | pause latency p50 / p99 |\n|---|---|---|---|---|---|---|\n")
	var failed []string
	for _, ch := range channels {
		for _, c := range conds {
			sc := scoreBarge(t, ch, c, n, -20)
			missed := "-"
			if c.interrupt {
				missed = fmt.Sprintf("%d / %d", sc.trials-sc.stops, sc.trials)
			}
			lat := "-"
			if len(sc.latencies) > 0 {
				lat = fmt.Sprintf("%d / %d ms", sc.p(0.5).Milliseconds(), sc.p(0.99).Milliseconds())
			}
			stops := fmt.Sprintf("%d / %d", sc.stops, sc.trials)
			if c.interrupt {
				stops = "-"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d / %d | %d / %d | %s | %s |\n", ch.name, c.name, stops, sc.paused, sc.trials,
				sc.resumedWhole, sc.pausedOnly, missed, lat)
			switch {
			case !c.interrupt && float64(sc.stops) >= 0.02*float64(sc.trials):
				failed = append(failed, fmt.Sprintf("%s %s: %d false stops in %d", ch.name, c.name, sc.stops, sc.trials))
			case c.interrupt && c.noise == "" && float64(sc.trials-sc.stops) >= 0.02*float64(sc.trials),
				c.interrupt && float64(sc.trials-sc.stops) >= 0.05*float64(sc.trials):
				failed = append(failed, fmt.Sprintf("%s %s: %d missed in %d", ch.name, c.name, sc.trials-sc.stops, sc.trials))
			}
			if sc.resumedWhole < sc.pausedOnly {
				failed = append(failed, fmt.Sprintf("%s %s: %d of %d pauses resumed with audio lost or repeated", ch.name, c.name,
					sc.pausedOnly-sc.resumedWhole, sc.pausedOnly))
			}
			if c.interrupt && (sc.p(0.5) > 150*time.Millisecond || sc.p(0.99) > 250*time.Millisecond) {
				failed = append(failed, fmt.Sprintf("%s %s: pause latency p50 %v p99 %v", ch.name, c.name, sc.p(0.5), sc.p(0.99)))
			}
		}
	}
	t.Log(b.String())
	require.Empty(t, failed)
}

// BenchmarkBargeInStage is the pause rule's own cost per 20 ms caller
// frame at 16 kHz with the agent talking: the noise level, the echo
// prediction at the learnt gain, and the rule (BenchmarkEchoGate is the
// gate's, BenchmarkInputFrame the whole input path with both).
func BenchmarkBargeInStage(b *testing.B) {
	far, near := echoFrames(b, 500)
	s, err := New(Config{OutputRate: media.Rate16k, TurnDetection: serverVAD(), DSP: dspAEC()}, nil,
		Deps{LLM: &fakeLLM{}, STT: &fakeSTT{}, TTS: &fakeTTS{}}, newSink())
	require.NoError(b, err)
	defer s.Close()
	s.speaking.Store(true)
	in := &s.in
	for i := range 200 {
		in.echo.Listen(far[i], near[i])
		in.echo.Explained(near[i], 0)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		overNoise, overAll := in.bi.loud(near[i%500], in.echo.Expected(len(near[i%500])))
		in.barge(0.7, overNoise, overAll)
		in.n++
		i++
	}
}

// A phone call's first frames are digital silence (no packet yet, or
// G.711's idle pattern): the noise level must start from the first frame
// with signal, not rise from silence at levelUp per frame while the noise
// stands out of it as if it were the caller.
func TestNoiseLevelSkipsEmptyFrames(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var b bargeIn
	frame := make([]int16, 160)
	for i := range 10 {
		if on, all := b.loud(frame, 0); (on != 0 || all != 0) && i == 9 {
			t.Errorf("digital silence stands %.1f / %.1f dB over a noise not heard yet", on, all)
		}
	}
	if b.noise() != 0 {
		t.Errorf("noise %v before any frame with signal", b.noise())
	}
	x := pinkNoise(rnd, 160*100, 0.03*32768) // about -30 dBFS
	var over int
	for i := range 100 {
		for j := range frame {
			frame[j] = int16(x[i*160+j])
		}
		if on, _ := b.loud(frame, 0); i >= 5 && on >= decideMargin {
			over++
		}
	}
	if over > 2 {
		t.Errorf("%d of 95 frames of steady noise stood %d dB over the learnt noise", over, decideMargin)
	}
	want := 20 * math.Log10(0.03*32768)
	if got := b.level; math.Abs(got-want) > 4 {
		t.Errorf("noise level %.1f dB after 2 s of noise at %.1f dB", got, want)
	}
	// Silence after the noise (a client's silence between turns) lowers
	// the level as a quieter frame does, never under emptyDB.
	clear(frame)
	l := b.level
	for range 20 {
		b.loud(frame, 0)
	}
	if want := l - 20*levelDown; math.Abs(b.level-want) > 1e-9 {
		t.Errorf("20 empty frames moved the noise level from %.1f to %.1f dB, want %.1f", l, b.level, want)
	}
	for range 1000 {
		b.loud(frame, 0)
	}
	if b.level != emptyDB {
		t.Errorf("noise level %.1f dB after 20 s of digital silence, want %d", b.level, emptyDB)
	}
}

// An agent that speaks first leaves no echo-free frame to learn the noise
// from: the echo gate then subtracts the all-frames level, not nothing.
func TestGateNoiseWithoutEchoFreeFrames(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	var b bargeIn
	frame := make([]int16, 160)
	x := pinkNoise(rnd, 160*50, 0.03*32768)
	for i := range 50 {
		for j := range frame {
			frame[j] = int16(x[i*160+j])
		}
		b.loud(frame, 1e6) // the agent talking: an echo is predicted
	}
	if b.cleanStarted {
		t.Fatal("a frame with echo predicted taught the echo-free level")
	}
	got := 10 * math.Log10(float64(b.noise())+1)
	if want := b.level; math.Abs(got-want) > 0.01 {
		t.Errorf("gate noise %.1f dB, want the all-frames level %.1f dB", got, want)
	}
}

// agentTalking returns the input side of a session whose agent is
// playing a second of audio, and that playout.
func agentTalking(t *testing.T) (*input, *Playout) {
	s, err := New(Config{OutputRate: media.Rate16k, TurnDetection: serverVAD(), DSP: dspAEC()}, nil,
		Deps{LLM: &fakeLLM{}, STT: &fakeSTT{}, TTS: &fakeTTS{}}, newSink())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	p := newPlayout(media.Rate16k)
	require.NoError(t, p.write(context.Background(), make([]int16, media.Rate16k)))
	s.play.Store(p)
	s.speaking.Store(true)
	return &s.in, p
}

// Once the agent is paused, the caller's voice holds the pause if it
// stands out of the noise, whatever echo the playout still predicts for
// the frames after the fade: under the echo's prediction the pause
// resumed in the middle of an interruption in pink noise (SIP scorecard:
// the agent played on for a few hundred milliseconds, paused again, and
// the barge-in came late or not at all).
func TestPauseHeldByVoiceOverNoise(t *testing.T) {
	in, p := agentTalking(t)
	step := func(prob float32, overNoise, overAll float64) {
		in.barge(prob, overNoise, overAll)
		in.n++
	}
	for range pauseOnset {
		step(0.9, 15, 15) // the caller's onset, over the agent
	}
	require.True(t, p.paused(), "the caller's onset did not pause the agent")
	for i := range 2 * resumeQuiet {
		// Words 8 dB over the noise, 2 dB over noise and predicted echo.
		step(0.9, 8, 2)
		require.True(t, p.paused(), "the pause resumed %d frames into the caller's words", i+1)
	}
	for range resumeQuiet {
		step(0.1, 0, 0) // the caller stopped; no barge-in was decided
	}
	require.False(t, p.paused(), "the pause did not resume after the caller stopped")
}

// Noise that paused the agent resumes it though a fifth of its frames
// stand pauseMargin over the noise: only frames that count towards the
// barge-in decision hold the pause (before, 4-talker babble held it to
// maxHold, 1.5 s of silence, in 12 of 40 phone scorecard trials).
func TestPauseNotHeldByBabble(t *testing.T) {
	in, p := agentTalking(t)
	for range pauseOnset {
		in.barge(0.9, pauseMargin+1, pauseMargin+1) // babble's loud moment
		in.n++
	}
	require.True(t, p.paused(), "the onset did not pause the agent")
	held := 0
	for i := range maxHold {
		// Babble: heard as speech throughout, every other frame pauseMargin
		// over the noise, one in 20 decideMargin over it.
		over := 0.0
		switch {
		case i%20 == 0:
			over = decideMargin
		case i%2 == 0:
			over = pauseMargin
		}
		in.barge(0.9, over, over)
		in.n++
		if !p.paused() {
			break
		}
		held++
	}
	require.False(t, p.paused(), "babble held the pause for %d frames", held)
	require.LessOrEqual(t, held, resumeWindow, "babble held the pause for %d frames", held)
}

// A caller fastMargin over the noise and the echo pauses the agent after
// fastOnset frames; a quieter onset still needs pauseOnset.
func TestLoudOnsetPausesSooner(t *testing.T) {
	for _, c := range []struct {
		over   float64
		frames int
	}{{fastMargin, fastOnset}, {fastMargin - 1, pauseOnset}, {pauseMargin, pauseOnset}} {
		in, p := agentTalking(t)
		frames := 0
		for !p.paused() && frames < 10 {
			in.barge(0.9, c.over, c.over)
			in.n++
			frames++
		}
		require.Equal(t, c.frames, frames, "frames %.0f dB over the noise to pause", c.over)
	}
}

// A noise level started on a frame far from the noise (a quiet moment, or
// a tone or word louder than it) reaches the noise within the first
// second (noiseLearnt frames), not at 2.5 dB per second.
func TestNoiseLevelLearntInFirstSecond(t *testing.T) {
	for _, g0 := range []float64{0.15, 6} { // 16 dB under, 16 dB over
		rnd := rand.New(rand.NewPCG(5, 6))
		var b bargeIn
		frame := make([]int16, 160)
		x := pinkNoise(rnd, 160*noiseLearnt, 0.03*32768) // about -30 dBFS
		for i := range noiseLearnt {
			g := 1.0
			if i == 0 {
				g = g0
			}
			for j := range frame {
				frame[j] = int16(max(-32768, min(32767, g*x[i*160+j])))
			}
			b.loud(frame, 0)
		}
		want := 20 * math.Log10(0.03*32768)
		if got := b.level; math.Abs(got-want) > 4 {
			t.Errorf("noise level %.1f dB after a second of noise at %.1f dB, started at a frame %.0fx as loud", got, want, g0)
		}
	}
}
