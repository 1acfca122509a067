package call

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/stt"
)

type outcomeLog []string

func (l *outcomeLog) Record(kind string, err error) {
	s := kind + ":ok"
	if err != nil {
		s = kind + ":error"
	}
	*l = append(*l, s)
}

type fakeLLM struct{ err error }

func (f fakeLLM) Stream(ctx context.Context, r llm.Request) (llm.Stream, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &fakeStream{}, nil
}

type fakeStream struct{ n int }

func (s *fakeStream) Recv() (llm.Chunk, error) {
	if s.n++; s.n > 2 {
		return llm.Chunk{}, io.EOF
	}
	return llm.Chunk{}, nil
}
func (s *fakeStream) Close() error { return nil }

type fakeSTT struct{ err error }

func (f fakeSTT) Transcribe(context.Context, stt.Request) (stt.Result, error) {
	return stt.Result{}, f.err
}

// Each provider request reports one outcome; a request its caller gave
// up on (barge-in, hang-up) reports none, and nothing is reported before
// the control plane is wired.
func TestProviderOutcomes(t *testing.T) {
	var log outcomeLog
	o := &outcomes{}
	ctx := context.Background()
	recordedSTT{fakeSTT{}, o}.Transcribe(ctx, stt.Request{})
	require.Empty(t, log, "not wired yet")
	o.set(&log)

	boom := errors.New("500")
	_, err := recordedLLM{fakeLLM{err: boom}, o}.Stream(ctx, llm.Request{})
	require.ErrorIs(t, err, boom)
	s, err := recordedLLM{fakeLLM{}, o}.Stream(ctx, llm.Request{})
	require.NoError(t, err)
	for err == nil {
		_, err = s.Recv()
	}
	s.Close()
	s, _ = recordedLLM{fakeLLM{}, o}.Stream(ctx, llm.Request{})
	s.Close() // stopped early by the engine: the provider did not fail
	recordedSTT{fakeSTT{err: boom}, o}.Transcribe(ctx, stt.Request{})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	recordedSTT{fakeSTT{err: context.Canceled}, o}.Transcribe(cctx, stt.Request{})
	require.Equal(t, outcomeLog{"llm:error", "llm:ok", "llm:ok", "stt:error"}, log)
}
