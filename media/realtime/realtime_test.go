package realtime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/pcm"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/agent"
)

func userText(text string) map[string]any {
	return map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": text}}}}
}

// audioMS sums the audio of the deltas of response id, in milliseconds at
// rate (bytesPerSample 2 for PCM, 1 for G.711).
func audioBytes(evs []event, respID string) int {
	n := 0
	for _, e := range evs {
		if (e.Type == "response.output_audio.delta" || e.Type == "response.audio.delta") && e.str("response_id") == respID {
			b, _ := base64.StdEncoding.DecodeString(e.str("delta"))
			n += len(b)
		}
	}
	return n
}

func TestInlineTextSession(t *testing.T) {
	e := newEnv(t, Config{})
	c, status := e.dial(t, "model=gpt-realtime", bearer(goodKey))
	require.Equal(t, 101, status)
	created := c.next("session.created")
	require.Equal(t, "realtime", created.obj("session")["type"])

	// An item before the call is live is buffered and replayed.
	c.send(userText("Hello there."))
	c.send(map[string]any{"type": "session.update", "event_id": "cfg1", "session": map[string]any{
		"type": "realtime", "model": "gpt-realtime", "instructions": "Be brief.", "output_modalities": []string{"audio"},
		"tracing": "auto", "audio": map[string]any{
			"input":  map[string]any{"format": map[string]any{"type": "audio/pcm", "rate": 24000}, "turn_detection": map[string]any{"type": "server_vad"}},
			"output": map[string]any{"format": map[string]any{"type": "audio/pcm", "rate": 24000}, "voice": "espeak:en-us", "speed": 1.1}},
	}})
	updated := c.next("session.updated")
	sess := updated.obj("session")
	require.Equal(t, "Be brief.", sess["instructions"])
	out := sess["audio"].(map[string]any)["output"].(map[string]any)
	require.Equal(t, map[string]any{"type": "audio/pcm", "rate": float64(24000)}, out["format"])
	require.Equal(t, "101", sess["call_id"])

	added := c.next("conversation.item.added")
	require.Equal(t, "user", added.obj("item")["role"])
	c.send(map[string]any{"type": "response.create", "event_id": "r1"})
	rc := c.next("response.created")
	id := rc.obj("response")["id"].(string)
	c.next("response.output_item.added")
	part := c.next("response.content_part.added")
	require.Equal(t, "audio", part.obj("part")["type"])
	tr := c.next("response.output_audio_transcript.delta")
	require.Equal(t, "Hello there.", tr.str("delta"))
	c.next("response.output_audio.delta")
	c.next("response.output_audio.done")
	require.Equal(t, "Hello there.", c.next("response.output_audio_transcript.done").str("transcript"))
	c.next("response.content_part.done")
	c.next("response.output_item.done")
	done := c.next("response.done")
	resp := done.obj("response")
	require.Equal(t, "completed", resp["status"])
	// Two words at 100 ms, PCM16 at 24 kHz.
	require.Equal(t, 2*2400*2, audioBytes(c.all(), id))
	item := resp["output"].([]any)[0].(map[string]any)
	require.Equal(t, "output_audio", item["content"].([]any)[0].(map[string]any)["type"])
	require.Equal(t, "Hello there.", item["content"].([]any)[0].(map[string]any)["transcript"])

	// The inline config went to admission with the instructions as prompt.
	require.Equal(t, "Be brief.", e.calls.configs[0]["prompt"])
	require.Equal(t, "espeak:en-us", e.calls.configs[0]["voice"])
	c.sendRaw(ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, ""))
	end := e.calls.waitFinished(t, 101)
	require.Equal(t, "completed", end.Status)
	require.Equal(t, "caller_hangup", end.Reason)
	var roles []string
	for _, ev := range e.calls.callEvents(101) {
		roles = append(roles, ev.Role)
	}
	require.Equal(t, []string{"user", "assistant"}, roles)
}

func TestAuthAndAdmissionRefusals(t *testing.T) {
	e := newEnv(t, Config{OrgSessions: 1})
	e.calls.agents[7] = Agent{Prompt: "p", Voice: "v"}
	for _, tc := range []struct {
		name   string
		query  string
		header http.Header
		status int
	}{
		{"no credential", "", nil, 401},
		{"bad key", "", bearer("sk_live_nope"), 401},
		{"publishable key", "", bearer("pk_live_x"), 401},
		{"bad token", "", bearer(TokenPrefix + "forged"), 401},
		{"unknown agent", "agent_id=8", bearer(goodKey), 404},
		{"bad agent id", "agent_id=x", bearer(goodKey), 400},
		{"no balance", "agent_id=7", bearer(poorKey), 402},
		{"bad format", "input_audio_format=opus", bearer(goodKey), 400},
		{"bad rate", "output_rate=44100", bearer(goodKey), 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, status := e.dial(t, tc.query, tc.header)
			require.Equal(t, tc.status, status)
		})
	}
	// api_key in the query works; the organization's one slot is then
	// taken.
	c, status := e.dial(t, "api_key="+goodKey, nil)
	require.Equal(t, 101, status)
	c.next("session.created")
	_, status = e.dial(t, "", bearer(goodKey))
	require.Equal(t, 429, status)
	// Another organization is not affected.
	p, status := e.dial(t, "", bearer(poorKey))
	require.Equal(t, 101, status)
	p.send(map[string]any{"type": "session.update", "session": map[string]any{"instructions": "x"}})
	er := p.next("error")
	require.Equal(t, "insufficient_balance", er.obj("error")["code"])
	require.Equal(t, ws.StatusPolicyViolation, p.waitClosed().Code)
	// Closing frees the slot.
	c.nc.Close()
	require.Eventually(t, func() bool { _, s := e.dial(t, "", bearer(goodKey)); return s == 101 }, 5*time.Second, 20*time.Millisecond)
}

func TestNotAWebSocket(t *testing.T) {
	e := newEnv(t, Config{})
	res, err := http.Get(e.http.URL + "/v1/realtime")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUpgradeRequired, res.StatusCode)
}

func TestConfigIsImmutableOnceLive(t *testing.T) {
	e := newEnv(t, Config{})
	c, _ := e.dial(t, "", bearer(goodKey))
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"instructions": "A", "input_audio_format": "pcm16"}})
	up := c.next("session.updated")
	require.Equal(t, "pcm16", up.obj("session")["input_audio_format"], "beta fields answer in the beta dialect")
	c.send(map[string]any{"type": "session.update", "event_id": "u2", "session": map[string]any{"output_audio_format": "g711_ulaw"}})
	er := c.next("error")
	require.Equal(t, "session_config_immutable", er.obj("error")["code"])
	require.Equal(t, "u2", er.obj("error")["event_id"])
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"instructions": "B"}})
	require.Equal(t, "session_config_immutable", c.next("error").obj("error")["code"])
	// What may change does; the session is still usable.
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"turn_detection": nil, "binary_output": true, "tracing": "auto", "speed": 1.2}})
	up = c.next("session.updated")
	require.Nil(t, up.obj("session")["turn_detection"])
	require.Equal(t, true, up.obj("session")["binary_output"])
	c.send(userText("One two three."))
	c.next("conversation.item.created")
	c.send(map[string]any{"type": "response.create"})
	done := c.next("response.done")
	require.Equal(t, "completed", done.obj("response")["status"])
	// Audio came as binary frames of PCM16 at 16 kHz (the output format
	// was left at its default): 300 ms.
	n := 0
	for _, ev := range c.all() {
		n += len(ev.Binary)
		require.NotEqual(t, "response.audio.delta", ev.Type)
	}
	require.Equal(t, "One two three.", done.obj("response")["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["transcript"])
	require.Equal(t, 3*1600*2, n)
}

func TestInvalidInlineConfigKeepsTheSocket(t *testing.T) {
	e := newEnv(t, Config{})
	c, _ := e.dial(t, "", bearer(goodKey))
	c.send(map[string]any{"type": "session.update", "event_id": "a", "session": map[string]any{"config": map[string]any{"colour": "blue"}}})
	er := c.next("error")
	require.Equal(t, "invalid_config", er.obj("error")["code"])
	require.Equal(t, "session.config.colour", er.obj("error")["param"])
	c.send(map[string]any{"type": "session.update", "event_id": "b", "session": map[string]any{"config": map[string]any{"prompt": "p"}}})
	require.Equal(t, "session.config.prompt", c.next("error").obj("error")["param"])
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"audio": map[string]any{"input": map[string]any{"format": map[string]any{"type": "audio/pcm", "rate": 44100}}}}})
	require.Equal(t, "session.audio.input.format", c.next("error").obj("error")["param"])
	c.send(map[string]any{"type": "no.such.event", "event_id": "z"})
	er = c.next("error")
	require.Equal(t, "z", er.obj("error")["event_id"])
	require.Contains(t, er.obj("error")["message"], "no.such.event")
	c.sendRaw(ws.OpText, []byte("{not json"))
	require.Equal(t, "invalid_json", c.next("error").obj("error")["code"])
	// A tracing-only update (sent by the agents SDK) does not start the
	// call; a real one does.
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime", "tracing": "auto"}})
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"config": map[string]any{"placeholders": []string{"One moment."}}}})
	c.next("session.updated")
	require.Len(t, e.calls.configs, 1)
	require.Equal(t, []any{"One moment."}, e.calls.configs[0]["placeholders"])
}

// speechChunks cuts 16 kHz speech into 100 ms appends in the given
// format, with a second of silence around it.
func speechChunks(t *testing.T, pcm16k []int16, f format) [][]byte {
	t.Helper()
	sig := append(append(make([]int16, 16000), pcm16k...), make([]int16, 16000)...)
	if f.rate != 16000 {
		rs, err := resample.New(16000, f.rate, resample.QualityHigh)
		require.NoError(t, err)
		defer rs.Close()
		out := make([]int16, 0, len(sig)*f.rate/16000)
		buf := make([]int16, 960)
		for i := 0; i+320 <= len(sig); i += 320 {
			n, err := rs.ProcessTo(buf, sig[i:i+320])
			require.NoError(t, err)
			out = append(out, buf[:n]...)
		}
		sig = out
	}
	var enc []byte
	switch f.codec {
	case codecULaw:
		enc = make([]byte, len(sig))
		g711.EncodeULawTo(enc, sig)
	case codecALaw:
		enc = make([]byte, len(sig))
		g711.EncodeALawTo(enc, sig)
	default:
		enc = make([]byte, 2*len(sig))
		pcm.Int16ToBytesTo(enc, sig)
	}
	step := f.rate / 10 * f.bytesPerSample()
	var out [][]byte
	for i := 0; i < len(enc); i += step {
		out = append(out, enc[i:min(i+step, len(enc))])
	}
	return out
}

func TestSpeechInEveryFormat(t *testing.T) {
	caller := loadWAV(t, "caller16k.wav")
	for _, tc := range []struct {
		name, wire string
		f          format
	}{
		{"pcm16 24k", "pcm16", format{codecPCM, 24000}},
		{"pcm 16k", "audio/pcm", format{codecPCM, 16000}},
		{"ulaw", "g711_ulaw", format{codecULaw, 8000}},
		{"alaw", "audio/pcma", format{codecALaw, 8000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.stt.text = []string{"I would like to book a table."}
			c, _ := e.dial(t, "", bearer(goodKey))
			c.send(map[string]any{"type": "session.update", "session": map[string]any{"type": "realtime",
				"audio": map[string]any{"input": map[string]any{"format": tc.wire}, "output": map[string]any{"format": tc.wire}}}})
			c.next("session.updated")
			for _, chunk := range speechChunks(t, caller, tc.f) {
				c.send(map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(chunk)})
			}
			st := c.next("input_audio_buffer.speech_started")
			sp := c.next("input_audio_buffer.speech_stopped")
			require.InDelta(t, 1000-300, st.num("audio_start_ms"), 120)
			require.InDelta(t, 1000+2850, sp.num("audio_end_ms"), 250)
			cm := c.next("input_audio_buffer.committed")
			require.Equal(t, st.str("item_id"), cm.str("item_id"))
			tr := c.next("conversation.item.input_audio_transcription.completed")
			require.Equal(t, "I would like to book a table.", tr.str("transcript"))
			rc := c.next("response.created")
			done := c.next("response.done")
			require.Equal(t, "completed", done.obj("response")["status"])
			// The echo model repeats the words: 7 words at 100 ms.
			require.Equal(t, 7*tc.f.rate/10*tc.f.bytesPerSample(), audioBytes(c.all(), rc.obj("response")["id"].(string)))
			e.stt.mu.Lock()
			require.InDelta(t, (sp.num("audio_end_ms")-st.num("audio_start_ms"))*16, e.stt.lens[0], 320)
			e.stt.mu.Unlock()
		})
	}
}

func TestManualTurnsAndBinaryInput(t *testing.T) {
	e := newEnv(t, Config{})
	e.stt.text = []string{"binary words"}
	c, _ := e.dial(t, "input_audio_format=g711_alaw&output_audio_format=g711_alaw", bearer(goodKey))
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"turn_detection": nil}})
	require.Nil(t, c.next("session.updated").obj("session")["audio"].(map[string]any)["input"].(map[string]any)["turn_detection"])
	for _, chunk := range speechChunks(t, loadWAV(t, "yes16k.wav"), format{codecALaw, 8000}) {
		c.sendRaw(ws.OpBinary, chunk)
	}
	c.send(map[string]any{"type": "input_audio_buffer.commit", "event_id": "c1"})
	require.Equal(t, "binary words", c.next("conversation.item.input_audio_transcription.completed").str("transcript"))
	require.Empty(t, nil)
	e.stt.mu.Lock()
	// The whole buffer: a second of silence, the word, a second of silence.
	require.InDelta(t, 16000*2+len(loadWAV(t, "yes16k.wav")), e.stt.lens[0], 320)
	e.stt.mu.Unlock()
	for _, ev := range c.all() {
		require.NotEqual(t, "response.created", ev.Type, "manual turns are not answered on their own")
	}
	c.send(map[string]any{"type": "input_audio_buffer.commit", "event_id": "c2"})
	er := c.next("error")
	require.Equal(t, "input_audio_buffer_commit_empty", er.obj("error")["code"])
	require.Equal(t, "c2", er.obj("error")["event_id"])
}

func TestBetaDialect(t *testing.T) {
	e := newEnv(t, Config{})
	h := bearer(goodKey)
	h.Set("OpenAI-Beta", "realtime=v1")
	c, _ := e.dial(t, "", h)
	s := c.next("session.created").obj("session")
	require.Contains(t, s, "input_audio_format")
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"instructions": "x", "modalities": []string{"text"}}})
	c.next("session.updated")
	c.send(userText("Just text."))
	c.next("conversation.item.created")
	c.send(map[string]any{"type": "response.create"})
	require.Equal(t, "Just text.", c.next("response.text.delta").str("delta"))
	require.Equal(t, "Just text.", c.next("response.text.done").str("text"))
	done := c.next("response.done")
	require.Equal(t, []any{"text"}, done.obj("response")["modalities"])
	for _, ev := range c.all() {
		require.NotContains(t, []string{"response.output_text.delta", "response.output_text.done", "conversation.item.added"}, ev.Type)
	}
}

func TestClientToolsOverTheSocket(t *testing.T) {
	e := newEnv(t, Config{})
	c, _ := e.dial(t, "", bearer(goodKey))
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"tools": []any{map[string]any{
		"type": "function", "name": "lookup", "description": "Look up", "parameters": map[string]any{"type": "object"}}}}})
	c.next("session.updated")
	require.NotNil(t, e.calls.configs[0]["tools"], "tools go to admission for validation")
	// The echo model never calls tools; the client answers a call it made
	// up, and the next answer sees the output.
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"}})
	c.next("conversation.item.added")
	c.send(map[string]any{"type": "conversation.item.create", "item": map[string]any{"type": "function_call_output", "call_id": "c1", "output": `{"ok":true}`}})
	added := c.next("conversation.item.added")
	require.Equal(t, "function_call_output", added.obj("item")["type"])
	var kinds []string
	require.Eventually(t, func() bool {
		kinds = kinds[:0]
		for _, ev := range e.calls.callEvents(101) {
			kinds = append(kinds, ev.Kind)
		}
		return len(kinds) == 1
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"tool_result"}, kinds)
}

func TestSavedAgentStartsAtOnce(t *testing.T) {
	e := newEnv(t, Config{BlobDir: t.TempDir()})
	e.calls.agents[7] = Agent{Prompt: "You are Acme.", Voice: "espeak:en-us", Interruptible: true,
		Engine: agent.Config{SpeakFirst: true, FirstMessage: "Welcome to Acme."}}
	c, _ := e.dial(t, "agent_id=7&output_audio_format=pcm16", bearer(goodKey))
	c.next("session.created")
	up := c.next("session.updated")
	require.Equal(t, "You are Acme.", up.obj("session")["instructions"])
	require.Equal(t, "Welcome to Acme.", c.next("response.output_audio_transcript.delta").str("delta"))
	c.next("response.done")
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"instructions": "other"}})
	require.Equal(t, "session_config_immutable", c.next("error").obj("error")["code"])
	// The recording exists once the call ends.
	for _, chunk := range speechChunks(t, loadWAV(t, "yes16k.wav"), format{codecPCM, 16000}) {
		c.send(map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(chunk)})
	}
	c.nc.Close()
	end := e.calls.waitFinished(t, 101)
	require.Equal(t, "recordings/1/101.wav", end.RecordingKey)
	require.False(t, end.RecordingStartedAt.IsZero())
}

func TestSessionToken(t *testing.T) {
	e := newEnv(t, Config{})
	e.auth.tokens[TokenPrefix+"abc"] = Admission{CallID: 555, OrgID: 1, Inline: true, Agent: Agent{Prompt: "Token prompt"}}
	c, status := e.dial(t, "", bearer(TokenPrefix+"abc"))
	require.Equal(t, 101, status)
	up := c.next("session.updated")
	require.Equal(t, "555", up.obj("session")["call_id"])
	// Tokens are single use.
	_, status = e.dial(t, "", bearer(TokenPrefix+"abc"))
	require.Equal(t, 401, status)
}

func TestMessageTooLarge(t *testing.T) {
	e := newEnv(t, Config{MaxMessageBytes: 4096})
	c, _ := e.dial(t, "", bearer(goodKey))
	c.next("session.created")
	c.send(map[string]any{"type": "input_audio_buffer.append", "audio": strings.Repeat("A", 8000)})
	require.Equal(t, ws.StatusMessageTooBig, c.waitClosed().Code)
}

func TestPendingEventsAreBounded(t *testing.T) {
	e := newEnv(t, Config{MaxPending: 3})
	c, _ := e.dial(t, "", bearer(goodKey))
	for range 4 {
		c.send(userText("x"))
	}
	require.Equal(t, "too_many_pending_events", c.next("error").obj("error")["code"])
}

func TestServerCloseEndsCalls(t *testing.T) {
	e := newEnv(t, Config{})
	c, _ := e.dial(t, "", bearer(goodKey))
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"instructions": "x"}})
	c.next("session.updated")
	go func() { _ = e.srv.Close(t.Context()) }()
	require.Equal(t, ws.StatusGoingAway, c.waitClosed().Code)
	require.Equal(t, "failed", e.calls.waitFinished(t, 101).Status)
	_, status := e.dial(t, "", bearer(goodKey))
	require.Equal(t, 503, status)
}

// TestServerDrainEndsCallsAtTheDeadline: Drain refuses new sockets at
// once but leaves the open call running until its context ends; then the
// call is closed with 1001 and completes with end reason node_shutdown.
func TestServerDrainEndsCallsAtTheDeadline(t *testing.T) {
	e := newEnv(t, Config{})
	c, _ := e.dial(t, "", bearer(goodKey))
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"instructions": "x"}})
	c.next("session.updated")
	const grace = 700 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	start := time.Now()
	drained := make(chan error, 1)
	go func() { drained <- e.srv.Drain(ctx) }()
	require.Eventually(t, func() bool {
		_, status := e.dial(t, "", bearer(goodKey))
		return status == 503
	}, time.Second, 10*time.Millisecond, "a draining server takes no new socket")
	// The open call still converses before the deadline.
	c.send(userText("still here"))
	c.send(map[string]any{"type": "response.create"})
	c.next("response.done")
	require.Less(t, time.Since(start), grace, "the test's turn ran within the grace period")
	require.Equal(t, ws.StatusGoingAway, c.waitClosed().Code)
	require.GreaterOrEqual(t, time.Since(start), grace, "not closed before the deadline")
	require.ErrorIs(t, <-drained, context.DeadlineExceeded)
	end := e.calls.waitFinished(t, 101)
	require.Equal(t, "completed", end.Status)
	require.Equal(t, "node_shutdown", end.Reason)
}

func TestAppendFastPath(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want string
		ok   bool
	}{
		{`{"type":"input_audio_buffer.append","audio":"AAEC"}`, "AAEC", true},
		{`{"event_id":"audio","type": "input_audio_buffer.append", "audio" : "QUJD"}`, "QUJD", true},
		{`{"type":"input_audio_buffer.append","audio":"a\/b"}`, "", false},
		{`{"type":"conversation.item.create","audio":"AAEC"}`, "", false},
	} {
		got, ok := appendPayload([]byte(tc.msg))
		require.Equal(t, tc.ok, ok, tc.msg)
		require.Equal(t, tc.want, string(got))
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"a":1}`), &m))
	require.Equal(t, 16000, media.Rate16k)
}

// streamSpeech sends 16 kHz audio (PCM at 16 kHz) in real time, 20 ms per
// append, after lead of silence.
func streamSpeech(c *client, pcm16k []int16, lead time.Duration) {
	sig := append(make([]int16, int(lead/time.Millisecond)*16), pcm16k...)
	sig = append(sig, make([]int16, 16000)...)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	buf := make([]byte, 640)
	for i := 0; i+320 <= len(sig); i += 320 {
		<-tick.C
		pcm.Int16ToBytesTo(buf, sig[i:i+320])
		c.send(map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(buf)})
	}
}

// speakingSession is an inline session whose agent is saying a long
// answer (a recorded voice, repeated n times: 3.4 s each) when it returns.
func speakingSession(t *testing.T, n int, cfg Config) (*env, *client, string) {
	agent16k := loadWAV(t, "agent16k.wav")
	e := newEnv(t, cfg)
	for range n {
		e.tts.pcm = append(e.tts.pcm, agent16k...)
	}
	c, _ := e.dial(t, "", bearer(goodKey))
	c.send(map[string]any{"type": "session.update", "session": map[string]any{"instructions": "x"}})
	c.next("session.updated")
	c.send(userText("Tell me a story."))
	c.send(map[string]any{"type": "response.create"})
	id := c.next("response.created").obj("response")["id"].(string)
	c.next("response.output_audio.delta")
	return e, c, id
}

// deltaConfigs run a test with 20 ms audio deltas (the default) and with
// 100 ms ones.
var deltaConfigs = []Config{{}, {DeltaFrames: 5}}

func TestBargeInOverTheSocket(t *testing.T) {
	for _, cfg := range deltaConfigs {
		t.Run(fmt.Sprintf("%d frames a delta", max(cfg.DeltaFrames, 1)), func(t *testing.T) { bargeIn(t, cfg) })
	}
}

func bargeIn(t *testing.T, cfg Config) {
	e, c, first := speakingSession(t, 3, cfg)
	e.stt.text = []string{"Wait, sorry, can we make that Saturday instead?"}
	streamSpeech(c, loadWAV(t, "interrupt16k.wav"), time.Second)
	started := c.next("input_audio_buffer.speech_started")
	// Not one frame of the answer follows the barge-in decision.
	after := 0
	for _, ev := range c.all() {
		if ev.At.After(started.At) || ev.At.Equal(started.At) {
			if ev.Type == "response.output_audio.delta" && ev.str("response_id") == first {
				after++
			}
		}
	}
	c.next("input_audio_buffer.speech_stopped")
	done := c.nextWhere(func(e event) bool { return e.Type == "response.done" && e.obj("response")["id"] == first }, "first response.done")
	require.Equal(t, "cancelled", done.obj("response")["status"])
	require.Equal(t, "turn_detected", done.obj("response")["status_details"].(map[string]any)["reason"])
	tr := c.find("conversation.item.truncated")
	// The item is cut to exactly the audio the client received at full
	// level: what was sent less the pauses' fades to silence (a frame each,
	// at least one: the agent paused at the caller's onset).
	received := audioBytes(c.all(), first)
	fades := int64(received/32) - tr.num("audio_end_ms")
	require.Zero(t, fades%20, "audio_end_ms is what was sent, fades aside")
	require.GreaterOrEqual(t, fades, int64(20))
	require.LessOrEqual(t, fades, int64(60))
	require.Less(t, received/32, 10000, "cut short of the whole answer")
	require.Zero(t, after, "audio after the barge-in decision")
	// The caller's words are then answered.
	next := c.nextWhere(func(e event) bool { return e.Type == "response.created" }, "second response")
	require.NotEqual(t, first, next.obj("response")["id"])
}

func TestBackchannelOverTheSocket(t *testing.T) {
	for _, cfg := range deltaConfigs {
		t.Run(fmt.Sprintf("%d frames a delta", max(cfg.DeltaFrames, 1)), func(t *testing.T) { backchannel(t, cfg) })
	}
}

func backchannel(t *testing.T, cfg Config) {
	e, c, first := speakingSession(t, 1, cfg)
	e.stt.text = []string{"uh-huh"}
	streamSpeech(c, loadWAV(t, "uhhuh16k.wav"), 500*time.Millisecond)
	done := c.nextWhere(func(e event) bool { return e.Type == "response.done" && e.obj("response")["id"] == first }, "response.done")
	require.Equal(t, "completed", done.obj("response")["status"])
	for _, ev := range c.all() {
		require.NotEqual(t, "input_audio_buffer.speech_started", ev.Type)
	}
	// All of it, to the last (padded) frame, and one frame more per pause
	// (the 5 ms fade to silence): the backchannel paused the agent at least
	// once, and it resumed.
	extra := audioBytes(c.all(), first) - (len(loadWAV(t, "agent16k.wav"))*2+639)/640*640
	require.Zero(t, extra%640)
	require.GreaterOrEqual(t, extra, 640)
	require.LessOrEqual(t, extra, 3*640)
}
