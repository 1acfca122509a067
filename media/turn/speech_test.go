package turn

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media/dsp"
)

// These tests run espeak-ng speech (testdata/README.md) through the dsp
// processor the engine uses, echo canceller included, into a Detector.

const frameLen = 320 // 20 ms at 16 kHz

func loadWAV(t *testing.T, name string) []int16 {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	require.NoError(t, err)
	defer f.Close()
	format, pcm, err := wav.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, 16000, format.SampleRate)
	return pcm
}

// scene is a call's audio: what the agent plays (far) and what the
// caller's microphone picks up (near: the caller plus the agent's echo).
type scene struct {
	far, near []float64
}

func newScene(n int) *scene {
	s := &scene{far: make([]float64, n), near: make([]float64, n)}
	// Line noise at about -70 dBFS.
	r := rand.New(rand.NewPCG(7, 7))
	for i := range s.near {
		s.near[i] = r.NormFloat64() * 10
	}
	return s
}

// agent plays pcm at sample at; its echo returns delay later, 10 dB down
// through a short room response.
func (s *scene) agent(pcm []int16, at int, delay time.Duration) {
	d := int(delay / time.Millisecond * 16)
	taps := []float64{0.316, 0, 0.1, 0, 0, 0.05}
	for i, v := range pcm {
		if at+i >= len(s.far) {
			break
		}
		s.far[at+i] += float64(v)
		for k, g := range taps {
			if j := at + i + d + k*16; j < len(s.near) {
				s.near[j] += float64(v) * g
			}
		}
	}
}

// caller speaks pcm at sample at.
func (s *scene) caller(pcm []int16, at int) {
	for i, v := range pcm {
		if at+i < len(s.near) {
			s.near[at+i] += float64(v) * 0.7
		}
	}
}

func clip(x []float64) []int16 {
	out := make([]int16, len(x))
	for i, v := range x {
		out[i] = int16(max(-32768, min(32767, math.Round(v))))
	}
	return out
}

// play runs the scene frame by frame through dsp and a Detector, telling
// the detector the agent is speaking on frames where far has sound.
func (s *scene) play(t *testing.T, cfg Config, aec bool) []indexed {
	t.Helper()
	p, err := dsp.New(dsp.Config{EchoCancellation: aec, EchoDelay: 100 * time.Millisecond})
	require.NoError(t, err)
	defer p.Close()
	d := newDetector(t, cfg)
	far, near := clip(s.far), clip(s.near)
	var out []indexed
	for f := 0; f+frameLen <= len(near); f += frameLen {
		ref := far[f : f+frameLen]
		require.NoError(t, p.ProcessFar(ref))
		res, err := p.ProcessNear(near[f : f+frameLen])
		require.NoError(t, err)
		agent := false
		for _, v := range ref {
			if v != 0 {
				agent = true
				break
			}
		}
		at := d.Frame()
		if ev := d.Process(res.Probability, agent); ev.Kind != None {
			out = append(out, indexed{at, ev})
		}
	}
	return out
}

// onsetOffset returns the first and last+1 frames of pcm whose level is
// within 30 dB of its loudest frame.
func onsetOffset(pcm []int16) (int64, int64) {
	n := len(pcm) / frameLen
	e := make([]float64, n)
	var peak float64
	for f := range n {
		var s float64
		for _, v := range pcm[f*frameLen : (f+1)*frameLen] {
			s += float64(v) * float64(v)
		}
		e[f] = s
		peak = max(peak, s)
	}
	first, last := int64(-1), int64(-1)
	for f := range n {
		if e[f] > peak*1e-3 {
			if first < 0 {
				first = int64(f)
			}
			last = int64(f)
		}
	}
	return first, last + 1
}

func TestSpeechTurn(t *testing.T) {
	caller := loadWAV(t, "caller16k.wav")
	s := newScene(16000 + len(caller) + 32000)
	s.caller(caller, 16000)
	evs := s.play(t, Config{}, false)
	require.Len(t, evs, 2, "%+v", evs)
	on, off := onsetOffset(caller)
	on, off = on+50, off+50
	require.Equal(t, SpeechStarted, evs[0].Kind)
	require.False(t, evs[0].Interrupt)
	require.InDelta(t, on-15, evs[0].Start, 2, "start is 300 ms before the onset")
	require.InDelta(t, on+10, evs[0].At, 3, "decided after 200 ms of speech")
	require.Equal(t, SpeechStopped, evs[1].Kind)
	require.InDelta(t, off, evs[1].End, 6, "end within 120 ms of the offset")
	require.Equal(t, evs[1].End+24, evs[1].At, "decided 500 ms after the last speech frame")
}

func TestShortAnswerIsATurn(t *testing.T) {
	yes := loadWAV(t, "yes16k.wav")
	s := newScene(16000 + len(yes) + 32000)
	s.caller(yes, 16000)
	evs := s.play(t, Config{}, false)
	require.Len(t, evs, 2)
	require.Equal(t, SpeechStarted, evs[0].Kind)
	require.Equal(t, SpeechStopped, evs[1].Kind)
}

func TestOwnEchoIsNotSpeech(t *testing.T) {
	// The agent talks three times with its echo 100 ms later and 10 dB
	// down; the echo canceller removes it. What is left never makes a
	// turn or a barge-in; before the canceller converges (the first
	// utterance) it may pass for a backchannel, after that for nothing.
	agent := loadWAV(t, "agent16k.wav")
	s := newScene(3*len(agent) + 48000)
	for i := range 3 {
		s.agent(agent, 8000+i*(len(agent)+8000), 100*time.Millisecond)
	}
	first := int64(8000+len(agent)) / frameLen
	for _, ev := range s.play(t, Config{}, true) {
		require.Equal(t, Backchannel, ev.Kind, "%+v", ev)
		require.Less(t, ev.Start, first)
	}
}

func TestEchoWithoutCancellerWouldInterrupt(t *testing.T) {
	// The same scene without the echo canceller barges in on itself: the
	// test above holds because of the canceller, not the scene.
	agent := loadWAV(t, "agent16k.wav")
	s := newScene(3*len(agent) + 48000)
	for i := range 3 {
		s.agent(agent, 8000+i*(len(agent)+8000), 100*time.Millisecond)
	}
	interrupts := 0
	for _, ev := range s.play(t, Config{}, false) {
		if ev.Kind == SpeechStarted {
			interrupts++
		}
	}
	require.Positive(t, interrupts)
}

func TestBackchannelsOverAgent(t *testing.T) {
	agent := loadWAV(t, "agent16k.wav")
	for _, name := range []string{"uhhuh16k.wav", "okay16k.wav", "yes16k.wav"} {
		t.Run(name, func(t *testing.T) {
			bc := loadWAV(t, name)
			// The agent speaks twice; the caller acknowledges during the
			// second, when the canceller has converged.
			s := newScene(2*len(agent) + 48000)
			s.agent(agent, 8000, 100*time.Millisecond)
			second := 16000 + len(agent)
			s.agent(agent, second, 100*time.Millisecond)
			s.caller(bc, second+16000)
			evs := afterFirst(s.play(t, Config{}, true), len(agent))
			require.Len(t, evs, 1, "%+v", evs)
			require.Equal(t, Backchannel, evs[0].Kind)
			on, _ := onsetOffset(bc)
			require.InDelta(t, int64((second+16000)/frameLen)+on, evs[0].Start, 3)
		})
	}
}

func TestBargeInOverAgent(t *testing.T) {
	agent := loadWAV(t, "agent16k.wav")
	talk := loadWAV(t, "interrupt16k.wav")
	s := newScene(2*len(agent) + len(talk) + 48000)
	s.agent(agent, 8000, 100*time.Millisecond)
	second := 16000 + len(agent)
	s.agent(agent, second, 100*time.Millisecond)
	at := second + 16000
	s.caller(talk, at)
	evs := afterFirst(s.play(t, Config{}, true), len(agent))
	require.Len(t, evs, 2, "%+v", evs)
	require.Equal(t, SpeechStarted, evs[0].Kind)
	require.True(t, evs[0].Interrupt)
	on, _ := onsetOffset(talk)
	on += int64(at / frameLen)
	delay := time.Duration(evs[0].At-on) * 20 * time.Millisecond
	t.Logf("barge-in decided %v after the caller's onset", delay)
	require.GreaterOrEqual(t, delay, 680*time.Millisecond)
	require.LessOrEqual(t, delay, 1200*time.Millisecond)
	require.InDelta(t, on-15, evs[0].Start, 3)
	require.Equal(t, SpeechStopped, evs[1].Kind)
}

// afterFirst drops the events of the agent's first utterance (n samples
// from 8000), when residual echo may pass for a backchannel (see
// TestOwnEchoIsNotSpeech).
func afterFirst(evs []indexed, n int) []indexed {
	var out []indexed
	for _, ev := range evs {
		if ev.Start >= int64(8000+n)/frameLen {
			out = append(out, ev)
		}
	}
	return out
}
