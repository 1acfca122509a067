package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws/wsutil"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
)

// The fact only the attached document holds, and a contradicting one in
// a document of the same organization the agent is not given.
const (
	kbFact     = "Late checkout at the Zephyr Inn costs 35 euros and ends at two in the afternoon."
	kbDecoy    = "Late checkout at the Zephyr Inn costs 99 euros."
	kbQuestion = "How much does late checkout cost?"
)

// kbModel is the scripted model (an OpenAI-compatible chat completions
// server at the provider boundary). With tool set, it answers a request
// holding no tool result with a search_knowledge_base call, then in
// words; without, it always answers in words. It keeps every request's
// messages.
type kbModel struct {
	tool bool
	mu   sync.Mutex
	reqs [][]kbMsg
}

type kbMsg struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
}

func (m *kbModel) text(msg kbMsg) string { s, _ := msg.Content.(string); return s }

func (m *kbModel) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []kbMsg `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", 400)
			return
		}
		results, query := 0, "late checkout cost"
		for _, msg := range req.Messages {
			if msg.Role == "tool" {
				results++
			}
			if q := m.text(msg); msg.Role == "user" && q != "" {
				query = q // the caller's question, when there is one
			}
		}
		m.mu.Lock()
		m.reqs = append(m.reqs, req.Messages)
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) { sseChunk(w, delta, finish) }
		if m.tool && results == 0 {
			args, _ := json.Marshal(map[string]string{"query": query})
			chunk(fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_kb1","type":"function","function":{"name":"search_knowledge_base","arguments":%q}}]}`, args), "")
			chunk(`{}`, "tool_calls")
		} else {
			chunk(`{"role":"assistant","content":"It is thirty five euros."}`, "")
			chunk(`{}`, "stop")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (m *kbModel) requests() [][]kbMsg {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]kbMsg(nil), m.reqs...)
}

// toolResult is the first search_knowledge_base result the model was
// sent ("" before one).
func (m *kbModel) toolResult() string {
	for _, req := range m.requests() {
		for _, msg := range req {
			if msg.Role == "tool" && msg.ToolCallID == "call_kb1" {
				return m.text(msg)
			}
		}
	}
	return ""
}

// uploadDoc uploads text as a file through the API (multipart) and waits
// for its ingestion to finish: the document's id.
func uploadDoc(t *testing.T, sv *served, filename, text string) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", filename)
	require.NoError(t, err)
	_, _ = fw.Write([]byte(text))
	require.NoError(t, mw.Close())
	req, _ := http.NewRequest("POST", sv.base+"/v1/knowledge/documents", &body)
	req.Header.Set("Authorization", "Bearer "+sv.key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 201, res.StatusCode, "%s", b)
	var out struct {
		Documents []struct {
			ID string `json:"id"`
		} `json:"documents"`
	}
	require.NoError(t, json.Unmarshal(b, &out))
	require.Len(t, out.Documents, 1)
	id := out.Documents[0].ID
	require.Eventually(t, func() bool {
		_, d := sv.call("GET", "/v1/knowledge/documents/"+id, "")
		require.NotEqual(t, "failed", d["status"], "%v", d)
		return d["status"] == "ready"
	}, 20*time.Second, 50*time.Millisecond, "the document was not ingested")
	return id
}

// knowledgeDocs uploads the document the agent gets and the decoy it
// does not.
func knowledgeDocs(t *testing.T, sv *served) (doc string) {
	doc = uploadDoc(t, sv, "zephyr-policies.txt", "Zephyr Inn house policies.\n\nBreakfast is served from seven to ten.\n\n"+kbFact+"\n\nPets are welcome in the garden rooms.")
	uploadDoc(t, sv, "old-rates.txt", "Old rates, no longer valid.\n\n"+kbDecoy)
	return doc
}

// retrievals returns the knowledge_retrieval items of call id's history.
func retrievals(call func(method, path, body string) (int, map[string]any), id int64) []map[string]any {
	_, h := call("GET", fmt.Sprintf("/v1/calls/%d/history", id), "")
	items, _ := h["items"].([]any)
	var out []map[string]any
	for _, it := range items {
		if m := it.(map[string]any); m["type"] == "knowledge_retrieval" {
			out = append(out, m)
		}
	}
	return out
}

// TestKnowledgeToolMidCall: a document is uploaded through the API and
// ingested; an agent attached to it (by document on the realtime
// session, through a knowledge base on the SIP call) is asked on the
// call (the realtime caller's question goes in text); the scripted model
// calls search_knowledge_base, and the passage
// with the answer, under its document's name, reaches the model's next
// request, while a contradicting document of the same organization that
// the agent was not given does not. The search is a knowledge_retrieval
// item of the call's history with its latency.
func TestKnowledgeToolMidCall(t *testing.T) {
	for _, channel := range []string{"realtime", "sip"} {
		t.Run(channel, func(t *testing.T) {
			if channel == "sip" {
				siptest.Binary(t, "sipp", "sip-tester")
			}
			m := &kbModel{tool: true}
			model := m.server(t)
			sv := startTelephonyServe(t, "--call-loopback=false", "--llm-base-url", model.URL+"/v1")
			defer sv.stop(t)
			doc := knowledgeDocs(t, sv)
			attach := fmt.Sprintf(`"knowledge_document_ids":[%q]`, doc)
			if channel == "sip" {
				st, kb := sv.call("POST", "/v1/knowledge-bases", `{"name":"Policies"}`)
				require.Equal(t, 201, st, "%v", kb)
				st, res := sv.call("POST", "/v1/knowledge-bases/"+kb["id"].(string)+"/documents", fmt.Sprintf(`{"document_ids":[%q]}`, doc))
				require.Less(t, st, 300, "%v", res)
				attach = fmt.Sprintf(`"knowledge_base_ids":[%q]`, kb["id"])
			}
			// On the realtime session the caller asks in text and the model
			// searches with the question; the phone caller says nothing (no
			// speech-to-text here): the agent speaks first and the model
			// searches with words of its own.
			order, query := "user_first", kbQuestion
			if channel == "sip" {
				order, query = "agent_first", "late checkout cost"
			}
			st, ag := sv.call("POST", "/v1/agents", `{"name":"Concierge","voice":"espeak:en-us","prompt":"Answer questions about the inn.","inbound_speak_order":"`+order+`",`+attach+`}`)
			require.Equal(t, 201, st, "%v", ag)
			done := func() bool { return m.toolResult() != "" && len(m.requests()) >= 2 }

			var id int64
			switch channel {
			case "realtime":
				id = realtimeTextTurn(t, sv, objID(ag), kbQuestion, done)
			case "sip":
				uerr := sippCallsAgent(t, sv, objID(ag))
				require.True(t, done(), "the model saw %d requests; sipp: %v", len(m.requests()), uerr)
				require.NoError(t, uerr, "the caller stayed on the line and hung up")
				id = lastCall(t, sv.call, "inbound")
			}
			res := m.toolResult()
			require.Contains(t, res, `From "zephyr-policies.txt"`, "the passage names its document")
			require.Contains(t, res, "35 euros", "the passage with the answer reached the model")
			require.NotContains(t, res, "99 euros", "a document the agent was not given is not searched")
			require.LessOrEqual(t, len(res), 3*600, "a few short passages")
			var rs []map[string]any
			require.Eventually(t, func() bool { rs = retrievals(sv.call, id); return len(rs) == 1 }, 10*time.Second, 50*time.Millisecond)
			require.Equal(t, "call_kb1", rs[0]["tool_call_id"])
			require.Equal(t, "search_knowledge_base", rs[0]["name"])
			require.Equal(t, query, rs[0]["text"])
			require.Equal(t, res, rs[0]["output"])
			require.Contains(t, rs[0], "latency_ms")
		})
	}
}

// TestKnowledgeBeforeReply: with knowledge_retrieve_before_reply, the
// caller's turn (a realtime text turn) is searched before the model is
// asked: the passage is in that very request, as context after the
// caller's words, with no tool call; the retrieval is a history item
// with its latency and no tool call id. Without the option the same
// agent's request carries no passage.
func TestKnowledgeBeforeReply(t *testing.T) {
	m := &kbModel{}
	model := m.server(t)
	sv := startTelephonyServe(t, "--call-loopback=false", "--llm-base-url", model.URL+"/v1")
	defer sv.stop(t)
	doc := knowledgeDocs(t, sv)
	for _, before := range []bool{true, false} {
		st, ag := sv.call("POST", "/v1/agents", fmt.Sprintf(`{"name":"Concierge","voice":"espeak:en-us","prompt":"Answer questions about the inn.",
			"inbound_speak_order":"user_first","knowledge_document_ids":[%q],"knowledge_retrieve_before_reply":%t}`, doc, before))
		require.Equal(t, 201, st, "%v", ag)
		asked := len(m.requests())
		id := realtimeTextTurn(t, sv, objID(ag), kbQuestion, nil)
		reqs := m.requests()
		require.Len(t, reqs, asked+1, "one request for the turn: no tool round trip")
		msgs := reqs[asked]
		var user, context int
		for i, msg := range msgs {
			require.NotEqual(t, "tool", msg.Role)
			if msg.Role == "user" && m.text(msg) == kbQuestion {
				user = i
			}
			if msg.Role == "system" && strings.Contains(m.text(msg), "35 euros") {
				context = i
			}
		}
		require.NotZero(t, user, "the caller's turn is in the request: %v", msgs)
		if !before {
			require.Zero(t, context, "off: no passage in the request")
			require.Empty(t, retrievals(sv.call, id))
			continue
		}
		require.Greater(t, context, user, "the passage follows the caller's turn: %v", msgs)
		require.Contains(t, m.text(msgs[context]), `From "zephyr-policies.txt"`)
		require.NotContains(t, m.text(msgs[context]), "99 euros")
		var rs []map[string]any
		require.Eventually(t, func() bool { rs = retrievals(sv.call, id); return len(rs) == 1 }, 10*time.Second, 50*time.Millisecond)
		require.Equal(t, kbQuestion, rs[0]["text"])
		require.NotContains(t, rs[0], "tool_call_id")
		require.Contains(t, rs[0]["output"], "35 euros")
		require.Contains(t, rs[0], "latency_ms")
	}
}

// realtimeTextTurn opens a realtime session with the saved agent, sends
// one user text turn and asks for a text response; it returns the call's
// id at a response.done once until (nil: at once) reports true.
func realtimeTextTurn(t testing.TB, sv *served, agentID int64, text string, until func() bool) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, rw := dialRealtimeAgent(t, ctx, sv.base, sv.key, agentID)
	defer nc.Close()
	return textTurn(t, sv, nc, rw, text, until)
}

// textTurn sends one user text turn on an open realtime socket once the
// session is up and asks for a text response; it returns the call's id
// at a response.done once until (nil: at once) reports true.
func textTurn(t testing.TB, sv *served, nc net.Conn, rw io.ReadWriter, text string, until func() bool) int64 {
	t.Helper()
	send := func(v string) { require.NoError(t, wsutil.WriteClientText(nc, []byte(v))) }
	var id int64
	sent := false
	for {
		var ev struct {
			Type    string `json:"type"`
			Session struct {
				CallID string `json:"call_id"`
			} `json:"session"`
		}
		nextRealtimeEvent(t, sv, nc, rw, &ev)
		if ev.Type == "session.updated" && !sent {
			id, _ = strconv.ParseInt(ev.Session.CallID, 10, 64)
			b, _ := json.Marshal(text)
			send(fmt.Sprintf(`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":%s}]}}`, b))
			send(`{"type":"response.create","response":{"output_modalities":["text"]}}`)
			sent = true
		}
		if ev.Type == "response.done" && (until == nil || until()) {
			return id
		}
	}
}

// sseChunk writes one chat.completion.chunk event of a scripted model's
// stream: delta (a JSON object) and the finish reason ("" for null).
func sseChunk(w io.Writer, delta, finish string) {
	fin := "null"
	if finish != "" {
		fin = `"` + finish + `"`
	}
	fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", delta, fin)
}

// sippCallsAgent puts +14155550100 on a VoIP connection from loopback
// (PCMA), answered by agent agentID, and has sipp call it, stay 6 s and
// hang up: sipp's verdict.
func sippCallsAgent(t *testing.T, sv *served, agentID int64) error {
	t.Helper()
	st, conn := sv.call("POST", "/v1/voip-connections", `{"host":"127.0.0.1","port":5999,"allowed_inbound_addresses":["127.0.0.1"],"codecs":["PCMA"]}`)
	require.Equal(t, 201, st, "%v", conn)
	st, num := sv.call("POST", "/v1/phone-numbers", fmt.Sprintf(`{"source":"voip","number":"+14155550100","voip_connection_id":%d}`, objID(conn)))
	require.Equal(t, 201, st, "%v", num)
	st, num = sv.call("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", objID(num)), fmt.Sprintf(`{"inbound_agent_id":%d}`, agentID))
	require.Equal(t, 200, st, "%v", num)
	uac := siptest.Sipp(t, "../../sip/testdata/sipp/uac_call.xml", 30*time.Second, "-d", "6000", "-s", "+14155550100", "-m", "1", "127.0.0.1:"+strconv.Itoa(sv.sipPort))
	return uac.Wait()
}
