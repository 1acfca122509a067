package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/pion/ice/v4"
	pion "github.com/pion/webrtc/v4"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
)

// chainModel is an OpenAI-compatible chat completions server (the
// provider boundary) scripted for one agent on every channel: with no
// tool result yet it calls book_table; after one result, if the request
// offers transfer_call (a phone call), it transfers to the front desk;
// otherwise it answers in words.
func chainModel(t *testing.T) *httptest.Server {
	return fakeChat(t, func(req chatRequest, reply chatReply) {
		results := len(req.toolResults())
		transfer := slices.Contains(req.toolNames(), "transfer_call")
		switch {
		case results == 0:
			reply.call("call_book1", "book_table", `{"party": 2}`)
		case results == 1 && transfer:
			reply.call("call_xfer1", "transfer_call", `{"destination": "Front desk"}`)
		default:
			reply.say("Your table is booked.")
		}
	})
}

// hookLog is the loopback webhook receiver: /legacy is the
// organization's webhook (it answers the blocking tool exchanges),
// /tools an endpoint subscribed to the tool events.
type hookLog struct {
	mu   sync.Mutex
	reqs []hookReq
}

type hookReq struct {
	path string
	body map[string]any
}

func (h *hookLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	h.mu.Lock()
	h.reqs = append(h.reqs, hookReq{r.URL.Path, body})
	h.mu.Unlock()
	if t, _ := body["type"].(string); r.URL.Path == "/legacy" && strings.HasSuffix(t, ".tool") {
		_, _ = w.Write([]byte(`{"output": {"booked": true}}`))
	}
}

// of returns the tool exchanges or events posted to path about call id.
func (h *hookLog) of(path string, id int64) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, r := range h.reqs {
		typ, _ := r.body["type"].(string)
		if d, ok := r.body["data"].(map[string]any); ok && r.path == path && d["call_id"] == float64(id) && strings.HasSuffix(typ, ".tool") {
			out = append(out, r.body)
		}
	}
	return out
}

// keys returns m's keys, sorted.
func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOneToolChainOnEveryChannel: the same agent, with one webhook tool
// (book_table) and a transfer destination, takes a call over SIP (sipp),
// WebRTC (a pion client as the widget) and the realtime WebSocket. It
// speaks first, so the model is asked at once: it calls book_table, and on
// the phone call, the one channel with a SIP leg (transfer_call is
// offered there only), transfers the caller, who accepts the REFER. Every
// run goes through the node's one tool chain: the organization's webhook
// gets the same exchange payload on each channel (telephony.tool on the
// phone, web.tool otherwise), a subscribed endpoint gets one tool event
// of the same shape per run (the transfer too), and each call's history
// has the same tool_call and tool_result items.
func TestOneToolChainOnEveryChannel(t *testing.T) {
	siptest.Binary(t, "sipp", "sip-tester")
	model := chainModel(t)
	hooks := &hookLog{}
	hs := httptest.NewServer(hooks)
	defer hs.Close()
	sv := startTelephonyServe(t, "--call-loopback=false", "--llm-base-url", model.URL+"/v1")
	defer sv.stop(t)
	call := sv.call
	key := sv.key

	st, _ := call("PUT", "/v1/webhook", fmt.Sprintf(`{"url":%q}`, hs.URL+"/legacy"))
	require.Equal(t, 200, st)
	st, _ = call("POST", "/v1/developer/webhook-endpoints", fmt.Sprintf(`{"label":"tools","url":%q,"events":["telephony.tool","web.tool"]}`, hs.URL+"/tools"))
	require.Equal(t, 201, st)
	st, ag := call("POST", "/v1/agents", `{"name":"Host","voice":"espeak:en-us","prompt":"Book tables.","inbound_speak_order":"agent_first",
		"tools":[{"type":"function","name":"book_table","description":"Book a table.","parameters":{"type":"object","properties":{"party":{"type":"integer"}}}}],
		"transfer_destinations":[{"name":"Front desk","number":"+14155550123","description":"people"}]}`)
	require.Equal(t, 201, st, "%v", ag)
	agentID := objID(ag)
	st, conn := call("POST", "/v1/voip-connections", `{"host":"127.0.0.1","port":5999,"allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMU"]}`)
	require.Equal(t, 201, st, "%v", conn)
	st, num := call("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550100","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", num)
	st, num = call("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, agentID))
	require.Equal(t, 200, st, "%v", num)
	st, pk := call("POST", "/v1/publishable-key", fmt.Sprintf(`{"agent_id":%d,"allowed_domains":["shop.example"]}`, agentID))
	require.Equal(t, 201, st, "%v", pk)

	ids := map[string]int64{}
	// SIP: sipp calls the number and accepts the agent's REFER.
	uac := siptest.Sipp(t, "../../sip/testdata/sipp/uac_refer.xml", 20*time.Second, "-s", "+14155550100", "-m", "1", "127.0.0.1:"+strconv.Itoa(sv.sipPort))
	require.NoError(t, uac.Wait(), "the caller was transferred to the front desk; serve's log:\n%s", sv.stderr.String())
	ids["sip"] = lastCall(t, call, "inbound")
	// WebRTC: a pion client starts a widget call.
	ids["webrtc"] = pionWidgetCall(t, sv.base, pk["key"].(string), func() bool { return len(hooks.of("/tools", lastCallOr(call, "web"))) > 0 })
	// The realtime WebSocket with the saved agent.
	ids["realtime"] = realtimeAgentCall(t, sv.base, key, agentID, func(id int64) bool { return len(hooks.of("/tools", id)) > 0 })

	var exchangeKeys, eventKeys []string
	for _, ch := range []string{"sip", "webrtc", "realtime"} {
		id := ids[ch]
		typ := "web.tool"
		if ch == "sip" {
			typ = "telephony.tool"
		}
		// The blocking exchange with the organization's webhook.
		var x []map[string]any
		require.Eventually(t, func() bool { x = hooks.of("/legacy", id); return len(x) > 0 }, 15*time.Second, 50*time.Millisecond, ch)
		require.Len(t, x, 1, "%s: one exchange (transfer_call is the node's own)", ch)
		require.Equal(t, typ, x[0]["type"], ch)
		d := x[0]["data"].(map[string]any)
		require.Equal(t, "book_table", d["name"], ch)
		require.Equal(t, "call_book1", d["tool_call_id"], ch)
		require.Equal(t, float64(agentID), d["agent_id"], ch)
		require.Equal(t, map[string]any{"party": float64(2)}, d["arguments"], ch)
		if exchangeKeys == nil {
			exchangeKeys = keys(d)
		}
		require.Equal(t, exchangeKeys, keys(d), "%s: the exchange payload has the same shape on every channel", ch)

		// The tool events: one per run.
		want := []string{"book_table"}
		if ch == "sip" {
			want = append(want, "transfer_call")
		}
		var evs []map[string]any
		require.Eventually(t, func() bool { evs = hooks.of("/tools", id); return len(evs) >= len(want) }, 15*time.Second, 50*time.Millisecond, ch)
		var names []string
		for _, ev := range evs {
			require.Equal(t, typ, ev["type"], ch)
			d := ev["data"].(map[string]any)
			names = append(names, d["name"].(string))
			if eventKeys == nil {
				eventKeys = keys(d)
			}
			require.Equal(t, eventKeys, keys(d), "%s: the tool event has the same shape on every channel", ch)
			if d["name"] == "book_table" {
				require.JSONEq(t, `{"booked": true}`, d["output"].(string), ch)
			}
		}
		require.ElementsMatch(t, want, names, ch)

		// The call's history: the same items for the webhook tool.
		var items []any
		require.Eventually(t, func() bool {
			_, h := call("GET", fmt.Sprintf("/v1/calls/%d/history", id), "")
			items, _ = h["items"].([]any)
			return slices.ContainsFunc(items, func(it any) bool {
				m := it.(map[string]any)
				return m["type"] == "tool_result" && m["name"] == "book_table"
			})
		}, 20*time.Second, 100*time.Millisecond, "%s: no tool_result in the history", ch)
		var tools []string
		for _, it := range items {
			m := it.(map[string]any)
			if (m["type"] == "tool_call" || m["type"] == "tool_result") && m["name"] == "book_table" {
				tools = append(tools, m["type"].(string)+":"+m["tool_call_id"].(string))
			}
			if m["type"] == "transfer" {
				require.Equal(t, "sip", ch, "only the phone call transfers")
				require.Equal(t, "+14155550123", m["destination"])
			}
		}
		require.Equal(t, []string{"tool_call:call_book1", "tool_result:call_book1"}, tools, ch)
	}
}

// lastCall returns the id of the newest call of direction.
func lastCall(t *testing.T, call func(method, path, body string) (int, map[string]any), direction string) int64 {
	t.Helper()
	var id int64
	require.Eventually(t, func() bool { id = lastCallOr(call, direction); return id != 0 }, 10*time.Second, 50*time.Millisecond)
	return id
}

// lastCallOr is lastCall's id, 0 when there is none yet.
func lastCallOr(call func(method, path, body string) (int, map[string]any), direction string) int64 {
	_, list := call("GET", "/v1/calls?direction="+direction, "")
	rs, _ := list["results"].([]any)
	if len(rs) == 0 {
		return 0
	}
	id, _ := rs[0].(map[string]any)["call_id"].(float64)
	return int64(id)
}

// pionWidgetCall starts a widget call from a pion peer connection (the
// page's origin localhost), holds it until done reports true and hangs
// up; it returns the call's id.
func pionWidgetCall(t *testing.T, base, pk string, done func() bool) int64 {
	t.Helper()
	se := pion.SettingEngine{}
	se.SetIncludeLoopbackCandidate(true)
	se.SetNetworkTypes([]pion.NetworkType{pion.NetworkTypeUDP4})
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	m := &pion.MediaEngine{}
	require.NoError(t, m.RegisterDefaultCodecs())
	pc, err := pion.NewAPI(pion.WithMediaEngine(m), pion.WithSettingEngine(se)).NewPeerConnection(pion.Configuration{})
	require.NoError(t, err)
	defer pc.Close()
	track, err := pion.NewTrackLocalStaticSample(pion.RTPCodecCapability{MimeType: pion.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "mic", "client")
	require.NoError(t, err)
	_, err = pc.AddTransceiverFromTrack(track, pion.RTPTransceiverInit{Direction: pion.RTPTransceiverDirectionSendrecv})
	require.NoError(t, err)
	_, err = pc.CreateDataChannel("events", nil)
	require.NoError(t, err)
	connected := make(chan struct{})
	var once sync.Once
	pc.OnConnectionStateChange(func(s pion.PeerConnectionState) {
		if s == pion.PeerConnectionStateConnected {
			once.Do(func() { close(connected) })
		}
	})
	offer, err := pc.CreateOffer(nil)
	require.NoError(t, err)
	gathered := pion.GatheringCompletePromise(pc)
	require.NoError(t, pc.SetLocalDescription(offer))
	<-gathered
	body, _ := json.Marshal(map[string]string{"publishable_key": pk, "sdp": pc.LocalDescription().SDP})
	req, _ := http.NewRequest("POST", base+"/v1/widget/calls", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://localhost")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var ans struct {
		CallID int64  `json:"call_id"`
		SDP    string `json:"sdp"`
	}
	b, _ := io.ReadAll(res.Body)
	require.Equal(t, 201, res.StatusCode, "%s", b)
	require.NoError(t, json.Unmarshal(b, &ans))
	require.NoError(t, pc.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeAnswer, SDP: ans.SDP}))
	select {
	case <-connected:
	case <-time.After(15 * time.Second):
		t.Fatal("the widget call's media did not connect")
	}
	require.Eventually(t, done, 20*time.Second, 50*time.Millisecond, "no tool event of the widget call")
	return ans.CallID
}

// realtimeAgentCall opens a realtime socket with the saved agent, reads
// its events until done(call id) reports true and closes it; it returns
// the call's id (from session.updated).
func realtimeAgentCall(t *testing.T, base, key string, agentID int64, done func(int64) bool) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, rw := dialRealtimeAgent(t, ctx, base, key, agentID)
	defer nc.Close()
	var id int64
	deadline := time.Now().Add(25 * time.Second)
	for time.Now().Before(deadline) {
		_ = nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		data, op, err := wsutil.ReadServerData(rw)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			if id != 0 && done(id) {
				return id
			}
			continue
		}
		require.NoError(t, err)
		if op != ws.OpText {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Session struct {
				CallID string `json:"call_id"`
			} `json:"session"`
		}
		require.NoError(t, json.Unmarshal(data, &ev))
		if ev.Type == "error" {
			t.Fatalf("realtime error: %s", data)
		}
		if id == 0 && ev.Type == "session.updated" {
			id, _ = strconv.ParseInt(ev.Session.CallID, 10, 64)
		}
		if id != 0 && done(id) {
			return id
		}
	}
	t.Fatalf("no tool event of the realtime call %d", id)
	return 0
}

// dialRealtimeAgent opens a realtime socket for the saved agent with key:
// the connection (its deadlines, Close) and what reads and writes frames
// on it (the handshake's buffered bytes first).
func dialRealtimeAgent(t testing.TB, ctx context.Context, base, key string, agentID int64) (net.Conn, io.ReadWriter) {
	t.Helper()
	d := ws.Dialer{Header: ws.HandshakeHeaderHTTP(http.Header{"Authorization": {"Bearer " + key}})}
	u := strings.Replace(base, "http://", "ws://", 1) + "/v1/realtime?agent_id=" + strconv.FormatInt(agentID, 10)
	nc, br, _, err := d.Dial(ctx, u)
	require.NoError(t, err)
	var r io.Reader = nc
	if br != nil {
		r = io.MultiReader(br, nc)
	}
	return nc, struct {
		io.Reader
		io.Writer
	}{r, nc}
}
