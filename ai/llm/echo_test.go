package llm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
)

func TestEchoRepeatsTheLastUserTurn(t *testing.T) {
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "You are helpful."},
		{Role: llm.RoleUser, Content: "first turn"},
		{Role: llm.RoleAssistant, Content: "first turn"},
		{Role: llm.RoleUser, Content: "  what  is the time?  "},
		{Role: llm.RoleAssistant, Content: "ignored"},
	}
	s, err := llm.NewEcho(llm.EchoConfig{}).Stream(context.Background(), llm.Request{Messages: msgs})
	require.NoError(t, err)
	require.Equal(t, []llm.Chunk{{Text: "what  is the time?"}, {FinishReason: "stop"}}, drain(t, s))

	s, err = llm.NewEcho(llm.EchoConfig{WordByWord: true}).Stream(context.Background(), llm.Request{Messages: msgs})
	require.NoError(t, err)
	chunks := drain(t, s)
	require.Equal(t, []llm.Chunk{{Text: "what  "}, {Text: "is "}, {Text: "the "}, {Text: "time?"}, {FinishReason: "stop"}}, chunks)

	s, err = llm.NewEcho(llm.EchoConfig{}).Stream(context.Background(), llm.Request{Messages: msgs[:1]})
	require.NoError(t, err)
	require.Equal(t, "I didn't catch that.", drain(t, s)[0].Text)

	_, err = llm.NewEcho(llm.EchoConfig{}).Stream(context.Background(), llm.Request{})
	require.ErrorIs(t, err, llm.ErrNoMessages)
}

func TestEchoPaceAndCancel(t *testing.T) {
	e := llm.NewEcho(llm.EchoConfig{WordByWord: true, WordDelay: 10 * time.Millisecond})
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("word ", 5)}}}
	start := time.Now()
	s, err := e.Stream(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, drain(t, s), 6)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	s, err = e.Stream(ctx, req)
	require.NoError(t, err)
	_, err = s.Recv()
	require.NoError(t, err)
	cancel()
	_, err = s.Recv()
	require.ErrorIs(t, err, context.Canceled)

	s, err = e.Stream(context.Background(), req)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = s.Recv()
	require.ErrorIs(t, err, llm.ErrClosed)
}
