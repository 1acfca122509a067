package agent

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/ai/tts/espeak"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/pace"
)

// timedTTS wraps a TTS and records when each synthesis started and when
// its first samples were read, so TTS time can be taken out of a latency.
type timedTTS struct {
	TTS
	start, first atomic.Int64
}

func (t *timedTTS) Synthesize(ctx context.Context, r tts.Request) (tts.Audio, error) {
	t.start.Store(time.Now().UnixNano())
	sp, err := t.TTS.Synthesize(ctx, r)
	if err != nil {
		return nil, err
	}
	return &timedSpeech{Audio: sp, t: t}, nil
}

type timedSpeech struct {
	tts.Audio
	t    *timedTTS
	seen bool
}

func (s *timedSpeech) Read(p []int16) (int, error) {
	n, err := s.Audio.Read(p)
	if n > 0 && !s.seen {
		s.seen = true
		s.t.first.Store(time.Now().UnixNano())
	}
	return n, err
}

// pacedSession is the pacer's side of a session in the benchmark: it
// notes when the first frame of each answer leaves.
type pacedSession struct {
	s     *Session
	buf   []int16
	first atomic.Int64
}

func (p *pacedSession) Tick(now time.Time) {
	if p.s.ReadFrame(p.buf) != nil && p.first.Load() == 0 {
		p.first.Store(time.Now().UnixNano())
	}
}

// BenchmarkTurnLatency measures the engine's added latency: from the
// end-of-turn decision (the caller frame that completes the silence) to
// the first frame of the answer leaving through the node's pacer, with a
// model and an STT that answer at once. TTS time (from the synthesis
// request to its first samples) is reported apart and subtracted in the
// engine figures. The pacer's 20 ms tick is part of the latency: on
// average half a tick; "ready" is the latency to the first frame waiting
// on the air for that tick.
func BenchmarkTurnLatency(b *testing.B) {
	benchTurnLatency(b, &fakeTTS{wordMS: 20})
}

// BenchmarkTurnLatencyEspeak is BenchmarkTurnLatency with espeak-ng
// synthesizing the answer: the tts figures are then real.
func BenchmarkTurnLatencyEspeak(b *testing.B) {
	s, err := espeak.New(espeak.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchTurnLatency(b, s)
}

func benchTurnLatency(b *testing.B, synth TTS) {
	caller := loadWAV(b, "caller16k.wav")
	tts := &timedTTS{TTS: synth}
	lm := &fakeLLM{scripts: [][]llm.Chunk{say("Hi.")}}
	k := newSink()
	s, err := New(Config{OutputRate: media.Rate24k, TurnDetection: serverVAD()}, nil,
		Deps{LLM: lm, STT: &fakeSTT{answers: []string{"hello"}}, TTS: tts}, k)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	pacer, err := pace.New(pace.Config{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer pacer.Close()
	ps := &pacedSession{s: s, buf: make([]int16, media.SamplesPerFrame(media.Rate24k))}
	h, err := pacer.Register(ps)
	if err != nil {
		b.Fatal(err)
	}
	defer pacer.Unregister(h)

	silence := make([]int16, callerFrame)
	var total, engine, ttsTime, ready []time.Duration
	b.ReportAllocs()
	rnd := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		// Turns end at any phase of the pacer's tick, as real ones do.
		time.Sleep(time.Duration(rnd.IntN(20000)) * time.Microsecond)
		ps.first.Store(0)
		before := count[ResponseDone](k)
		for i := 0; i+callerFrame <= len(caller); i += callerFrame {
			if err := s.WriteFrame(caller[i : i+callerFrame]); err != nil {
				b.Fatal(err)
			}
		}
		var decided time.Time
		for s.in.det.Speaking() {
			if err := s.WriteFrame(silence); err != nil {
				b.Fatal(err)
			}
			decided = time.Now()
		}
		// The answer is ready when its first frame waits in a playout on
		// the air; the rest is the wait for the pacer's next tick.
		for {
			if p := s.play.Load(); p != nil && p.ring.Len() >= len(ps.buf) || ps.first.Load() != 0 {
				break
			}
			runtime.Gosched()
		}
		ready = append(ready, time.Since(decided))
		for ps.first.Load() == 0 {
			time.Sleep(50 * time.Microsecond)
		}
		first := time.Unix(0, ps.first.Load())
		tt := time.Duration(tts.first.Load() - tts.start.Load())
		total = append(total, first.Sub(decided))
		ttsTime = append(ttsTime, tt)
		engine = append(engine, first.Sub(decided)-tt)
		for count[ResponseDone](k) == before {
			time.Sleep(100 * time.Microsecond)
		}
		// Trim the events so the sink stays small.
		k.mu.Lock()
		k.events = k.events[:0]
		k.mu.Unlock()
	}
	report := func(name string, d []time.Duration) {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2])/1e6, name+"-p50-ms")
		b.ReportMetric(float64(d[(len(d)*99)/100])/1e6, name+"-p99-ms")
	}
	report("ready", ready)
	report("engine", engine)
	report("tts", ttsTime)
	report("total", total)
}
