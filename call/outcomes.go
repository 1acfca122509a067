package call

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/control/monitoring"
	"github.com/voiced/voiced/media/agent"
)

// ProviderOutcomes receives the outcome of each request to the node's AI
// providers, once per request (not per frame or chunk): kind is "llm",
// "stt" or "tts" (monitoring.ProviderLLM...), err nil for a success.
// control.Server.ProviderErrors' window implements it; the status
// heartbeat reads the error rates.
type ProviderOutcomes interface {
	Record(kind string, err error)
}

// outcomes is where the providers' wrappers report: empty until the
// control plane is wired (Node.RecordProviders), as the node starts first.
type outcomes struct {
	to atomic.Pointer[ProviderOutcomes]
}

func (o *outcomes) set(r ProviderOutcomes) { o.to.Store(&r) }

// record reports a request's outcome. A request its caller gave up on
// (barge-in, a hang-up: ctx done) says nothing about the provider and is
// not reported.
func (o *outcomes) record(ctx context.Context, kind string, err error) {
	if err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled)) {
		return
	}
	if r := o.to.Load(); r != nil && *r != nil {
		(*r).Record(kind, err)
	}
}

// once reports one request's outcome the first time it is known.
type once struct {
	o    *outcomes
	ctx  context.Context
	kind string
	done sync.Once
}

func (c *once) record(err error) { c.done.Do(func() { c.o.record(c.ctx, c.kind, err) }) }

// recordedLLM reports each completion: a failed start, or the stream's
// end (its last chunk, an error, or Close when the engine stops reading,
// which is no failure of the provider).
type recordedLLM struct {
	agent.LLM
	o *outcomes
}

func (m recordedLLM) Stream(ctx context.Context, r llm.Request) (llm.Stream, error) {
	s, err := m.LLM.Stream(ctx, r)
	c := &once{o: m.o, ctx: ctx, kind: monitoring.ProviderLLM}
	if err != nil {
		c.record(err)
		return nil, err
	}
	return &recordedStream{Stream: s, c: c}, nil
}

type recordedStream struct {
	llm.Stream
	c *once
}

func (s *recordedStream) Recv() (llm.Chunk, error) {
	ch, err := s.Stream.Recv()
	switch {
	case err == io.EOF:
		s.c.record(nil)
	case err != nil:
		s.c.record(err)
	}
	return ch, err
}

func (s *recordedStream) Close() error {
	s.c.record(nil)
	return s.Stream.Close()
}

// recordedTTS reports each synthesis the same way as recordedLLM.
type recordedTTS struct {
	agent.TTS
	o *outcomes
}

func (v recordedTTS) Synthesize(ctx context.Context, r tts.Request) (tts.Audio, error) {
	a, err := v.TTS.Synthesize(ctx, r)
	c := &once{o: v.o, ctx: ctx, kind: monitoring.ProviderTTS}
	if err != nil {
		c.record(err)
		return nil, err
	}
	return &recordedAudio{Audio: a, c: c}, nil
}

type recordedAudio struct {
	tts.Audio
	c *once
}

func (a *recordedAudio) Read(p []int16) (int, error) {
	n, err := a.Audio.Read(p)
	switch {
	case err == io.EOF:
		a.c.record(nil)
	case err != nil:
		a.c.record(err)
	}
	return n, err
}

func (a *recordedAudio) Close() error {
	a.c.record(nil)
	return a.Audio.Close()
}

// recordedSTT reports each transcription.
type recordedSTT struct {
	agent.STT
	o *outcomes
}

func (s recordedSTT) Transcribe(ctx context.Context, r stt.Request) (stt.Result, error) {
	res, err := s.STT.Transcribe(ctx, r)
	s.o.record(ctx, monitoring.ProviderSTT, err)
	return res, err
}

// recordedStreamer reports each transcription of a streaming STT, whole
// or streamed: a stream's outcome is its start's failure or its Finish.
type recordedStreamer struct {
	recordedSTT
	st stt.Streamer
}

// Prepare passes a session's start on to an stt.Preparer (the offline
// pool); other streamers have nothing to prepare.
func (s recordedStreamer) Prepare() (done func()) {
	if p, ok := s.st.(stt.Preparer); ok {
		return p.Prepare()
	}
	return func() {}
}

func (s recordedStreamer) Stream(ctx context.Context, r stt.Request) (stt.Stream, error) {
	st, err := s.st.Stream(ctx, r)
	if err != nil {
		s.o.record(ctx, monitoring.ProviderSTT, err)
		return nil, err
	}
	return recordedSTTStream{st, s.o}, nil
}

type recordedSTTStream struct {
	stt.Stream
	o *outcomes
}

func (s recordedSTTStream) Finish(ctx context.Context) (stt.Result, error) {
	res, err := s.Stream.Finish(ctx)
	s.o.record(ctx, monitoring.ProviderSTT, err)
	return res, err
}
