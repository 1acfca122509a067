package turn

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// step is one frame of a synthetic run.
type step struct {
	speech, agent bool
}

// pattern builds frames from runs: n frames with the given flags.
func pattern(runs ...any) []step {
	var out []step
	for i := 0; i < len(runs); i += 3 {
		n, sp, ag := runs[i].(int), runs[i+1].(bool), runs[i+2].(bool)
		for range n {
			out = append(out, step{sp, ag})
		}
	}
	return out
}

// indexed is an event with the index of the frame that produced it.
type indexed struct {
	At int64
	Event
}

func run(t *testing.T, d *Detector, steps []step) []indexed {
	t.Helper()
	var out []indexed
	for _, s := range steps {
		p := float32(0.05)
		if s.speech {
			p = 0.95
		}
		at := d.Frame()
		if ev := d.Process(p, s.agent); ev.Kind != None {
			out = append(out, indexed{at, ev})
		}
	}
	return out
}

func newDetector(t *testing.T, cfg Config) *Detector {
	t.Helper()
	d, err := New(cfg)
	require.NoError(t, err)
	return d
}

func TestSpeechStartStop(t *testing.T) {
	d := newDetector(t, Config{})
	evs := run(t, d, pattern(50, false, false, 40, true, false, 40, false, false))
	require.Equal(t, []indexed{
		// The 10th speech frame (200 ms) confirms; the start reaches back
		// 300 ms (15 frames) before the first speech frame.
		{59, Event{Kind: SpeechStarted, Start: 35, End: 60}},
		// 500 ms (25 frames) after the last speech frame (89).
		{114, Event{Kind: SpeechStopped, Start: 35, End: 90}},
	}, evs)
	require.Equal(t, int64(700), FrameMS(35))
	require.False(t, d.Speaking())
}

func TestGapsInsideTurnDoNotEndIt(t *testing.T) {
	d := newDetector(t, Config{SilenceDuration: 200 * time.Millisecond})
	evs := run(t, d, pattern(20, false, false, 20, true, false, 9, false, false, 20, true, false, 20, false, false))
	require.Len(t, evs, 2)
	require.Equal(t, SpeechStopped, evs[1].Kind)
	require.Equal(t, int64(69), evs[1].End, "one turn across the 180 ms gap")
}

func TestClickIsNotATurn(t *testing.T) {
	d := newDetector(t, Config{})
	// Clicks of 1-3 frames, a second apart; and a cough-length burst
	// of 180 ms.
	evs := run(t, d, pattern(50, false, false, 1, true, false, 50, false, false, 3, true, false,
		50, false, false, 9, true, false, 50, false, false))
	require.Empty(t, evs)
}

func TestPrefixStopsAtPreviousTurn(t *testing.T) {
	d := newDetector(t, Config{SilenceDuration: 100 * time.Millisecond})
	evs := run(t, d, pattern(20, false, false, 20, true, false, 8, false, false, 20, true, false, 10, false, false))
	require.Len(t, evs, 4)
	require.Equal(t, Event{Kind: SpeechStopped, Start: 5, End: 40}, evs[1].Event)
	// The second turn's first speech frame is 48; 15 frames back would be
	// 33, inside the first turn, so it starts where that one ended.
	require.Equal(t, SpeechStarted, evs[2].Kind)
	require.Equal(t, int64(40), evs[2].Start)
}

func TestNoPrefix(t *testing.T) {
	d := newDetector(t, Config{PrefixPadding: -1})
	evs := run(t, d, pattern(50, false, false, 20, true, false))
	require.Equal(t, int64(50), evs[0].Start)
}

func TestBargeIn(t *testing.T) {
	d := newDetector(t, Config{EchoWarmup: -1})
	evs := run(t, d, pattern(50, false, true, 60, true, true, 30, false, true))
	require.Equal(t, []indexed{
		// 700 ms (35 frames) of speech while the agent talks.
		{84, Event{Kind: SpeechStarted, Start: 35, End: 85, Interrupt: true}},
		{134, Event{Kind: SpeechStopped, Start: 35, End: 110}},
	}, evs)
}

func TestBargeInAcrossWordGaps(t *testing.T) {
	d := newDetector(t, Config{EchoWarmup: -1})
	// Words of 240 ms with 100 ms gaps: 12 speech frames out of every 17.
	var steps []step
	steps = append(steps, pattern(50, false, true)...)
	for range 4 {
		steps = append(steps, pattern(12, true, true, 5, false, true)...)
	}
	evs := run(t, d, steps)
	require.Len(t, evs, 1)
	require.True(t, evs[0].Interrupt)
	// The 35th speech frame is the 11th of the third word: 50 + 2*17 + 10.
	require.Equal(t, int64(94), evs[0].At)
}

func TestEchoWarmupRaisesTheBar(t *testing.T) {
	// Within the agent's first 2 s a barge-in needs 1040 ms (52 frames)
	// of speech; after that 700 ms.
	d := newDetector(t, Config{})
	evs := run(t, d, pattern(10, false, true, 60, true, true, 30, false, true))
	require.Equal(t, int64(10+51), evs[0].At)
	d = newDetector(t, Config{})
	evs = run(t, d, pattern(101, false, true, 60, true, true, 30, false, true))
	require.Equal(t, int64(101+34), evs[0].At)
}

func TestBackchannelDoesNotInterrupt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
		start int64
		end   int64
	}{
		{"uh-huh", pattern(50, false, true, 11, true, true, 4, false, true, 12, true, true, 40, false, true), 50, 77},
		{"okay 580 ms", pattern(50, false, true, 29, true, true, 40, false, true), 50, 79},
		{"agent stops meanwhile", pattern(50, false, true, 20, true, true, 40, false, false), 50, 70},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDetector(t, Config{})
			evs := run(t, d, tc.steps)
			require.Equal(t, []indexed{{tc.end - 1 + 25, Event{Kind: Backchannel, Start: tc.start, End: tc.end}}}, evs)
		})
	}
}

func TestAgentStopsDuringUtterance(t *testing.T) {
	// Speech that began over the agent becomes an ordinary turn the
	// moment the agent falls silent, without Interrupt.
	d := newDetector(t, Config{})
	evs := run(t, d, pattern(50, false, true, 15, true, true, 5, true, false))
	require.Len(t, evs, 1)
	require.Equal(t, Event{Kind: SpeechStarted, Start: 35, End: 66}, evs[0].Event)
}

func TestScatteredEchoNeverInterrupts(t *testing.T) {
	// Residual echo: 10% of frames over threshold at random, for a
	// minute of agent speech (the dsp echo test allows up to 10%).
	d := newDetector(t, Config{})
	r := rand.New(rand.NewPCG(1, 2))
	var steps []step
	for range 3000 {
		steps = append(steps, step{r.Float64() < 0.10, true})
	}
	for _, ev := range run(t, d, steps) {
		require.NotEqual(t, SpeechStarted, ev.Kind, "echo taken for a barge-in at frame %d", ev.At)
	}
}

func TestSemanticEagerness(t *testing.T) {
	for _, tc := range []struct {
		e    Eagerness
		stop int64 // frames of silence before speech_stopped
	}{{EagernessHigh, 20}, {EagernessMedium, 25}, {EagernessAuto, 25}, {EagernessLow, 50}} {
		t.Run(tc.e.String(), func(t *testing.T) {
			// SilenceDuration is ignored under semantic_vad.
			d := newDetector(t, Config{Mode: SemanticVAD, Eagerness: tc.e, SilenceDuration: 20 * time.Millisecond})
			evs := run(t, d, pattern(20, false, false, 20, true, false, 100, false, false))
			require.Len(t, evs, 2)
			require.Equal(t, 39+tc.stop, evs[1].At)
		})
	}
	for _, s := range []string{"", "auto", "low", "medium", "high"} {
		e, err := ParseEagerness(s)
		require.NoError(t, err)
		if s != "" {
			require.Equal(t, s, e.String())
		}
	}
	_, err := ParseEagerness("eager")
	require.ErrorIs(t, err, ErrConfig)
}

// TestSemanticHint: under semantic_vad the partial transcript's verdict
// picks the silence (medium: 450 ms complete, 200 ms said with a falling
// voice, 800 ms with a voice that holds, 1200 ms mid-phrase), a
// verdict that comes during the silence applies at once, the end of a
// turn forgets it, and server_vad ignores it.
func TestSemanticHint(t *testing.T) {
	d := newDetector(t, Config{Mode: SemanticVAD})
	run(t, d, pattern(20, false, false, 20, true, false))
	d.SetHint(HintIncomplete)
	evs := run(t, d, pattern(59, false, false))
	require.Empty(t, evs, "mid-phrase: 1200 ms")
	evs = run(t, d, pattern(2, false, false))
	require.Len(t, evs, 1)
	require.Equal(t, indexed{39 + 60, Event{Kind: SpeechStopped, Start: 5, End: 40}}, evs[0])

	// Complete: 450 ms (23 frames). The next turn starts without a hint
	// (500 ms).
	run(t, d, pattern(20, true, false))
	last := d.Frame() - 1
	d.SetHint(HintComplete)
	evs = run(t, d, pattern(25, false, false))
	require.Len(t, evs, 1)
	require.Equal(t, last+23, evs[0].At)
	run(t, d, pattern(20, true, false))
	last = d.Frame() - 1
	evs = run(t, d, pattern(30, false, false))
	require.Len(t, evs, 1)
	require.Equal(t, last+25, evs[0].At)

	// Words said with a falling voice: 200 ms (10 frames); with a voice
	// that holds: 800 ms (40 frames).
	for _, tc := range []struct {
		h    Hint
		stop int64
	}{{HintFinal, 10}, {HintHold, 40}} {
		run(t, d, pattern(20, true, false))
		last = d.Frame() - 1
		d.SetHint(tc.h)
		evs = run(t, d, pattern(45, false, false))
		require.Len(t, evs, 1)
		require.Equal(t, last+tc.stop, evs[0].At, "hint %d", tc.h)
	}

	// Words that turn complete 480 ms into the silence end the turn then.
	run(t, d, pattern(20, true, false))
	d.SetHint(HintIncomplete)
	require.Empty(t, run(t, d, pattern(24, false, false)))
	d.SetHint(HintComplete)
	evs = run(t, d, pattern(1, false, false))
	require.Len(t, evs, 1)

	sv := newDetector(t, Config{})
	run(t, sv, pattern(20, false, false, 20, true, false))
	sv.SetHint(HintIncomplete)
	evs = run(t, sv, pattern(30, false, false))
	require.Len(t, evs, 1)
	require.Equal(t, int64(39+25), evs[0].At, "server_vad: 500 ms whatever the words")
}

func TestComplete(t *testing.T) {
	for words, want := range map[string]Hint{
		"": HintUnknown, "  ": HintUnknown,
		"i want to book a": HintIncomplete, "table for two and": HintIncomplete, "i'd like it for": HintIncomplete,
		"my number is um": HintIncomplete, "call me back with the(2)": HintIncomplete, "The": HintIncomplete,
		"i want to book a table": HintComplete, "thank you": HintComplete, "hold on": HintComplete, "i think so": HintComplete,
	} {
		require.Equal(t, want, Complete(words), "%q", words)
	}
}

func TestIdleTimeout(t *testing.T) {
	d := newDetector(t, Config{IdleTimeout: time.Second})
	// The agent talks for a second, then silence for three: one timeout a
	// second after the agent stopped. Speech re-arms it.
	evs := run(t, d, pattern(50, false, true, 150, false, false, 20, true, false, 100, false, false))
	require.Len(t, evs, 4)
	require.Equal(t, indexed{99, Event{Kind: IdleTimeout, Start: 50, End: 100}}, evs[0])
	require.Equal(t, SpeechStarted, evs[1].Kind)
	require.Equal(t, SpeechStopped, evs[2].Kind)
	require.Equal(t, IdleTimeout, evs[3].Kind)
	require.Equal(t, int64(269), evs[3].At)
}

func TestReset(t *testing.T) {
	d := newDetector(t, Config{})
	run(t, d, pattern(20, false, false, 15, true, false))
	require.True(t, d.Speaking())
	d.Reset()
	require.False(t, d.Speaking())
	evs := run(t, d, pattern(10, true, false, 30, false, false))
	require.Len(t, evs, 2)
	require.Equal(t, int64(35), evs[0].Start, "the prefix does not reach before the reset")
}

func TestSetConfigKeepsPosition(t *testing.T) {
	d := newDetector(t, Config{})
	run(t, d, pattern(20, false, false, 15, true, false))
	require.NoError(t, d.SetConfig(Config{SilenceDuration: 100 * time.Millisecond}))
	evs := run(t, d, pattern(10, false, false))
	require.Equal(t, []indexed{{39, Event{Kind: SpeechStopped, Start: 5, End: 35}}}, evs)
	require.Equal(t, 100*time.Millisecond, d.Config().SilenceDuration)
	require.Error(t, d.SetConfig(Config{Threshold: 2}))
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"threshold", Config{Threshold: 1}},
		{"negative threshold", Config{Threshold: -0.1}},
		{"silence", Config{SilenceDuration: time.Millisecond}},
		{"long silence", Config{SilenceDuration: time.Minute}},
		{"prefix", Config{PrefixPadding: time.Minute}},
		{"idle", Config{IdleTimeout: -time.Second}},
		{"min speech", Config{MinSpeech: time.Second}},
		{"interrupt window", Config{InterruptSpeech: 900 * time.Millisecond, InterruptWindow: 800 * time.Millisecond}},
		{"long window", Config{InterruptWindow: 2 * time.Second}},
		{"mode", Config{Mode: 7}},
		{"eagerness", Config{Eagerness: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(tc.cfg)
			require.Nil(t, d)
			require.True(t, errors.Is(err, ErrConfig), err)
		})
	}
	d := newDetector(t, Config{})
	c := d.Config()
	require.Equal(t, float32(DefaultThreshold), c.Threshold)
	require.Equal(t, DefaultPrefixPadding, c.PrefixPadding)
	require.Equal(t, DefaultSilenceDuration, c.SilenceDuration)
	require.Equal(t, "server_vad", c.Mode.String())
	require.Equal(t, "semantic_vad", SemanticVAD.String())
}

func TestKindString(t *testing.T) {
	for k, s := range map[Kind]string{None: "none", SpeechStarted: "speech_started", SpeechStopped: "speech_stopped",
		Backchannel: "backchannel", IdleTimeout: "idle_timeout"} {
		require.Equal(t, s, k.String())
	}
}

func TestProcessZeroAlloc(t *testing.T) {
	d := newDetector(t, Config{IdleTimeout: time.Second})
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		d.Process(float32(i%37)/36, i%100 < 50)
	})
	require.Zero(t, allocs)
}

func BenchmarkProcess(b *testing.B) {
	d, err := New(Config{IdleTimeout: time.Second})
	require.NoError(b, err)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		d.Process(float32(i%37)/36, i%100 < 50)
	}
}
