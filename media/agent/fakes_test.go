package agent

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/codecs/wav"
)

// Fakes stand in for the providers, at the provider boundary only.

// fakeLLM answers each request with the next script (or repeats the last
// one). A script is a list of chunks; a chunk whose Text is "<wait>"
// blocks until release is closed.
type fakeLLM struct {
	mu      sync.Mutex
	scripts [][]llm.Chunk
	reqs    []llm.Request
	release chan struct{}
}

func (f *fakeLLM) Stream(ctx context.Context, r llm.Request) (llm.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r)
	var script []llm.Chunk
	if len(f.scripts) > 0 {
		script = f.scripts[0]
		if len(f.scripts) > 1 {
			f.scripts = f.scripts[1:]
		}
	}
	return &fakeStream{ctx: ctx, chunks: script, release: f.release}, nil
}

// waitRequests waits until n requests arrived and returns them.
func (f *fakeLLM) waitRequests(t *testing.T, n int) []llm.Request {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(f.requests()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d model requests, want %d", len(f.requests()), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return f.requests()
}

func (f *fakeLLM) requests() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.Request(nil), f.reqs...)
}

// say is a script that answers text and stops.
func say(text string) []llm.Chunk {
	return []llm.Chunk{{Text: text}, {FinishReason: "stop"}}
}

type fakeStream struct {
	ctx     context.Context
	chunks  []llm.Chunk
	release chan struct{}
}

func (s *fakeStream) Recv() (llm.Chunk, error) {
	if len(s.chunks) == 0 {
		return llm.Chunk{}, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	if c.Text == "<wait>" {
		select {
		case <-s.release:
		case <-s.ctx.Done():
			return llm.Chunk{}, s.ctx.Err()
		}
		return s.Recv()
	}
	return c, nil
}

func (s *fakeStream) Close() error { return nil }

// fakeTTS speaks each word as wordMS of a tone, or, with pcm set, returns
// pcm whatever the text (a recorded voice, for echo and barge-in tests).
type fakeTTS struct {
	wordMS int
	pcm    []int16
	delay  time.Duration
	mu     sync.Mutex
	texts  []string
}

func (f *fakeTTS) Synthesize(ctx context.Context, r tts.Request) (tts.Audio, error) {
	f.mu.Lock()
	f.texts = append(f.texts, r.Text)
	f.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.pcm != nil {
		return &pcmSpeech{pcm: f.pcm}, nil
	}
	n := len(strings.Fields(r.Text)) * f.wordMS * r.SampleRate / 1000
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/float64(r.SampleRate)))
	}
	return &pcmSpeech{pcm: pcm}, nil
}

func (f *fakeTTS) said() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.texts...)
}

type pcmSpeech struct{ pcm []int16 }

func (p *pcmSpeech) Read(dst []int16) (int, error) {
	if len(p.pcm) == 0 {
		return 0, io.EOF
	}
	n := copy(dst, p.pcm)
	p.pcm = p.pcm[n:]
	return n, nil
}

func (p *pcmSpeech) Close() error { return nil }

// fakeSTT answers each turn with the next transcript (repeating the last)
// and records the audio lengths it got.
type fakeSTT struct {
	mu      sync.Mutex
	answers []string
	lens    []int
}

func (f *fakeSTT) Transcribe(ctx context.Context, r stt.Request) (stt.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lens = append(f.lens, len(r.PCM))
	if len(f.answers) == 0 {
		return stt.Result{}, nil
	}
	a := f.answers[0]
	if len(f.answers) > 1 {
		f.answers = f.answers[1:]
	}
	return stt.Result{Text: a}, nil
}

func (f *fakeSTT) calls() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.lens...)
}

// sink collects events.
type sink struct {
	mu     sync.Mutex
	events []Event
	signal chan struct{}
}

func newSink() *sink { return &sink{signal: make(chan struct{}, 1)} }

func (k *sink) Event(e Event) {
	k.mu.Lock()
	k.events = append(k.events, e)
	k.mu.Unlock()
	select {
	case k.signal <- struct{}{}:
	default:
	}
}

func (k *sink) all() []Event {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]Event(nil), k.events...)
}

// waitFor waits until an event satisfying match has arrived and returns
// it.
func waitFor[T Event](t *testing.T, k *sink, match func(T) bool) T {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		for _, e := range k.all() {
			if v, ok := e.(T); ok && (match == nil || match(v)) {
				return v
			}
		}
		select {
		case <-k.signal:
		case <-time.After(time.Millisecond):
		case <-deadline:
			var zero T
			t.Fatalf("no %T event; got %s", zero, kinds(k.all()))
			return zero
		}
	}
}

// count returns how many events of type T arrived.
func count[T Event](k *sink) int {
	n := 0
	for _, e := range k.all() {
		if _, ok := e.(T); ok {
			n++
		}
	}
	return n
}

func kinds(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(strings.TrimPrefix(fmt.Sprintf("%T", e), "agent."))
		b.WriteByte(' ')
	}
	return b.String()
}

// loadWAV reads a 16 kHz test recording of media/turn.
func loadWAV(t testing.TB, name string) []int16 {
	t.Helper()
	f, err := os.Open("../turn/testdata/" + name)
	require.NoError(t, err)
	defer f.Close()
	format, pcm, err := wav.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, 16000, format.SampleRate)
	return pcm
}

// checkGoroutines fails the test if goroutines started during it are
// still running shortly after it.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			t.Errorf("%d goroutines leaked:\n%s", n-before, buf[:runtime.Stack(buf, true)])
		}
	})
}
