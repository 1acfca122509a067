package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/wav"
)

// speechWAV writes espeak-ng speech followed by 2 s of silence, the fake
// microphone's loop: a caller turn, then room for the agent to answer.
func speechWAV(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("espeak-ng")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("espeak-ng is required under CI=true")
		}
		t.Skip("espeak-ng not installed; skipping the browser test")
	}
	out, err := exec.Command(bin, "--stdout", "-s", "150", "Hello, I would like to book a table for two people tonight.").Output()
	require.NoError(t, err)
	f, pcm, err := wav.ReadAll(bytes.NewReader(out))
	if err != nil && len(pcm) == 0 {
		require.NoError(t, err)
	}
	pcm = append(pcm, make([]int16, 2*f.SampleRate)...)
	b, err := wav.Encode(wav.Format{Encoding: f.Encoding, SampleRate: f.SampleRate, Channels: 1}, pcm)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "caller.wav")
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// liveServe runs voiced serve on loopback and returns its base URL and
// the first-use API key.
func liveServe(t *testing.T, extra ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuf
	done := make(chan error, 1)
	go func() {
		args := append([]string{"serve", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--webrtc-udp-addr", "127.0.0.1:0",
			"--sip-addr", "127.0.0.1:0", "--rtp-ports", "41000-41999", "--log-level", "info", "--call-loopback"}, extra...)
		done <- run(ctx, args, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	addrRe := regexp.MustCompile(`http_addr=(127\.0\.0\.1:\d+)`)
	var addr string
	require.Eventually(t, func() bool {
		if m := addrRe.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	}, 20*time.Second, 20*time.Millisecond, "stderr: %s", stderr.String())
	key := regexp.MustCompile(`sk_live_[0-9a-f]+`).FindString(stdout.String())
	require.NotEmpty(t, key)
	require.NotContains(t, stderr.String(), "browser calls off")
	return "http://" + addr, key
}

// apiCall sends a JSON request with the API key and decodes the answer.
func apiCall(t testing.TB, base, key, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && len(b) > 0 {
		require.NoError(t, json.Unmarshal(b, out), "%s %s: %s", method, path, b)
	}
	return res.StatusCode
}

// pageStats reads the call's WebRTC statistics in the page.
const pageStats = `(async (pc) => {
  if (!pc) return null;
  const r = {};
  (await pc.getStats()).forEach((x) => {
    if (x.type === "inbound-rtp" && x.kind === "audio") {
      r.bytesReceived = x.bytesReceived; r.packetsReceived = x.packetsReceived;
      r.totalAudioEnergy = x.totalAudioEnergy || 0; r.totalSamplesReceived = x.totalSamplesReceived || 0;
      r.jitter = x.jitter || 0;
    }
    if (x.type === "outbound-rtp" && x.kind === "audio") { r.bytesSent = x.bytesSent; r.packetsSent = x.packetsSent; }
    if (x.type === "candidate-pair" && x.nominated && x.state === "succeeded") { r.rtt = x.currentRoundTripTime; }
  });
  return r;
})`

type rtcStats struct {
	BytesReceived, PacketsReceived, BytesSent, PacketsSent float64
	TotalAudioEnergy, TotalSamplesReceived, Jitter, RTT    float64
}

// TestBrowserWidgetCall drives headless Chromium through the widget on a
// localhost page and the mic-session page, against a real voiced serve:
// the call connects (ICE, DTLS), the fake microphone's speech reaches the
// engine and is recorded, the engine's audio plays in the page (WebRTC
// stats), the transcript shows the caller's turns, and hang-up ends the
// call with a billed record. Foreign origins are refused.
func TestBrowserWidgetCall(t *testing.T) {
	chromiumPath(t)
	wavPath := speechWAV(t)
	base, key := liveServe(t)

	var ag map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/agents", map[string]any{"name": "Front desk", "product": "storm-base"}, &ag))
	agentID := int64(ag["id"].(float64))
	var pk map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/publishable-key", map[string]any{"agent_id": agentID, "allowed_domains": []string{"*.shop.example"}}, &pk))

	// The embedding site: a page with the one-tag embed.
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>Shop</title></head><body><h1>Shop</h1>
<script src="%s/widget.js" data-key="%s" data-label="Call us"></script></body></html>`, base, pk["key"])
	}))
	defer page.Close()
	_, port, _ := net.SplitHostPort(page.Listener.Addr().String())
	shop, foreign := "http://www.shop.example:"+port, "http://foreign.example:"+port
	ch := startChromium(t, wavPath,
		"--host-resolver-rules=MAP www.shop.example 127.0.0.1, MAP foreign.example 127.0.0.1",
		"--unsafely-treat-insecure-origin-as-secure="+shop+","+foreign)

	t.Run("widget call on localhost", func(t *testing.T) {
		ch.navigate("http://localhost:" + port + "/")
		var state string
		ch.eval(`window.voicedWidget.state`, &state)
		require.Equal(t, "idle", state)
		ch.eval(`(() => {
			window.__t0 = performance.now();
			window.__states = [];
			addEventListener("voiced:state", (e) => { window.__states.push(e.detail.state); if (e.detail.state === "connected") window.__tc = performance.now(); });
			voicedWidget.start();
			return true;
		})()`, nil)
		require.Eventually(t, func() bool {
			ch.eval(`voicedWidget.state`, &state)
			return state == "connected" || state == "error"
		}, 15*time.Second, 50*time.Millisecond)
		var detail string
		ch.eval(`voicedWidget.detail`, &detail)
		require.Equal(t, "connected", state, detail)
		var setupMS float64
		ch.eval(`window.__tc - window.__t0`, &setupMS)
		t.Logf("widget: click to connected (microphone, offer, gathering, POST, ICE, DTLS) in %.0f ms", setupMS)
		var callID int64
		ch.eval(`voicedWidget.callId`, &callID)
		require.Positive(t, callID)

		// The engine's audio arrives in the page: the loopback agent plays
		// each caller turn back, so energy shows once a turn has ended.
		var st0, st rtcStats
		ch.eval(pageStats+`(voicedWidget.pc)`, &st0)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			ch.eval(pageStats+`(voicedWidget.pc)`, &st)
			if st.TotalAudioEnergy > 0 && st.BytesReceived > st0.BytesReceived+2000 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		// Packets, not bytes: the answer asks for wideband (maxplaybackrate), so
		// Chromium sends SILK at about half the bytes of fullband hybrid.
		require.Greater(t, st.PacketsSent, 100.0, "the microphone's audio left the page: %+v", st)
		require.Greater(t, st.BytesReceived, st0.BytesReceived+2000, "agent audio reached the page: %+v, at connect %+v", st, st0)
		require.Greater(t, st.TotalAudioEnergy, 0.0, "agent audio has energy: %+v", st)
		t.Logf("page stats at connect %+v, after the first echo %+v", st0, st)

		// The live transcript shows the caller's turn in the widget.
		var lines int
		require.Eventually(t, func() bool {
			ch.eval(`document.querySelector("[data-voiced-widget]").shadowRoot.querySelectorAll(".line").length`, &lines)
			return lines > 0
		}, 15*time.Second, 100*time.Millisecond)
		var first string
		ch.eval(`document.querySelector("[data-voiced-widget]").shadowRoot.querySelector(".line").textContent`, &first)
		require.Contains(t, first, "You:")
		require.Contains(t, first, "s of speech")

		// The node's /metrics counts the call's session and its packets.
		m0 := scrape(t, base)
		requireSeries(t, m0, seriesTicks, seriesLateP99, seriesWebIn, seriesWebOut, seriesWebSes)
		require.Equal(t, 1.0, m0[seriesWebSes])
		require.Greater(t, m0[seriesWebIn], 50.0)

		// Hang up: the server ends and bills the call.
		var call map[string]any
		require.Equal(t, 200, apiCall(t, base, key, "GET", fmt.Sprintf("/v1/calls/%d", callID), nil, &call))
		require.Equal(t, "web", call["direction"])
		require.Equal(t, "in_progress", call["status"])
		hung := time.Now()
		ch.eval(`voicedWidget.hangup(); voicedWidget.state`, &state)
		require.Equal(t, "ended", state)
		require.Eventually(t, func() bool {
			apiCall(t, base, key, "GET", fmt.Sprintf("/v1/calls/%d", callID), nil, &call)
			return call["status"] == "completed" && call["billed_at"] != nil
		}, 15*time.Second, 100*time.Millisecond, "call after hang-up: %v", call)
		t.Logf("hang-up to billed call record: %v", time.Since(hung).Round(time.Millisecond))
		require.Equal(t, "caller_hangup", call["end_reason"])
		require.Greater(t, call["billing_total_cents"], 0.0)
		require.Equal(t, "Front desk", pk["agent_name"])
		q := requireMediaQuality(t, call["quality"], "opus")
		m1 := scrape(t, base)
		require.Zero(t, m1[seriesWebSes], "the session ended")
		require.GreaterOrEqual(t, m1[seriesWebIn], max(m0[seriesWebIn], q["packets_received"].(float64)))
		// The pacer ticked during the call; it may idle once no session is
		// left, so the count after hang-up need not have grown.
		require.Greater(t, m0[seriesTicks], 50.0)
		require.GreaterOrEqual(t, m1[seriesTicks], m0[seriesTicks])

		// The caller's speech reached the engine: the recording's caller
		// channel holds it.
		left := recordingCaller(t, base, key, callID)
		require.Greater(t, rms(left), 300.0, "the caller's speech in the recording")
	})

	t.Run("wildcard subdomain connects, a foreign origin is refused", func(t *testing.T) {
		ch.navigate(shop + "/")
		ch.eval(`voicedWidget.start(); true`, nil)
		var state string
		require.Eventually(t, func() bool {
			ch.eval(`voicedWidget.state`, &state)
			return state == "connected" || state == "error"
		}, 15*time.Second, 50*time.Millisecond)
		require.Equal(t, "connected", state)
		ch.eval(`voicedWidget.hangup(); voicedWidget.state`, &state)

		ch.navigate(foreign + "/")
		ch.eval(`voicedWidget.start(); true`, nil)
		require.Eventually(t, func() bool {
			ch.eval(`voicedWidget.state`, &state)
			return state == "error" || state == "connected"
		}, 15*time.Second, 50*time.Millisecond)
		require.Equal(t, "error", state)
		var detail string
		ch.eval(`voicedWidget.detail`, &detail)
		require.Contains(t, detail, "not allowed")
		var callID any
		ch.eval(`voicedWidget.callId`, &callID)
		require.Nil(t, callID, "no call was created")
	})

	t.Run("mic session page", func(t *testing.T) {
		ch.navigate(fmt.Sprintf("%s/mic?agent_id=%d", base, agentID))
		ch.eval(fmt.Sprintf(`document.getElementById("apikey").value = %q; micSession.start(); true`, key), nil)
		var state string
		require.Eventually(t, func() bool {
			ch.eval(`micSession.state`, &state)
			return state == "connected" || state == "error"
		}, 15*time.Second, 50*time.Millisecond)
		var detail string
		ch.eval(`micSession.detail`, &detail)
		require.Equal(t, "connected", state, detail)
		var callID int64
		ch.eval(`micSession.callId`, &callID)
		var st rtcStats
		require.Eventually(t, func() bool {
			ch.eval(pageStats+`(micSession.pc)`, &st)
			return st.TotalAudioEnergy > 0
		}, 20*time.Second, 200*time.Millisecond, "agent audio in the mic page: %+v", st)
		ch.eval(`micSession.hangup(); micSession.state`, &state)
		var call map[string]any
		require.Eventually(t, func() bool {
			apiCall(t, base, key, "GET", fmt.Sprintf("/v1/calls/%d", callID), nil, &call)
			return call["status"] == "completed" && call["billed_at"] != nil
		}, 15*time.Second, 100*time.Millisecond, "mic call: %v", call)
		require.Equal(t, "test", call["direction"])
		require.Equal(t, "storm-base", call["product"])
		require.Greater(t, call["billing_total_cents"], 0.0)
		requireMediaQuality(t, call["quality"], "opus")
	})
}

// recordingCaller downloads a call's recording and returns its caller
// (left) channel.
func recordingCaller(t *testing.T, base, key string, callID int64) []int16 {
	t.Helper()
	var audio map[string]any
	require.Equal(t, 200, apiCall(t, base, key, "GET", fmt.Sprintf("/v1/calls/%d/audio", callID), nil, &audio))
	u := audio["url"].(string)
	if !strings.HasPrefix(u, "http") {
		u = base + u
	}
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	f, pcm, err := wav.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, 2, f.Channels)
	left := make([]int16, len(pcm)/2)
	for i := range left {
		left[i] = pcm[2*i]
	}
	return left
}

func rms(s []int16) float64 {
	if len(s) == 0 {
		return 0
	}
	var sum float64
	for _, v := range s {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(len(s)))
}

// TestBrowserConversation runs a browser call through the full engine:
// speech-to-text is a fake OpenAI transcription server (the provider
// boundary), the model the offline echo, the voice espeak-ng. The agent
// greets, the fake microphone's speech is transcribed, and the answer is
// spoken: the page's transcript shows all three with their words.
func TestBrowserConversation(t *testing.T) {
	chromiumPath(t)
	wavPath := speechWAV(t)
	const heard = "I would like to book a table for two."
	var transcribed atomic.Int64
	stt := fakeSTT(t, func(pcm []int16) string {
		transcribed.Add(1)
		if rms(pcm) < 100 {
			return "" // silence has no words
		}
		return heard
	})
	base, key := liveServe(t, "--call-loopback=false", "--stt-base-url", stt)

	var ag map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/agents", map[string]any{"name": "Host", "first_message": "Welcome to the shop.",
		"voice": "espeak:en-us"}, &ag))
	var pk map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/publishable-key", map[string]any{"agent_id": ag["id"], "allowed_domains": []string{"shop.example"}}, &pk))
	ch := startChromium(t, wavPath)
	widgetCall(t, ch, base, pk["key"].(string), "")

	type line struct{ Role, Text string }
	var lines []line
	require.Eventually(t, func() bool {
		ch.eval(`voicedWidget.transcript`, &lines)
		agent, user, answer := false, false, false
		for _, l := range lines {
			agent = agent || (l.Role == "assistant" && isGreeting(l.Text))
			user = user || (l.Role == "user" && l.Text == heard)
			// The fake microphone loops its sentence after 2 s of
			// silence, so the caller talks over the answer and the
			// agent, pausing at the caller's onset, stops there: the
			// answer's item holds what was played.
			answer = answer || (l.Role == "assistant" && len(strings.Fields(l.Text)) >= 4 && strings.HasPrefix(heard, l.Text))
		}
		return agent && user && answer
	}, 30*time.Second, 200*time.Millisecond, "transcript: %+v", &lines)
	var st rtcStats
	ch.eval(pageStats+`(voicedWidget.pc)`, &st)
	require.Greater(t, st.TotalAudioEnergy, 0.0, "the agent's speech played: %+v", st)
	require.Positive(t, transcribed.Load())
	var callID int64
	ch.eval(`voicedWidget.callId`, &callID)
	ch.eval(`voicedWidget.hangup(); true`, nil)
	var call map[string]any
	require.Eventually(t, func() bool {
		apiCall(t, base, key, "GET", fmt.Sprintf("/v1/calls/%d", callID), nil, &call)
		return call["status"] == "completed" && call["billed_at"] != nil
	}, 15*time.Second, 100*time.Millisecond)
	q := requireMediaQuality(t, call["quality"], "opus")
	requireAnswered(t, q)
	require.NotNil(t, q["rtt_ms"], "Chromium's RTCP receiver reports about the agent's speech give the round trip")
	var tr struct {
		Turns []struct{ Role, Text string } `json:"turns"`
	}
	require.Equal(t, 200, apiCall(t, base, key, "GET", fmt.Sprintf("/v1/calls/%d/transcript", callID), nil, &tr))
	require.GreaterOrEqual(t, len(tr.Turns), 3, "the call's transcript is recorded: %+v", tr)
	// Turns are ordered by when they started; the fake microphone may start
	// talking before the greeting does, so look for the greeting anywhere.
	greeted := false
	for _, turn := range tr.Turns {
		greeted = greeted || (turn.Role == "assistant" && isGreeting(turn.Text))
	}
	require.True(t, greeted, "the greeting is in the recorded transcript: %+v", tr)
}

// isGreeting reports whether text is the agent's greeting, whole or cut
// short: the fake microphone loops its speech and may barge in while the
// greeting plays, which truncates the item to what was heard.
func isGreeting(text string) bool {
	const greeting = "Welcome to the shop."
	return len(strings.Fields(text)) > 0 && strings.HasPrefix(greeting, text)
}
