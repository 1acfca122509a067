package amd_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/media/amd"
	"github.com/voiced/voiced/media/amd/amdtest"
)

const rate = 16000

// run feeds pcm to a new Detector frame by frame and returns the first
// final verdict (or the last one when none is final), with the audio
// time at which the first verdict and the final one came. machineAt is
// when Machine was first returned (0: never).
type outcome struct {
	result           amd.Result
	firstAt, finalAt time.Duration
	machineAt        time.Duration
	first            amd.Result
}

func run(t *testing.T, cfg amd.Config, pcm []int16) outcome {
	t.Helper()
	d, err := amd.New(cfg)
	require.NoError(t, err)
	n := cfg.SampleRate / 50
	if n == 0 {
		n = rate / 50
	}
	var o outcome
	for i := 0; i+n <= len(pcm); i += n {
		r, err := d.Process(pcm[i : i+n])
		require.NoError(t, err)
		at := time.Duration(i/n+1) * amd.FrameDuration
		if r != amd.Undecided && o.first == amd.Undecided {
			o.first, o.firstAt = r, at
			require.Equal(t, at, d.DecidedAfter())
		}
		if r == amd.Machine && o.machineAt == 0 {
			o.machineAt = at
		}
		o.result = r
		if r.Final() {
			o.finalAt = at
			return o
		}
	}
	return o
}

// pad is the silence before the callee's first word: the time a person
// takes to put the phone to the ear, or a machine to start its greeting.
const pad = 400 * time.Millisecond

func line(pcm ...[]int16) []int16 {
	return amdtest.AddNoise(amdtest.Concat(pcm...), -65, 3)
}

func TestHuman(t *testing.T) {
	for _, tc := range []struct{ text, voice string }{
		{"Hello?", ""}, {"Hello?", "en+f3"}, {"Yes?", ""}, {"Hello, who is this?", ""},
		{"Hi, this is Mary.", "en-us"}, {"Speaking.", "en+m3"},
	} {
		t.Run(tc.text+"/"+tc.voice, func(t *testing.T) {
			hello := amdtest.Speech(t, tc.text, tc.voice, rate)
			speechEnd := pad + time.Duration(len(hello))*time.Second/rate
			o := run(t, amd.Config{}, line(amdtest.Silence(pad, rate), hello, amdtest.Silence(5*time.Second, rate)))
			require.Equal(t, amd.Human, o.result, "first %v at %v", o.first, o.firstAt)
			// The verdict comes after the greeting plus about
			// AfterGreetingSilence; espeak-ng's clip ends with some
			// silence of its own, so allow up to 1.2 s after it.
			require.Greater(t, o.finalAt, pad+300*time.Millisecond)
			require.Less(t, o.finalAt, speechEnd+1200*time.Millisecond)
			t.Logf("%q: human after %v (speech clip ends %v)", tc.text, o.finalAt, speechEnd)
		})
	}
}

func TestMachineThenBeep(t *testing.T) {
	for _, tc := range []struct {
		voice string
		freq  float64
		beep  time.Duration
	}{
		{"", 1000, 400 * time.Millisecond}, {"en+f3", 1400, 250 * time.Millisecond}, {"en-us", 440, 800 * time.Millisecond},
		{"en+m3", 1900, 160 * time.Millisecond},
	} {
		t.Run(tc.voice, func(t *testing.T) {
			greeting := amdtest.Speech(t, amdtest.Greeting, tc.voice, rate)
			beepAt := pad + time.Duration(len(greeting))*time.Second/rate + 300*time.Millisecond
			pcm := line(amdtest.Silence(pad, rate), greeting, amdtest.Silence(300*time.Millisecond, rate),
				amdtest.Tone(tc.freq, tc.beep, -12, rate), amdtest.Silence(3*time.Second, rate))
			o := run(t, amd.Config{}, pcm)
			require.Equal(t, amd.Machine, o.first, "first verdict at %v", o.firstAt)
			require.Less(t, o.machineAt, pad+3*time.Second, "machine decided late")
			require.Equal(t, amd.Beep, o.result)
			end := beepAt + tc.beep
			require.GreaterOrEqual(t, o.finalAt, end, "beep reported before it ended")
			require.Less(t, o.finalAt, end+100*time.Millisecond)
			t.Logf("machine after %v, beep (ends %v) reported at %v", o.machineAt, end, o.finalAt)
		})
	}
}

func TestMachineWithoutBeep(t *testing.T) {
	greeting := amdtest.Speech(t, amdtest.Greeting, "", rate)
	o := run(t, amd.Config{}, line(amdtest.Silence(pad, rate), greeting, amdtest.Silence(4*time.Second, rate)))
	require.Equal(t, amd.Machine, o.first)
	require.Equal(t, amd.GreetingEnded, o.result)
	end := pad + time.Duration(len(greeting))*time.Second/rate
	require.Greater(t, o.finalAt, end+time.Second)
	require.Less(t, o.finalAt, end+3*time.Second)
}

func TestShortGreetingThenBeep(t *testing.T) {
	// "Leave a message" and the beep, all before MaxGreeting.
	msg := amdtest.Speech(t, "Leave a message.", "", rate)
	pcm := line(amdtest.Silence(pad, rate), msg, amdtest.Silence(200*time.Millisecond, rate),
		amdtest.Tone(1000, 300*time.Millisecond, -10, rate), amdtest.Silence(3*time.Second, rate))
	o := run(t, amd.Config{}, pcm)
	require.Equal(t, amd.Beep, o.result, "first %v at %v", o.first, o.firstAt)
}

func TestSilence(t *testing.T) {
	o := run(t, amd.Config{}, line(amdtest.Silence(6*time.Second, rate)))
	require.Equal(t, amd.Unknown, o.result)
	require.Equal(t, 2500*time.Millisecond, o.finalAt)
}

func TestNoise(t *testing.T) {
	for _, db := range []float64{-40, -25} {
		o := run(t, amd.Config{}, amdtest.Noise(6*time.Second, db, 9, rate))
		require.Equal(t, amd.Unknown, o.result, "noise at %v dBFS: first %v at %v", db, o.first, o.firstAt)
	}
}

// TestG711 runs the machine case at 8 kHz through mu-law, as a PCMU
// call's audio arrives before resampling.
func TestG711(t *testing.T) {
	const r8 = 8000
	greeting := amdtest.Speech(t, amdtest.Greeting, "", r8)
	pcm := amdtest.Concat(amdtest.Silence(pad, r8), greeting, amdtest.Silence(300*time.Millisecond, r8),
		amdtest.Tone(1000, 300*time.Millisecond, -15, r8), amdtest.Silence(2*time.Second, r8))
	b := make([]byte, len(pcm))
	g711.EncodeULawTo(b, pcm)
	g711.DecodeULawTo(pcm, b)
	o := run(t, amd.Config{SampleRate: r8}, pcm)
	require.Equal(t, amd.Machine, o.first)
	require.Equal(t, amd.Beep, o.result)
}

// TestSpeechIsNoBeep: a long stretch of speech with no tone never gives
// Beep, whatever the verdict rules say (MaxGreeting off).
func TestSpeechIsNoBeep(t *testing.T) {
	pcm := line(amdtest.Speech(t, amdtest.Greeting+" "+amdtest.Greeting, "en+f3", rate), amdtest.Silence(time.Second, rate))
	o := run(t, amd.Config{MaxGreeting: time.Hour, MaxWords: 1 << 20, MaxAnalysis: time.Hour, EndSilence: time.Hour}, pcm)
	require.NotEqual(t, amd.Beep, o.result)
}

func TestFrameSize(t *testing.T) {
	d, err := amd.New(amd.Config{})
	require.NoError(t, err)
	_, err = d.Process(make([]int16, 160))
	require.ErrorIs(t, err, amd.ErrFrameSize)
	_, err = amd.New(amd.Config{SampleRate: 1000})
	require.ErrorIs(t, err, amd.ErrConfig)
	_, err = amd.New(amd.Config{MaxGreeting: -time.Second})
	require.ErrorIs(t, err, amd.ErrConfig)
}

func TestAllocs(t *testing.T) {
	d, err := amd.New(amd.Config{MaxAnalysis: time.Hour, InitialSilence: time.Hour})
	require.NoError(t, err)
	frame := amdtest.Tone(700, 20*time.Millisecond, -20, rate)
	allocs := testing.AllocsPerRun(200, func() { _, _ = d.Process(frame) })
	require.Zero(t, allocs)
}
