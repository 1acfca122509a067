package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/tts/espeak"
	"github.com/voiced/voiced/call/sim"
	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/sip/siptest"
)

// callerModel is the simulated caller's model: a scripted
// OpenAI-compatible chat server (the provider boundary). Its answers
// are keyed on the prompt: the opening line, then, once the system
// prompt carries the topic change, the closing line.
type callerModel struct {
	mu       sync.Mutex
	requests []string
}

func newCallerModel(t *testing.T) (*callerModel, string) {
	m := &callerModel{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.requests = append(m.requests, string(b))
		m.mu.Unlock()
		reply := "Hello, I would like to book a table for two tonight."
		if strings.Contains(string(b), "Now change the subject") {
			reply = "Also, do you have parking? Thank you, goodbye. [END]"
		}
		d, _ := json.Marshal(reply)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", d)
		_, _ = io.WriteString(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return m, srv.URL + "/v1"
}

// TestSimulatedCallerNoiseAndDTMF: the simulated caller rings an agent
// over telephony (its own SIP user agent and RTP, to the node's SIP port
// on loopback) and over the realtime WebSocket, with street noise at
// 5 dB SNR and a DTMF sequence. The caller's channel of each call's
// recording holds the noise at the requested SNR (measured from the
// recording: speech power over noise-only stretches, within 2 dB); on
// telephony the agent receives the digits as DTMF (RFC 4733) in the
// call's history; on the web the digits are in-band tones, as the
// realtime protocol has no DTMF event, and the agent's engine hears them
// as DTMF (media/dtmf): the same digits in the call's history.
func TestSimulatedCallerNoiseAndDTMF(t *testing.T) {
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	sv := startTelephonyServe(t, "--call-loopback=false")
	st, conn := sv.call("POST", "/v1/voip-connections", `{"host":"127.0.0.1","allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU"]}`)
	require.Equal(t, 201, st, "%v", conn)
	st, ag := sv.call("POST", "/v1/agents", `{"name":"Host","first_message":"Welcome to the shop.","voice":"espeak:en-us"}`)
	require.Equal(t, 201, st, "%v", ag)
	st, num := sv.call("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550100","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", num)
	st, _ = sv.call("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, objID(ag)))
	require.Equal(t, 200, st)

	model, modelURL := newCallerModel(t)
	m, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: modelURL, Model: "caller"})
	require.NoError(t, err)
	voice, err := espeak.New(espeak.Config{})
	require.NoError(t, err)
	defer voice.Close()
	cfg := sim.Config{Scenario: sim.Scenario{Prompt: "You want a table for two tonight.", TopicChange: "ask about parking",
		Accent: "en-AU", NoiseAsset: "street", SNRDB: 5, DTMF: "12#"}, Model: m, TTS: voice, MaxTurns: 2, KeepAudio: true,
		MaxDuration: 45 * time.Second}

	ph, err := sim.NewPhone(sim.PhoneConfig{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer ph.Close()
	res, err := ph.Call(context.Background(), sim.Target{Host: "127.0.0.1", Port: sv.sipPort, To: "+14155550100"}, cfg)
	require.NoError(t, err)
	t.Logf("telephony: %s, %.1f s, lines %v", res.End, res.Duration.Seconds(), res.Lines)
	require.Equal(t, "en-gb", res.Voice.Voice, "en-AU maps to espeak's en-gb")
	require.True(t, res.Voice.Mapped)
	require.Equal(t, "12#", res.DTMF)
	require.Equal(t, "rfc4733", res.DTMFVia)
	require.GreaterOrEqual(t, len(model.requests), 2, "the caller's words came from the model")
	require.Contains(t, model.requests[len(model.requests)-1], "ask about parking")

	c := simCall(t, sv, "sip:"+res.SIPCallID)
	snr := recordingSNR(t, sv, c, res)
	t.Logf("telephony: requested 5 dB SNR, measured %.2f dB from the recording", snr)
	require.InDelta(t, 5, snr, 2)
	require.Equal(t, "12#", historyDigits(t, sv, int64(c["call_id"].(float64))), "the agent received the digits as DTMF")

	// The same caller over the realtime WebSocket.
	wres, err := sim.CallWeb(context.Background(), sim.WebTarget{URL: "ws" + strings.TrimPrefix(sv.base, "http") + "/v1/realtime", Key: sv.key,
		AgentID: objID(ag)}, cfg)
	require.NoError(t, err)
	t.Logf("web: %s, %.1f s, lines %v", wres.End, wres.Duration.Seconds(), wres.Lines)
	require.NotZero(t, wres.CallID)
	require.Equal(t, "inband", wres.DTMFVia)
	_, wc := sv.call("GET", fmt.Sprintf("/v1/calls/%d", wres.CallID), "")
	require.Eventually(t, func() bool {
		_, wc = sv.call("GET", fmt.Sprintf("/v1/calls/%d", wres.CallID), "")
		return wc["status"] != "in_progress"
	}, 10*time.Second, 50*time.Millisecond)
	wsnr := recordingSNR(t, sv, wc, wres)
	t.Logf("web: requested 5 dB SNR, measured %.2f dB from the recording", wsnr)
	require.InDelta(t, 5, wsnr, 2)
	require.Equal(t, "12#", historyDigits(t, sv, wres.CallID), "the agent heard the in-band digits as DTMF")
	sv.stop(t)
}

// historyDigits is the DTMF digits in call id's history, in order.
func historyDigits(t *testing.T, sv *served, id int64) string {
	t.Helper()
	st, hist := sv.call("GET", fmt.Sprintf("/v1/calls/%d/history", id), "")
	require.Equal(t, 200, st, "%v", hist)
	digits := ""
	items, _ := hist["items"].([]any)
	for _, it := range items {
		if d, _ := it.(map[string]any)["digits"].(string); d != "" {
			digits += d
		}
	}
	return digits
}

// simCall waits for the ended call whose worker execution name is exec.
func simCall(t *testing.T, sv *served, exec string) map[string]any {
	var c map[string]any
	require.Eventually(t, func() bool {
		_, list := sv.call("GET", "/v1/calls", "")
		rs, _ := list["results"].([]any)
		for _, r := range rs {
			if m := r.(map[string]any); m["worker_execution_name"] == exec && m["status"] != "in_progress" {
				c = m
				return true
			}
		}
		return false
	}, 15*time.Second, 50*time.Millisecond)
	return c
}

// recordingSNR measures the caller's SNR on the caller (left) channel of
// call c's recording: the frames where the simulated caller sent clean
// speech against those where it sent only noise (no key's tone), aligned on the audio
// it sent (res.Sent, by cross-correlating the frames' power).
func recordingSNR(t *testing.T, sv *served, c map[string]any, res *sim.Result) float64 {
	t.Helper()
	rec := callerFramePower(t, sv, c)
	sf := res.Rate / 50
	var sent []float64
	for i := 0; i+sf <= len(res.Sent); i += sf {
		var p float64
		for _, v := range res.Sent[i : i+sf] {
			p += float64(v) * float64(v)
		}
		sent = append(sent, p/float64(sf))
	}
	// Align: the lag (recording frame = sent frame + lag) where the
	// frames' log power correlates best.
	logp := func(p float64) float64 { return math.Sqrt(p) } // amplitude: speech peaks lead the match
	best, bestLag := math.Inf(-1), 0
	for lag := -100; lag <= 250; lag++ {
		var s float64
		n := 0
		for i := range sent {
			if j := i + lag; j >= 0 && j < len(rec) {
				s += logp(sent[i]) * logp(rec[j])
				n++
			}
		}
		if n > 200 && s/float64(n) > best {
			best, bestLag = s/float64(n), lag
		}
	}
	// The receiver's jitter buffer may change its delay during the call
	// (after the DTMF events, when no audio came): each utterance is
	// aligned again, within 100 ms of the global lag.
	lags := make([]int, len(res.Speech))
	for i := range lags {
		lags[i] = bestLag
	}
	for i := 0; i < len(res.Speech); {
		if !res.Speech[i] {
			i++
			continue
		}
		end := i
		for end < len(res.Speech) && (res.Speech[end] || end+10 < len(res.Speech) && slices.Contains(res.Speech[end:end+10], true)) {
			end++
		}
		from, to := max(0, i-10), min(len(sent), end+10)
		best, local := math.Inf(-1), bestLag
		for lag := bestLag - 5; lag <= bestLag+5; lag++ {
			var s float64
			for k := from; k < to; k++ {
				if j := k + lag; j >= 0 && j < len(rec) {
					s += logp(sent[k]) * logp(rec[j])
				}
			}
			if s > best {
				best, local = s, lag
			}
		}
		for k := from; k < to; k++ {
			lags[k] = local
		}
		i = end
	}
	var noise, total []float64
	speechNear := func(i int) bool { // speech or a key's tone
		for k := max(0, i-5); k <= min(len(res.Speech)-1, i+5); k++ {
			if res.Speech[k] || k < len(res.Tone) && res.Tone[k] {
				return true
			}
		}
		return false
	}
	for i := range res.Speech {
		j := i + lags[i]
		if j < 0 || j >= len(rec) || sent[i] < 1 { // nothing sent (a DTMF event)
			continue
		}
		switch {
		case res.Speech[i] && i > 0 && i+1 < len(res.Speech) && res.Speech[i-1] && res.Speech[i+1]:
			total = append(total, rec[j])
		case !speechNear(i):
			noise = append(noise, rec[j])
		}
	}
	mean := func(x []float64) float64 {
		var s float64
		for _, v := range x {
			s += v
		}
		return s / float64(len(x))
	}
	require.Greater(t, len(noise), 100, "at least 2 s of noise-only audio")
	require.Greater(t, len(total), 50, "at least 1 s of speech")
	pn, pt := mean(noise), mean(total)
	// The channel's gain on the caller's speech: the median, over speech
	// frames, of recorded over sent power. A frame the node's jitter
	// buffer concealed (a late packet on a loaded machine) is an outlier
	// here, not a change of the mix; the mean above counts it.
	var ratios []float64
	for i := range res.Speech {
		j := i + lags[i]
		if j >= 0 && j < len(rec) && sent[i] >= 1 && res.Speech[i] && i > 0 && i+1 < len(res.Speech) && res.Speech[i-1] && res.Speech[i+1] {
			ratios = append(ratios, rec[j]/sent[i])
		}
	}
	slices.Sort(ratios)
	var ps float64
	for i := range res.Speech {
		if res.Speech[i] && i > 0 && i+1 < len(res.Speech) && res.Speech[i-1] && res.Speech[i+1] && sent[i] >= 1 {
			ps += sent[i]
		}
	}
	ps /= float64(len(ratios))
	gained := 10 * math.Log10((ratios[len(ratios)/2]*ps-pn)/pn)
	t.Logf("SNR from mean powers %.2f dB; with the channel's median gain on the sent speech %.2f dB", 10*math.Log10((pt-pn)/pn), gained)
	t.Logf("lag %d frames; %d noise frames at %.1f dBFS, %d speech frames at %.1f dBFS", bestLag, len(noise), 10*math.Log10(pn/(32768*32768)), len(total), 10*math.Log10(pt/(32768*32768)))
	return gained
}

// callerFramePower reads call c's stereo recording from sv's blob store
// and returns the caller (left) channel's mean power per 20 ms frame.
func callerFramePower(t *testing.T, sv *served, c map[string]any) []float64 {
	t.Helper()
	url, _ := c["recording_url"].(string)
	require.NotEmpty(t, url, "%v", c)
	f, err := os.Open(filepath.Join(sv.dir, "blobs", strings.TrimPrefix(url, "blob://")))
	require.NoError(t, err)
	defer f.Close()
	format, pcm, err := wav.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, 2, format.Channels)
	frame := format.SampleRate / 50
	var rec []float64 // the caller channel's power per 20 ms frame
	for i := 0; i+2*frame <= len(pcm); i += 2 * frame {
		var p float64
		for j := 0; j < frame; j++ {
			v := float64(pcm[i+2*j])
			p += v * v
		}
		rec = append(rec, p/float64(frame))
	}
	return rec
}
