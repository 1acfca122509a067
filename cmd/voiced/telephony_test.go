package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/sip/siptest"
)

// TestServeTelephony runs serve with its SIP/RTP front door against sipp:
// an inbound call to a VoIP number is admitted, answered, carries RTP
// through the node's RTP session and loopback agent, and is recorded;
// POST /v1/call dials out through the trunk with digest auth; and
// verify-voip checks the trunk with OPTIONS.
func TestServeTelephony(t *testing.T) {
	siptest.Binary(t, "sipp", "sip-tester")
	sv := startTelephonyServe(t)
	dir, sipPort, call := sv.dir, sv.sipPort, sv.call

	// A trunk (sipp as the provider) with a number whose agent answers.
	uas := siptest.Sipp(t, "../../sip/testdata/sipp/uas_auth.xml", 20*time.Second, "-m", "1")
	st, conn := call("POST", "/v1/voip-connections", fmt.Sprintf(`{"host":"127.0.0.1","port":%d,"username":"alice","password":"secret",`+
		`"allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU","PCMA"]}`, uas.Port))
	require.Equal(t, 201, st, "%v", conn)
	st, ag := call("POST", "/v1/agents", `{"name":"Front desk"}`)
	require.Equal(t, 201, st, "%v", ag)
	st, num := call("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550100","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", num)
	st, num = call("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, objID(ag)))
	require.Equal(t, 200, st, "%v", num)

	// The node's media series are on /metrics before any call.
	m0 := scrape(t, sv.base)
	requireSeries(t, m0, seriesTicks, seriesLateP50, seriesLateP99, seriesLateMax, seriesCostP50, seriesCostMax, seriesPhoneIn, seriesPhoneOut, seriesPhoneSes, seriesSendErrs)
	require.Zero(t, m0[seriesPhoneIn])
	require.Zero(t, m0[seriesPhoneSes])

	// Inbound: sipp calls the number, plays RTP for a second, hangs up.
	uac := siptest.Sipp(t, "../../sip/testdata/sipp/uac_call.xml", 20*time.Second, "-d", "1000", "-s", "+14155550100", "-m", "1", "127.0.0.1:"+strconv.Itoa(sipPort))
	require.NoError(t, uac.Wait())
	var in map[string]any
	require.Eventually(t, func() bool {
		_, list := call("GET", "/v1/calls?direction=inbound", "")
		rs, _ := list["results"].([]any)
		if len(rs) != 1 {
			return false
		}
		in = rs[0].(map[string]any)
		return in["status"] != "in_progress"
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, "completed", in["status"], "%v", in)
	require.Equal(t, "caller_hangup", in["end_reason"])
	require.NotNil(t, in["recording_url"], "the call is recorded")
	rec := filepath.Join(dir, "blobs", strings.TrimPrefix(in["recording_url"].(string), "blob://"))
	fi, err := os.Stat(rec)
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(58+8000*2/2), "more than half a second of 8 kHz stereo µ-law (sipp plays about a second)")
	f, err := os.Open(rec)
	require.NoError(t, err)
	wr, err := wav.NewReader(f)
	require.NoError(t, err)
	require.Equal(t, wav.Format{Encoding: wav.ULaw, SampleRate: 8000, Channels: 2}, wr.Format(),
		"a G.711 call is recorded at its own 8 kHz in µ-law, caller and agent")
	_, err = f.Seek(0, io.SeekStart)
	require.NoError(t, err)
	_, recPCM, err := wav.ReadAll(f)
	require.NoError(t, err)
	f.Close()
	requireBrowserPlays(t, sv, int64(in["call_id"].(float64)), recPCM)
	// The call's quality: sipp's RTP reached the node, the loopback
	// agent's went back.
	q := requireMediaQuality(t, in["quality"], "PCMA") // sipp plays a G.711 A-law capture
	require.Equal(t, 0.0, q["packets_lost"])

	// /metrics moved: the pacer ticked, the call's packets are counted.
	m1 := scrape(t, sv.base)
	require.Greater(t, m1[seriesTicks], m0[seriesTicks])
	require.GreaterOrEqual(t, m1[seriesPhoneIn], q["packets_received"])
	require.GreaterOrEqual(t, m1[seriesPhoneOut], q["packets_sent"])
	require.Zero(t, m1[seriesPhoneSes], "the call ended")
	require.Greater(t, m1[seriesLateCount], m0[seriesLateCount], "the ticks' lateness is recorded (0 when their sends were handed over in time)")
	require.LessOrEqual(t, m1[seriesLateP50], m1[seriesLateP99])
	require.LessOrEqual(t, m1[seriesLateP99], m1[seriesLateMax])
	require.Greater(t, m1[seriesCostP50], 0.0, "ticks with calls on them take time")
	require.LessOrEqual(t, m1[seriesCostP50], m1[seriesCostMax])
	t.Logf("pacer tick lateness p50 %.3f ms, p99 %.3f ms, max %.3f ms; cost p50 %.3f ms, max %.3f ms", m1[seriesLateP50]*1e3, m1[seriesLateP99]*1e3, m1[seriesLateMax]*1e3, m1[seriesCostP50]*1e3, m1[seriesCostMax]*1e3)

	// A wideband caller: with Opus allowed, a call offering only Opus is
	// answered with it, and its agent runs and records at 16 kHz.
	st, conn = call("PATCH", fmt.Sprintf("/v1/voip-connections/%d", objID(conn)), `{"codecs":["PCMU","PCMA","opus"]}`)
	require.Equal(t, 200, st, "%v", conn)
	uac = siptest.Sipp(t, "../../sip/testdata/sipp/uac_opus.xml", 20*time.Second, "-d", "1000", "-s", "+14155550100", "-m", "1", "127.0.0.1:"+strconv.Itoa(sipPort))
	require.NoError(t, uac.Wait(), "the Opus call is answered with Opus")
	var wide map[string]any
	require.Eventually(t, func() bool {
		_, list := call("GET", "/v1/calls?direction=inbound", "")
		rs, _ := list["results"].([]any)
		for _, r := range rs {
			if c := r.(map[string]any); c["call_id"] != in["call_id"] && c["status"] != "in_progress" {
				wide = c
				return true
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, "completed", wide["status"], "%v", wide)
	f, err = os.Open(filepath.Join(dir, "blobs", strings.TrimPrefix(wide["recording_url"].(string), "blob://")))
	require.NoError(t, err)
	wr, err = wav.NewReader(f)
	require.NoError(t, err)
	require.Equal(t, wav.Format{Encoding: wav.PCM16, SampleRate: 16000, Channels: 2}, wr.Format())
	f.Close()

	// Outbound through the trunk: 401, authenticated INVITE, answer, the
	// callee hangs up after a second.
	st, out := call("POST", "/v1/call", fmt.Sprintf(`{"agent_id":%d,"from_number":"+14155550100","to_number":"+14155550123"}`, objID(ag)))
	require.Equal(t, 201, st, "%v", out)
	require.NoError(t, uas.Wait())
	require.Eventually(t, func() bool {
		_, out = call("GET", fmt.Sprintf("/v1/calls/%d", int64(out["call_id"].(float64))), "")
		return out["status"] != "in_progress"
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, "completed", out["status"], "%v", out)
	require.Equal(t, "callee_hangup", out["end_reason"])

	// verify-voip: the trunk answers OPTIONS.
	opts := siptest.Sipp(t, "../../sip/testdata/sipp/uas_options.xml", 20*time.Second, "-m", "1")
	st, conn = call("PATCH", fmt.Sprintf("/v1/voip-connections/%d", objID(conn)), fmt.Sprintf(`{"port":%d}`, opts.Port))
	require.Equal(t, 200, st, "%v", conn)
	time.Sleep(200 * time.Millisecond)
	st, v := call("POST", fmt.Sprintf("/v1/phone-numbers/%d/verify-voip", objID(num)), "")
	require.Equal(t, 200, st, "%v", v)
	require.Equal(t, "verified", v["voip_verification_status"], "%v", v)
	require.NoError(t, opts.Wait())

	sv.stop(t)
}

// served is a running voiced serve with telephony on loopback.
type served struct {
	dir     string
	base    string // http://host:port of the API
	key     string // the first-use API key
	sipPort int
	call    func(method, path, body string) (int, map[string]any)
	cancel  context.CancelFunc
	done    chan error
	stderr  *syncBuf // serve's log
}

func objID(m map[string]any) int64 { return int64(m["id"].(float64)) }

func startTelephonyServe(t *testing.T, extra ...string) *served {
	t.Helper()
	sv := &served{dir: t.TempDir(), sipPort: siptest.FreePort(t, "127.0.0.1"), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	sv.cancel = cancel
	t.Cleanup(cancel)
	var stdout, stderr syncBuf
	sv.stderr = &stderr
	go func() {
		args := append([]string{"serve", "--data-dir", sv.dir, "--http-addr", "127.0.0.1:0", "--sip-addr", "127.0.0.1:" + strconv.Itoa(sv.sipPort),
			"--rtp-ports", "41000-41999", "--webrtc-udp-addr", "127.0.0.1:0", "--call-loopback"}, extra...)
		sv.done <- run(ctx, args, &stdout, &stderr)
	}()
	addrRe := regexp.MustCompile(`http_addr=(127\.0\.0\.1:\d+)`)
	var addr string
	require.Eventually(t, func() bool {
		m := addrRe.FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 20*time.Second, 20*time.Millisecond, "stderr: %s", stderr.String())
	require.Contains(t, stderr.String(), "telephony listening")
	key := regexp.MustCompile(`sk_live_[0-9a-f]+`).FindString(stdout.String())
	sv.base, sv.key = "http://"+addr, key
	sv.call = func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var m map[string]any
		b, _ := io.ReadAll(res.Body)
		_ = json.Unmarshal(b, &m)
		return res.StatusCode, m
	}
	return sv
}

func (sv *served) stop(t *testing.T) {
	sv.cancel()
	select {
	case err := <-sv.done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeBaresipConversation: baresip calls a number whose agent
// greets first, then says a sentence (espeak-ng speech). The node's RTP
// session feeds the agent (speech-to-text is a fake OpenAI transcription
// server at the provider boundary, the model the offline echo, the voice
// espeak-ng); baresip hears the greeting and the answer at a speech
// level, and the call's transcript has all three turns.
func TestServeBaresipConversation(t *testing.T) {
	siptest.Binary(t, "baresip", "baresip-core")
	espeak := siptest.Binary(t, "espeak-ng", "espeak-ng")
	soxBin := siptest.Binary(t, "sox", "sox")
	const said = "I would like a table for two."
	stt := fakeSTT(t, func(pcm []int16) string {
		if media.DBFS(pcm) < -45 {
			return "" // silence has no words
		}
		return said
	})
	sv := startTelephonyServe(t, "--call-loopback=false", "--stt-base-url", stt)
	greeting, answer, texts := baresipConversation(t, sv, espeak, soxBin, said)
	require.Greater(t, greeting, -30.0, "the greeting is speech, not silence")
	require.Greater(t, answer, -30.0, "the answer is speech, not silence")
	require.GreaterOrEqual(t, len(texts), 3, "%v", texts)
	require.Equal(t, "assistant: Welcome to the shop.", texts[0])
	require.Contains(t, texts, "user: "+said)
	require.Contains(t, texts, "assistant: "+said, "the echo model answers with the caller's words")
	sv.stop(t)
}

// TestServeBaresipOfflineEngine: with no provider flags at all a phone
// call runs the number's agent on the offline providers (PocketSphinx,
// echo, espeak-ng), not the loopback agent: baresip hears the greeting,
// which the loopback agent never speaks, and the caller's turn is
// transcribed and answered.
func TestServeBaresipOfflineEngine(t *testing.T) {
	siptest.Binary(t, "baresip", "baresip-core")
	espeak := siptest.Binary(t, "espeak-ng", "espeak-ng")
	soxBin := siptest.Binary(t, "sox", "sox")
	sv := startTelephonyServe(t, "--call-loopback=false")
	greeting, _, texts := baresipConversation(t, sv, espeak, soxBin, "I would like a table for two.")
	require.Greater(t, greeting, -30.0, "the greeting is speech, not silence")
	require.NotEmpty(t, texts, "the call has a transcript")
	require.Equal(t, "assistant: Welcome to the shop.", texts[0])
	var user, answered bool
	for _, s := range texts[1:] {
		user = user || strings.HasPrefix(s, "user: ") && len(s) > len("user: ")
		answered = answered || user && strings.HasPrefix(s, "assistant: ")
	}
	require.True(t, user && answered, "PocketSphinx transcribed the caller's turn and the echo model answered it: %v", texts)
	sv.stop(t)
}

// baresipConversation puts an agent that greets first on a number, has
// baresip call it and say the sentence at 3 s, and returns the loudest
// levels baresip heard during the greeting and the answer and the ended
// call's transcript as "role: text" lines.
func baresipConversation(t *testing.T, sv *served, espeak, soxBin, said string) (greeting, answer float64, texts []string) {
	t.Helper()
	st, conn := sv.call("POST", "/v1/voip-connections", `{"host":"127.0.0.1","allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU"]}`)
	require.Equal(t, 201, st, "%v", conn)
	st, ag := sv.call("POST", "/v1/agents", `{"name":"Host","first_message":"Welcome to the shop.","voice":"espeak:en-us"}`)
	require.Equal(t, 201, st, "%v", ag)
	st, num := sv.call("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550100","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", num)
	st, _ = sv.call("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, objID(ag)))
	require.Equal(t, 200, st)

	// The caller listens to the greeting, speaks at 3 s, then is silent.
	tmp := t.TempDir()
	raw, speech := filepath.Join(tmp, "raw.wav"), filepath.Join(tmp, "speech.wav")
	out, err := exec.Command(espeak, "-w", raw, said).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(soxBin, raw, "-r", "48000", "-c", "2", "-b", "16", speech, "pad", "3", "6").CombinedOutput()
	require.NoError(t, err, "%s", out)

	b := siptest.StartBaresip(t, siptest.BaresipOptions{Codecs: "PCMU/8000/1", Source: speech, Quit: 10 * time.Second,
		Commands: []string{"/dial sip:+14155550100@127.0.0.1:" + strconv.Itoa(sv.sipPort)}})
	bout, err := b.Wait()
	require.NoError(t, err, bout)
	require.Contains(t, bout, "Call established")
	rate, heard, err := b.Received()
	require.NoError(t, err)
	loudest := func(from, to float64) float64 {
		l := -200.0
		for i := int(from * float64(rate)); i+rate/10 <= min(len(heard), int(to*float64(rate))); i += rate / 10 {
			l = max(l, media.DBFS(heard[i:i+rate/10]))
		}
		return l
	}
	greeting, answer = loudest(0, 2.5), loudest(5, 10)
	t.Logf("baresip heard %.1f s: greeting %.1f dBFS, answer %.1f dBFS", float64(len(heard))/float64(rate), greeting, answer)

	var in map[string]any
	require.Eventually(t, func() bool {
		_, list := sv.call("GET", "/v1/calls?direction=inbound", "")
		rs, _ := list["results"].([]any)
		if len(rs) != 1 {
			return false
		}
		in = rs[0].(map[string]any)
		return in["status"] != "in_progress"
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, "completed", in["status"], "%v", in)
	// The call's quality: both ways over RTP, the caller's turn answered.
	requireAnswered(t, requireMediaQuality(t, in["quality"], "PCMU"))
	_, tr := sv.call("GET", fmt.Sprintf("/v1/calls/%d/transcript", int64(in["call_id"].(float64))), "")
	turns, _ := tr["turns"].([]any)
	for _, x := range turns {
		m := x.(map[string]any)
		texts = append(texts, m["role"].(string)+": "+m["text"].(string))
	}
	t.Logf("transcript: %q", texts)
	return greeting, answer, texts
}

// requireBrowserPlays fetches call id's playable URL from the audio
// endpoint and has headless Chromium load it in an <audio> element and
// decode it (Web Audio, at the file's 8 kHz, so without resampling): both
// channels, as long as the file, sample for sample what our reader gives
// (pcm, interleaved), the caller's not silent. A recording's format must
// be one browsers play.
func requireBrowserPlays(t *testing.T, sv *served, id int64, pcm []int16) {
	st, a := sv.call("GET", fmt.Sprintf("/v1/calls/%d/audio", id), "")
	require.Equal(t, 200, st, "%v", a)
	require.Equal(t, "audio/wav", a["content_type"])
	c := startChromium(t, filepath.Join("..", "..", "media", "turn", "testdata", "yes16k.wav"))
	defer c.close()                     // before serve stops: the <audio> element may hold a connection
	c.navigate(sv.base + "/v1/healthz") // the recording's origin: fetch needs no CORS
	var got struct {
		Duration float64     `json:"duration"`
		Channels int         `json:"channels"`
		Frames   int         `json:"frames"`
		Rate     float64     `json:"rate"`
		Samples  [][]float64 `json:"samples"`
	}
	c.eval(fmt.Sprintf(`(async () => {
		const url = %q;
		const el = new Audio(url);
		const duration = await new Promise((ok, bad) => {
			el.onloadedmetadata = () => ok(el.duration);
			el.onerror = () => bad(new Error("audio element: error " + (el.error && el.error.code)));
		});
		const buf = await new AudioContext({sampleRate: 8000}).decodeAudioData(await (await fetch(url)).arrayBuffer());
		const samples = [];
		for (let ch = 0; ch < buf.numberOfChannels; ch++) samples.push(Array.from(buf.getChannelData(ch)));
		return {duration, channels: buf.numberOfChannels, frames: buf.length, rate: buf.sampleRate, samples};
	})()`, a["url"].(string)), &got)
	frames := len(pcm) / 2
	require.Equal(t, 2, got.Channels)
	require.Equal(t, 8000.0, got.Rate)
	require.Equal(t, frames, got.Frames, "every frame of the file decoded")
	require.InDelta(t, float64(frames)/8000, got.Duration, 0.01, "<audio> reads the file's length")
	var energy float64
	for i := range frames {
		for ch := range 2 {
			want := float64(pcm[2*i+ch]) / 32768
			require.InDelta(t, want, got.Samples[ch][i], 1e-4, "frame %d channel %d", i, ch)
		}
		energy += float64(pcm[2*i]) * float64(pcm[2*i])
	}
	require.Positive(t, energy, "the caller's channel has sound (sipp's capture)")
}
