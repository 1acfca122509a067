package agent

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/dsp"
)

// sim drives a session the way a transport and the pacer do, one frame
// at a time and faster than real time: each tick the agent's frame is read
// (the pacer), then the caller's frame is written (the receive loop),
// with the agent's echo mixed in when echo is set.
type sim struct {
	t      *testing.T
	s      *Session
	k      *sink
	out    []int16
	frames int // frames of agent audio read
	fades  int // frames that faded a pause to silence (not counted in frames)
	// echo: the agent's audio returns this many frames later at this gain
	// (the output rate must be 16 kHz).
	echoFrames int
	echoGain   float64
	past       [][]int16
	rnd        *rand.Rand
	// log of what each tick read: the playout, or nil for silence and
	// for a pause's fade.
	reads []*Playout
}

func newSim(t *testing.T, cfg Config, deps Deps) *sim {
	t.Helper()
	k := newSink()
	s, err := New(cfg, nil, deps, k)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return &sim{t: t, s: s, k: k, out: make([]int16, media.SamplesPerFrame(s.OutputRate())), rnd: rand.New(rand.NewPCG(1, 1))}
}

// ready waits until the current playout's producer is ahead of the pacer
// (as it is in real time), so reads measure the engine, not the race
// between the test and the TTS goroutine.
func (m *sim) ready() {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		p := m.s.play.Load()
		if p == nil {
			return
		}
		// A pause's fade plays the next samples too.
		st := p.state.Load()
		if st != playPlaying && st != playFading || p.done.Load() || p.ring.Len() >= len(m.out) {
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// tick plays one frame and returns whether the agent was heard in it.
func (m *sim) tick(caller []int16) bool {
	m.t.Helper()
	m.ready()
	var before int64
	pl := m.s.play.Load()
	if pl != nil {
		before = pl.Played()
	}
	p := m.s.ReadFrame(m.out)
	var heard []int16
	if p != nil {
		heard = append([]int16(nil), m.out...)
		if p == pl && p.Played() == before {
			m.fades++
			p = nil
		} else {
			m.frames++
		}
	}
	m.reads = append(m.reads, p)
	near := make([]int16, m.s.in.frame)
	for i := range near {
		near[i] = int16(m.rnd.NormFloat64() * 10)
	}
	if m.echoFrames > 0 {
		m.past = append(m.past, heard)
		if len(m.past) > m.echoFrames {
			if e := m.past[0]; e != nil {
				for i, v := range e {
					near[i] += int16(float64(v) * m.echoGain)
				}
			}
			m.past = m.past[1:]
		}
	}
	for i, v := range caller {
		near[i] = int16(max(-32768, min(32767, int(near[i])+int(v))))
	}
	require.NoError(m.t, m.s.WriteFrame(near))
	return heard != nil
}

// ticks plays n frames of caller silence.
func (m *sim) ticks(n int) {
	for range n {
		m.tick(nil)
	}
}

// speak plays pcm (at the input rate, 16 kHz by default) as the caller,
// frame by frame.
func (m *sim) speak(pcm []int16) {
	f := m.s.in.frame
	for i := 0; i+f <= len(pcm); i += f {
		m.tick(pcm[i : i+f])
	}
}

// untilAudio ticks until the agent is heard (at most n ticks).
func (m *sim) untilAudio(n int) {
	m.t.Helper()
	for range n {
		if m.s.play.Load() != nil {
			m.ready()
			if m.tick(nil) {
				return
			}
			continue
		}
		time.Sleep(200 * time.Microsecond)
		m.tick(nil)
	}
	m.t.Fatalf("no agent audio within %d ticks; events: %s", n, kinds(m.k.all()))
}

// untilDone ticks until a ResponseDone arrives (at most n ticks) and
// returns it.
func (m *sim) untilDone(n int) ResponseDone {
	m.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < n && time.Now().Before(deadline); {
		for _, e := range m.k.all() {
			if d, ok := e.(ResponseDone); ok {
				return d
			}
		}
		// Only ticks that play audio count: between them the response
		// goroutines and the loop get time, as they would in real time.
		if m.tick(nil) {
			i++
		} else {
			time.Sleep(100 * time.Microsecond)
		}
	}
	m.t.Fatalf("no response.done within %d ticks; events: %s", n, kinds(m.k.all()))
	return ResponseDone{}
}

// dspAEC is the echo canceller setting of the tests' echo path.
func dspAEC() dsp.Config {
	return dsp.Config{EchoCancellation: true, EchoDelay: 100 * time.Millisecond}
}
