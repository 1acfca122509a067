package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/sip/siptest"
)

// listenTone is the caller's tone: far from speech formants' energy, so
// the Goertzel filter tells it from the agent's espeak-ng voice.
const (
	listenTone     = 1000.0
	listenToneFrom = 4500 * time.Millisecond
	listenToneLen  = 2 * time.Second
	listenCallLen  = 8 * time.Second
)

// TestListenToPhoneCall, in serve: sipp calls a number whose agent
// greets with espeak-ng, then plays a 1 kHz tone; two listeners (pcm16
// and g711_ulaw) connect through POST /v1/calls/{id}/listen while the
// call runs and hear both parties: the caller's tone, the agent's
// speech, with an energy envelope that matches the call's recording
// (caller plus agent), until the caller hangs up and both sockets close
// with 1000.
func TestListenToPhoneCall(t *testing.T) {
	siptest.Binary(t, "sipp", "sip-tester")
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	m := &whisperModel{}
	model := m.server(t)
	sv := startTelephonyServe(t, "--call-loopback=false", "--llm-base-url", model.URL+"/v1", "--stt-base-url", listenTranscriber(t)+"/v1")
	defer sv.stop(t)
	host := strings.TrimPrefix(sv.base, "http://")
	listenScenario(t, sv.call, filepath.Join(sv.dir, "blobs"), sv.sipPort, host)
}

// listenTranscriber is the speech-to-text provider at its boundary: every
// utterance is the same question.
func listenTranscriber(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"text": "How much is it?"}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// listened is what one listener received.
type listened struct {
	msgs   [][]byte
	closed wsutil.ClosedError
	err    error
}

// listenScenario places a sipp call to a fresh number on sipPort (serve,
// or a media node), listens to it through api (serve's API, or
// control's) and checks the audio against the call's recording in
// blobDir; the listen URLs must name nodeHost, the node holding the call.
func listenScenario(t *testing.T, api func(method, path, body string) (int, map[string]any), blobDir string, sipPort int, nodeHost string) {
	const rate8 = 8000
	number := fmt.Sprintf("+1415555%04d", time.Now().UnixNano()%10000)
	st, conn := api("POST", "/v1/voip-connections", `{"host":"127.0.0.1","port":5999,"allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU"]}`)
	require.Equal(t, 201, st, "%v", conn)
	st, ag := api("POST", "/v1/agents", `{"name":"Listened","voice":"espeak:en-us","first_message":"Hello, thank you for calling the corner shop."}`)
	require.Equal(t, 201, st, "%v", ag)
	st, num := api("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":%q,"voip_connection_id":%d}`, number, objID(conn)))
	require.Equal(t, 201, st, "%v", num)
	st, num = api("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, objID(ag)))
	require.Equal(t, 200, st, "%v", num)

	caller := make([]int16, int(listenCallLen/time.Second)*rate8)
	from := int(listenToneFrom * rate8 / time.Second)
	for i := range int(listenToneLen * rate8 / time.Second) {
		caller[from+i] = int16(6000 * math.Sin(2*math.Pi*listenTone*float64(i)/rate8))
	}
	pcap := filepath.Join(t.TempDir(), "caller.pcap")
	require.NoError(t, siptest.WritePCMUPcap(pcap, caller))
	scen := renderScenario(t, "uac_pcap.xml", map[string]any{"Pcap": pcap})
	uac := siptest.Sipp(t, scen, 40*time.Second, "-d", strconv.Itoa(int((listenCallLen+500*time.Millisecond)/time.Millisecond)),
		"-s", number, "-m", "1", "127.0.0.1:"+strconv.Itoa(sipPort))

	var id int64
	require.Eventually(t, func() bool {
		_, list := api("GET", "/v1/calls?direction=inbound&limit=5", "")
		rs, _ := list["results"].([]any)
		for _, r := range rs {
			if c := r.(map[string]any); c["to_number"] == number && c["status"] == "in_progress" {
				id = int64(c["call_id"].(float64))
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond)
	path := fmt.Sprintf("/v1/calls/%d/listen", id)
	results := map[string]chan listened{}
	for _, format := range []string{"pcm16", "g711_ulaw"} {
		st, res := api("POST", path+"?format="+format, "")
		require.Equal(t, 200, st, "%v", res)
		require.Equal(t, format, res["format"])
		u, err := url.Parse(res["url"].(string))
		require.NoError(t, err)
		require.Equal(t, "ws", u.Scheme)
		require.Equal(t, nodeHost, u.Host, "the socket is the node's that holds the call")
		require.Equal(t, path, u.Path)
		ch := make(chan listened, 1)
		results[format] = ch
		go listenTo(t, u.String(), ch)
	}
	require.NoError(t, uac.Wait())

	var c map[string]any
	require.Eventually(t, func() bool {
		_, c = api("GET", fmt.Sprintf("/v1/calls/%d", id), "")
		return c["status"] != "in_progress"
	}, 15*time.Second, 50*time.Millisecond)
	require.Equal(t, "completed", c["status"], "%v", c)
	got := map[string]listened{}
	for f, ch := range results {
		select {
		case got[f] = <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s listener's socket did not close at the call's end", f)
		}
		require.NoError(t, got[f].err, f)
		require.Equal(t, ws.StatusNormalClosure, got[f].closed.Code, "%s: %v", f, got[f].closed)
		require.Equal(t, "call ended", got[f].closed.Reason)
	}

	var pcm []int16
	for _, msg := range got["pcm16"].msgs {
		require.Len(t, msg, 640, "20 ms of 16 kHz PCM16")
		for i := 0; i < len(msg); i += 2 {
			pcm = append(pcm, int16(binary.LittleEndian.Uint16(msg[i:])))
		}
	}
	var ulaw []int16
	for _, msg := range got["g711_ulaw"].msgs {
		require.Len(t, msg, 160, "20 ms of 8 kHz µ-law")
		out := make([]int16, 160)
		g711.DecodeULawTo(out, msg)
		ulaw = append(ulaw, out...)
	}
	heard := time.Duration(len(pcm)) * time.Second / 16000
	require.Greater(t, heard, listenCallLen-2*time.Second, "the listener heard the call from its first seconds to its end")

	// Both parties: frames of the caller's tone, frames of the agent's
	// voice (loud, not the tone).
	tone, voice := 0, 0
	for i := 0; i+320 <= len(pcm); i += 320 {
		f := pcm[i : i+320]
		r, share := rms(f), goertzelShare(f, listenTone, 16000)
		switch {
		case r > 1000 && share > 0.8:
			tone++
		case r > 300 && share < 0.3:
			voice++
		}
	}
	t.Logf("listened %v: %d tone frames, %d voice frames", heard, tone, voice)
	require.GreaterOrEqual(t, tone, int(listenToneLen/(20*time.Millisecond))*3/4, "the caller's tone is in the mix")
	require.GreaterOrEqual(t, voice, 25, "the agent's voice is in the mix")

	// The envelope follows the call's recording (both channels mixed).
	require.NotNil(t, c["recording_url"], "%v", c)
	f, err := os.Open(filepath.Join(blobDir, strings.TrimPrefix(c["recording_url"].(string), "blob://")))
	require.NoError(t, err)
	format, rec, err := wav.ReadAll(f)
	f.Close()
	require.NoError(t, err)
	require.Equal(t, 2, format.Channels)
	mix := make([]int16, len(rec)/2)
	for i := range mix {
		mix[i] = int16(max(-32768, min(32767, int32(rec[2*i])+int32(rec[2*i+1]))))
	}
	recEnv, pcmEnv, ulawEnv := envelope(mix, format.SampleRate), envelope(pcm, 16000), envelope(ulaw, 8000)
	corr, lag := bestCorrelation(recEnv, pcmEnv)
	t.Logf("pcm16 listener vs recording: correlation %.3f at lag %d frames; µ-law listener vs pcm16: %.3f", corr, lag, must(bestCorrelation(pcmEnv, ulawEnv)))
	require.Greater(t, corr, 0.9, "the listener hears what the call recorded")
	uc, _ := bestCorrelation(pcmEnv, ulawEnv)
	require.Greater(t, uc, 0.9, "the µ-law listener hears the same")
}

func must(v float64, _ int) float64 { return v }

// goertzelShare is the share of f's energy at freq.
func goertzelShare(f []int16, freq float64, rate int) float64 {
	w := 2 * math.Pi * freq / float64(rate)
	c := 2 * math.Cos(w)
	var s1, s2, total float64
	for _, v := range f {
		x := float64(v)
		s1, s2 = x+c*s1-s2, s1
		total += x * x
	}
	if total == 0 {
		return 0
	}
	p := s1*s1 + s2*s2 - c*s1*s2
	return 2 * p / (float64(len(f)) * total)
}

// envelope is the RMS of each 20 ms of pcm at rate.
func envelope(pcm []int16, rate int) []float64 {
	n := rate / 50
	var out []float64
	for i := 0; i+n <= len(pcm); i += n {
		out = append(out, rms(pcm[i:i+n]))
	}
	return out
}

// bestCorrelation is the highest Pearson correlation of b against a
// shifted window of a (b[i] with a[i+lag]) over lags that keep at least
// 2 s of overlap, and that lag.
func bestCorrelation(a, b []float64) (float64, int) {
	best, at := -1.0, 0
	for lag := -len(b) + 100; lag < len(a)-100; lag++ {
		var x, y []float64
		for i := range b {
			if j := i + lag; j >= 0 && j < len(a) {
				x, y = append(x, a[j]), append(y, b[i])
			}
		}
		if len(x) < 100 {
			continue
		}
		if r := pearson(x, y); r > best {
			best, at = r, lag
		}
	}
	return best, at
}

func pearson(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
		syy += (y[i] - my) * (y[i] - my)
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// TestWhisperAndListenBrowserCall, in serve: Chromium holds a widget
// (WebRTC) call whose fake microphone speaks (espeak-ng); the agent
// greets with espeak-ng. Once connected, a listener joins (the call's
// voices reach it; its socket closes with 1000 at the call's end) and a
// whisper is given (202: browser calls take whispers). The caller's turn
// then reaches the model with the whisper as its last message, and the
// agent answers the guided way.
func TestWhisperAndListenBrowserCall(t *testing.T) {
	chromiumPath(t)
	wavPath := speechWAV(t)
	m := &whisperModel{}
	model := m.server(t)
	stt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		text := "How much is it?"
		if f, _, err := r.FormFile("file"); err == nil {
			if _, pcm, _ := wav.ReadAll(f); rms(pcm) < 100 {
				text = "" // silence has no words
			}
			f.Close()
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"text": %q}`, text)
	}))
	defer stt.Close()
	base, key := liveServe(t, "--call-loopback=false", "--stt-base-url", stt.URL+"/v1", "--llm-base-url", model.URL+"/v1")
	var ag, pk map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/agents", map[string]any{"name": "Web sales", "first_message": "Welcome to the shop.",
		"voice": "espeak:en-us", "prompt": "Sell plans."}, &ag))
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/publishable-key", map[string]any{"agent_id": ag["id"], "allowed_domains": []string{"shop.example"}}, &pk))
	ch := startChromium(t, wavPath)
	widgetCall(t, ch, base, pk["key"].(string), "")
	var id int64
	ch.eval(`voicedWidget.callId`, &id)

	var res map[string]any
	require.Equal(t, 200, apiCall(t, base, key, "POST", fmt.Sprintf("/v1/calls/%d/listen", id), map[string]any{}, &res), "%v", res)
	heard := make(chan listened, 1)
	go listenTo(t, res["url"].(string), heard)
	require.Equal(t, 202, apiCall(t, base, key, "POST", fmt.Sprintf("/v1/calls/%d/whisper", id), map[string]any{"text": whisperText}, &res),
		"a browser call takes a whisper: %v", res)
	require.Eventually(t, func() bool { return len(m.requests()) > 0 }, 30*time.Second, 100*time.Millisecond, "the caller's turn reaches the model")
	first := m.requests()[0]
	last := first[len(first)-1]
	require.Equal(t, "system", last.Role, "the whisper is the request's last message: %v", first)
	require.Contains(t, m.msgText(last), whisperText)
	type line struct{ Role, Text string }
	var lines []line
	require.Eventually(t, func() bool {
		ch.eval(`voicedWidget.transcript`, &lines)
		for _, l := range lines {
			// The looping fake microphone may cut the answer short.
			if l.Role == "assistant" && len(strings.Fields(l.Text)) >= 3 && strings.HasPrefix(guidedReply, l.Text) {
				return true
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "the agent answers the guided way: %+v", &lines)
	ch.eval(`voicedWidget.hangup(); true`, nil)

	var l listened
	select {
	case l = <-heard:
	case <-time.After(20 * time.Second):
		t.Fatal("the listener's socket did not close at the call's end")
	}
	require.NoError(t, l.err)
	require.Equal(t, ws.StatusNormalClosure, l.closed.Code, "%v", l.closed)
	require.Equal(t, "call ended", l.closed.Reason)
	loud := 0
	for _, msg := range l.msgs {
		require.Len(t, msg, 640)
		f := make([]int16, 320)
		for i := range f {
			f[i] = int16(binary.LittleEndian.Uint16(msg[2*i:]))
		}
		if rms(f) > 300 {
			loud++
		}
	}
	t.Logf("browser call %d: the listener got %d frames, %d loud", id, len(l.msgs), loud)
	require.GreaterOrEqual(t, loud, 50, "the call's voices reach the listener")
}

// listenTo reads a listen socket until it closes.
func listenTo(t *testing.T, u string, out chan<- listened) {
	var l listened
	defer func() { out <- l }()
	nc, br, _, err := ws.Dial(context.Background(), u)
	if err != nil {
		l.err = err
		return
	}
	defer nc.Close()
	var r io.Reader = nc
	if br != nil {
		r = io.MultiReader(br, nc)
	}
	rw := struct {
		io.Reader
		io.Writer
	}{r, nc}
	for {
		_ = nc.SetReadDeadline(time.Now().Add(15 * time.Second))
		data, op, err := wsutil.ReadServerData(rw)
		if errors.As(err, &l.closed) {
			return
		}
		if err != nil {
			l.err = err
			return
		}
		if op == ws.OpBinary {
			l.msgs = append(l.msgs, data)
		}
	}
}

// TestListenToRealtimeSession, in serve: a realtime session with a saved
// agent that greets with espeak-ng; a listener joins through POST
// /v1/calls/{id}/listen, then the client appends a 1 kHz tone in real
// time (100 ms chunks of 16 kHz PCM). The listener hears both parties
// (the agent's voice, the caller's tone) at 16 kHz, and its socket closes
// with 1000 when the client ends the session.
func TestListenToRealtimeSession(t *testing.T) {
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	m := &whisperModel{}
	model := m.server(t)
	base, key := liveServe(t, "--call-loopback=false", "--stt-base-url", listenTranscriber(t)+"/v1", "--llm-base-url", model.URL+"/v1")
	var ag map[string]any
	require.Equal(t, 201, apiCall(t, base, key, "POST", "/v1/agents", map[string]any{"name": "Realtime listened", "voice": "espeak:en-us",
		"first_message": "Hello, thank you for calling the corner shop. How can I help you today?"}, &ag))
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	nc, rw := dialRealtimeAgent(t, ctx, base, key, objID(ag))
	defer nc.Close()
	// The server's events, read on their own goroutine: the call's id
	// from session.updated, the greeting's response.done.
	var callID atomic.Int64
	var greeted atomic.Bool
	events := make(chan error, 1)
	go func() {
		for {
			data, op, err := wsutil.ReadServerData(rw)
			if err != nil {
				events <- err
				return
			}
			if op != ws.OpText {
				continue
			}
			var ev struct {
				Type    string `json:"type"`
				Session struct {
					CallID string `json:"call_id"`
				} `json:"session"`
			}
			if err := json.Unmarshal(data, &ev); err != nil || ev.Type == "error" {
				events <- fmt.Errorf("event %s: %v", data, err)
				return
			}
			if ev.Type == "session.updated" {
				id, _ := strconv.ParseInt(ev.Session.CallID, 10, 64)
				callID.CompareAndSwap(0, id)
			}
			if ev.Type == "response.done" {
				greeted.Store(true)
			}
		}
	}()
	require.Eventually(t, func() bool { return callID.Load() != 0 }, 10*time.Second, 5*time.Millisecond, "no session.updated")
	id := callID.Load()

	// session.updated goes out just before the engine starts (and its tap
	// is registered): a 409 in that window is retried.
	var res map[string]any
	var st int
	for deadline := time.Now().Add(2 * time.Second); ; {
		if st = apiCall(t, base, key, "POST", fmt.Sprintf("/v1/calls/%d/listen", id), map[string]any{"format": "pcm16"}, &res); st != 409 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, 200, st, "%v", res)
	require.EqualValues(t, 16000, res["sample_rate"])
	heard := make(chan listened, 1)
	go listenTo(t, res["url"].(string), heard)

	// The caller: silence until the greeting's response is done and 1 s
	// more, the tone, 1.5 s of silence, in real time.
	const rate = 16000 // audio/pcm, the session's default input
	toneLen, chunk := int(listenToneLen/time.Second)*rate, rate/10
	toneFrom, total := -1, 0
	next := time.Now()
	for at := 0; toneFrom < 0 || at < total; {
		time.Sleep(time.Until(next))
		if toneFrom < 0 && greeted.Load() {
			toneFrom = at + rate
			total = toneFrom + toneLen + 3*rate/2
		}
		require.Less(t, at, 20*rate, "the greeting's response did not end")
		b := make([]byte, 2*chunk)
		for i := range chunk {
			if j := at + i - toneFrom; toneFrom >= 0 && j >= 0 && j < toneLen {
				binary.LittleEndian.PutUint16(b[2*i:], uint16(int16(6000*math.Sin(2*math.Pi*listenTone*float64(j)/rate))))
			}
		}
		msg := `{"type":"input_audio_buffer.append","audio":"` + base64.StdEncoding.EncodeToString(b) + `"}`
		require.NoError(t, wsutil.WriteClientText(nc, []byte(msg)))
		at += chunk
		next = next.Add(100 * time.Millisecond)
	}
	select {
	case err := <-events:
		t.Fatalf("the session failed: %v", err)
	default:
	}
	require.NoError(t, wsutil.WriteClientMessage(nc, ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, "")))

	var l listened
	select {
	case l = <-heard:
	case <-time.After(15 * time.Second):
		t.Fatal("the listener's socket did not close at the session's end")
	}
	require.NoError(t, l.err)
	require.Equal(t, ws.StatusNormalClosure, l.closed.Code, "%v", l.closed)
	require.Equal(t, "call ended", l.closed.Reason)
	tone, voice := 0, 0
	for _, msg := range l.msgs {
		require.Len(t, msg, 640, "20 ms of 16 kHz PCM16")
		f := make([]int16, 320)
		for i := range f {
			f[i] = int16(binary.LittleEndian.Uint16(msg[2*i:]))
		}
		r, share := rms(f), goertzelShare(f, listenTone, 16000)
		switch {
		case r > 1000 && share > 0.8:
			tone++
		case r > 300 && share < 0.3:
			voice++
		}
	}
	t.Logf("realtime call %d: the listener got %d frames: %d tone, %d voice", id, len(l.msgs), tone, voice)
	require.Greater(t, len(l.msgs), 250, "the listener heard the session from its first seconds to its end")
	require.GreaterOrEqual(t, tone, int(listenToneLen/(20*time.Millisecond))*3/4, "the caller's tone is in the mix")
	require.GreaterOrEqual(t, voice, 25, "the agent's voice is in the mix")
}
