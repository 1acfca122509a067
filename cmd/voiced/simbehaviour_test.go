package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/tts/espeak"
	"github.com/voiced/voiced/call/sim"
	"github.com/voiced/voiced/sip/siptest"
)

// TestSimulatedCallerBehaviours: over the realtime WebSocket of a real
// node (the loopback engine: the media path without providers), the
// simulated caller answers as a voicemail box (its greeting, then a
// 1 kHz beep), keeps a long silence after its turn, hesitates when
// disfluent, and speaks slower and faster with the pace.
func TestSimulatedCallerBehaviours(t *testing.T) {
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	sv := startTelephonyServe(t)
	st, ag := sv.call("POST", "/v1/agents", `{"name":"Echo"}`)
	require.Equal(t, 201, st, "%v", ag)
	voice, err := espeak.New(espeak.Config{})
	require.NoError(t, err)
	defer voice.Close()
	const prompt = "I would like to move my appointment to Thursday afternoon, please."
	target := sim.WebTarget{URL: "ws" + strings.TrimPrefix(sv.base, "http") + "/v1/realtime", Key: sv.key, AgentID: objID(ag)}
	cases := map[string]sim.Scenario{
		"voicemail": {Prompt: prompt, VoicemailAnswer: true},
		"silence":   {Prompt: prompt, SilenceSeconds: 3, Disfluencies: "light"},
		"slow":      {Prompt: prompt, Pace: "slow"},
		"fast":      {Prompt: prompt, Pace: "fast"},
	}
	results := map[string]*sim.Result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, sc := range cases {
		wg.Go(func() {
			res, err := sim.CallWeb(context.Background(), target, sim.Config{Scenario: sc, TTS: voice, KeepAudio: true, MaxDuration: 40 * time.Second, Seed: 7})
			require.NoError(t, err, name)
			mu.Lock()
			results[name] = res
			mu.Unlock()
		})
	}
	wg.Wait()
	// speechFrames is how many 20 ms frames of the caller's speech were sent.
	speechFrames := func(r *sim.Result) (n, last int) {
		for i, s := range r.Speech {
			if s {
				n, last = n+1, i
			}
		}
		return n, last
	}

	vm := results["voicemail"]
	require.Equal(t, "user", vm.Lines[0].Role)
	require.Contains(t, vm.Lines[0].Text, "leave a message after the tone")
	// The beep: half a second where 1 kHz holds nearly all the power.
	frame := vm.Rate / 50
	beep := 0
	for i := 0; i+frame <= len(vm.Sent); i += frame {
		f := vm.Sent[i : i+frame]
		var p float64
		for _, v := range f {
			p += float64(v) * float64(v)
		}
		if p/float64(frame) > 1e6 && goertzelShare(f, 1000, vm.Rate) > 0.9 {
			beep++
		}
	}
	require.InDelta(t, 25, beep, 2, "a 500 ms 1 kHz beep")

	sil := results["silence"]
	var said []string
	for _, l := range sil.Lines {
		if l.Role == "user" {
			said = append(said, l.Text)
		}
	}
	require.Len(t, said, 1, "said its line, then stayed silent: %v", sil.Lines)
	require.Regexp(t, `^(um|uh|er|you know|like),`, said[0], "a light caller hesitates")
	require.Greater(t, len(strings.Fields(said[0])), len(strings.Fields(prompt)))
	_, last := speechFrames(sil)
	require.GreaterOrEqual(t, len(sil.Sent)/frame-last, 150, "at least 3 s of silence after the turn")

	slow, _ := speechFrames(results["slow"])
	fast, _ := speechFrames(results["fast"])
	t.Logf("the same line: %.2f s slow, %.2f s fast", float64(slow)/50, float64(fast)/50)
	require.Greater(t, float64(slow), 1.4*float64(fast), "slow (130 wpm) against fast (230 wpm)")
	sv.stop(t)
}
