package sim

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/tts/espeak"
	"github.com/voiced/voiced/sip/siptest"
)

// TestPhoneAnswer: one simulator's user agent answers a call another
// places to the number it expects (the inbound runs' side, here rung by
// a second simulated caller instead of an agent), over real SIP/RTP on
// loopback; a call to a number nobody expects is refused.
func TestPhoneAnswer(t *testing.T) {
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	voice, err := espeak.New(espeak.Config{})
	require.NoError(t, err)
	defer voice.Close()
	log := slog.New(slog.DiscardHandler)
	callee, err := NewPhone(PhoneConfig{RTPLow: 47000, RTPHigh: 47099}, log)
	require.NoError(t, err)
	defer callee.Close()
	caller, err := NewPhone(PhoneConfig{RTPLow: 47100, RTPHigh: 47199}, log)
	require.NoError(t, err)
	defer caller.Close()
	at := callee.Addr()
	require.True(t, at.Addr().IsLoopback())
	target := Target{Host: at.Addr().String(), Port: int(at.Port()), To: "+15550001234"}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A number nobody expects: refused, never answered.
	res, err := caller.Call(ctx, Target{Host: target.Host, Port: target.Port, To: "+15550009999"}, Config{Scenario: Scenario{Prompt: "Hello."}, TTS: voice})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.End, "not_answered"), res.End)

	type called struct {
		res *Result
		err error
	}
	dialed := make(chan called, 1)
	ring := func(ctx context.Context) error {
		go func() {
			r, err := caller.Call(ctx, target, Config{Scenario: Scenario{Prompt: "Hello, this is the agent calling back."}, TTS: voice, MaxDuration: 30 * time.Second})
			dialed <- called{r, err}
		}()
		return nil
	}
	got, err := callee.Answer(ctx, target.To, Config{Scenario: Scenario{Prompt: "Yes, speaking."}, TTS: voice, MaxDuration: 30 * time.Second, KeepAudio: true}, ring)
	require.NoError(t, err)
	other := <-dialed
	require.NoError(t, other.err)
	t.Logf("answered: end %q, lines %d; caller: end %q", got.End, len(got.Lines), other.res.End)
	require.False(t, strings.HasPrefix(got.End, "not_answered"), got.End)
	require.False(t, strings.HasPrefix(other.res.End, "not_answered"), other.res.End)
	require.Equal(t, other.res.SIPCallID, got.SIPCallID, "one call, seen from both sides")
	require.NotEmpty(t, got.Lines, "the answering caller spoke")
	require.Equal(t, "Yes, speaking.", got.Lines[0].Text)
	require.NotEmpty(t, got.Sent)
	callee.mu.Lock()
	require.Empty(t, callee.waiting, "no expectation left behind")
	callee.mu.Unlock()
}
