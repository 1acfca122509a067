package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
)

// TestLoopbackFrontDoors: with --call-loopback and --realtime-loopback
// the node has no STT, model or voice at all, and no request may crash
// it (issue 30 item 1). On each front door (SIP, WebRTC, the realtime
// WebSocket) an agent that speaks first with no first message, and one
// with a first message and check-ins, get a call that is answered, holds
// past a check-in's interval, completes and is recorded; the server
// answers /v1/healthz after each. On the realtime door, where the
// agent's settings reach the engine, the check-in that comes due is
// refused (provider_unavailable) instead of asking the missing model.
func TestLoopbackFrontDoors(t *testing.T) {
	siptest.Binary(t, "sipp", "sip-tester")
	sv := startTelephonyServe(t, "--realtime-loopback")
	defer sv.stop(t)
	call := sv.call

	st, conn := call("POST", "/v1/voip-connections", `{"host":"127.0.0.1","port":5999,"allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMA","PCMU"]}`)
	require.Equal(t, 201, st, "%v", conn)
	st, num := call("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550100","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", num)

	agents := map[string]string{
		"speaks first, no first message": `{"name":"Opener","prompt":"Greet the caller.","inbound_speak_order":"agent_first","first_message":null}`,
		"first message and check-ins": `{"name":"Greeter","inbound_speak_order":"agent_first","first_message":"Welcome.",` +
			`"silence_interval_seconds":3,"silence_max_checkins":2}`,
	}
	healthy := func(what string) {
		t.Helper()
		res, err := http.Get(sv.base + "/v1/healthz")
		require.NoError(t, err, "%s: the server is down", what)
		res.Body.Close()
		require.Equal(t, 200, res.StatusCode, what)
	}
	finished := func(what string, id int64) {
		t.Helper()
		var c map[string]any
		require.Eventually(t, func() bool {
			_, c = call("GET", fmt.Sprintf("/v1/calls/%d", id), "")
			return c["status"] != nil && c["status"] != "in_progress"
		}, 45*time.Second, 100*time.Millisecond, "%s: call %d did not end: %v", what, id, c)
		require.Equal(t, "completed", c["status"], "%s: %v", what, c)
		require.NotNil(t, c["recording_url"], "%s: the call is recorded: %v", what, c)
		healthy(what)
	}
	for name, body := range agents {
		st, ag := call("POST", "/v1/agents", body)
		require.Equal(t, 201, st, "%v", ag)
		agentID := objID(ag)

		// SIP: sipp calls the number, plays a second of speech and stays
		// on past the first check-in.
		st, _ = call("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, agentID))
		require.Equal(t, 200, st)
		before := lastCallOr(call, "inbound")
		uac := siptest.Sipp(t, "../../sip/testdata/sipp/uac_call.xml", 30*time.Second, "-d", "4000", "-s", "+14155550100", "-m", "1", "127.0.0.1:"+strconv.Itoa(sv.sipPort))
		require.NoError(t, uac.Wait(), "sip, %s: the call is answered and hung up", name)
		id := lastCall(t, call, "inbound")
		require.NotEqual(t, before, id)
		finished("sip, "+name, id)

		// WebRTC: a pion client holds a widget call for four seconds.
		st, pk := call("POST", "/v1/publishable-key", fmt.Sprintf(`{"agent_id":%d,"allowed_domains":["localhost"]}`, agentID))
		require.Equal(t, 201, st, "%v", pk)
		start := time.Now()
		id = pionWidgetCall(t, sv.base, pk["key"].(string), func() bool { return time.Since(start) > 4*time.Second })
		finished("webrtc, "+name, id)

		// The realtime WebSocket with the saved agent, for four seconds.
		id, refused := realtimeLoopbackCall(t, sv.base, sv.key, agentID, 5*time.Second)
		finished("realtime, "+name, id)
		if strings.Contains(body, "silence_interval_seconds") {
			require.Positive(t, refused, "the check-in came due and was refused, not sent to a model")
		}
	}
}

// realtimeLoopbackCall opens a realtime socket with the saved agent on a
// loopback node, sends silence and reads its events for hold and closes
// it; it returns the call's id (from session.updated) and how many
// answers were refused (provider_unavailable). The only error event allowed is
// provider_unavailable: a loopback session refuses what would need a
// model or a voice (an opening, a check-in).
func realtimeLoopbackCall(t *testing.T, base, key string, agentID int64, hold time.Duration) (id int64, refused int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hold+10*time.Second)
	defer cancel()
	nc, rw := dialRealtimeAgent(t, ctx, base, key, agentID)
	defer nc.Close()
	var types []string
	// The caller is on the line and silent: 100 ms of silence every
	// 100 ms, so the session's silence check-ins come due.
	silence := `{"type":"input_audio_buffer.append","audio":"` + base64.StdEncoding.EncodeToString(make([]byte, 2*24000/10)) + `"}`
	next := time.Now()
	for end := time.Now().Add(hold); time.Now().Before(end); {
		if time.Now().After(next) {
			require.NoError(t, wsutil.WriteClientText(nc, []byte(silence)))
			next = next.Add(100 * time.Millisecond)
		}
		_ = nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		data, op, err := wsutil.ReadServerData(rw)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			continue
		}
		require.NoError(t, err, "the socket stays open; events so far: %v", types)
		if op != ws.OpText {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Session struct {
				CallID string `json:"call_id"`
			} `json:"session"`
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(data, &ev))
		types = append(types, ev.Type)
		if ev.Type == "error" {
			require.Equal(t, "provider_unavailable", ev.Error.Code, "%s", data)
			refused++
		}
		if id == 0 && ev.Type == "session.updated" {
			id, _ = strconv.ParseInt(ev.Session.CallID, 10, 64)
		}
	}
	require.NotZero(t, id, "no session.updated: %v", types)
	t.Logf("realtime call %d events: %v", id, types)
	require.NoError(t, wsutil.WriteClientMessage(nc, ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, "")))
	return id, refused
}
