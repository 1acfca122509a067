package scenarios_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeModel is an OpenAI-compatible chat completions server on loopback
// whose answers are scripted on the prompt it is sent: the agent prompt
// carries a directive ("model:down", "model:prose", ...) that picks a
// failure; otherwise it answers what the request asks for, built from
// the request itself, so every answer is deterministic.
type fakeModel struct {
	URL string
	mu  sync.Mutex
	// users holds the user message of every request, in order.
	users []string
}

func newFakeModel(t *testing.T) *fakeModel {
	m := &fakeModel{}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	m.URL = srv.URL + "/v1"
	return m
}

func (m *fakeModel) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.users...)
}

var (
	countRE = regexp.MustCompile(`Write (\d+) test scenarios`)
	idRE    = regexp.MustCompile(`"id":(\d+)`)
	lineRE  = regexp.MustCompile(`(?m)^\[(\d+)\] (Caller|Agent): (.*)$`)
)

func (m *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) != 2 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	user := req.Messages[1].Content
	m.mu.Lock()
	m.users = append(m.users, user)
	m.mu.Unlock()
	var reply string
	switch {
	case strings.Contains(user, "model:down"):
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
		return
	case strings.Contains(user, "model:prose"):
		reply = "Sure! Here are some great scenarios for your agent."
	case strings.Contains(user, "model:trailing"):
		reply = `{"scenarios": []} and more`
	case strings.Contains(user, "model:empty"):
		reply = `{"scenarios": [{"title": "", "scenario_prompt": "no title"}, {"title": "No prompt"}, 7]}`
	case strings.Contains(user, "Scenarios to update"):
		reply = refreshReply(user)
	case strings.Contains(user, "Transcript:"):
		reply = promoteReply(user)
	default:
		reply = generateReply(user)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	// The reply in two pieces, as a stream has it.
	half := len(reply) / 2
	for _, part := range []string{reply[:half], reply[half:]} {
		b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": part}, "finish_reason": nil}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"fake","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
}

// generateReply writes the number of scenarios asked for; with
// "model:wild" in the prompt they break every limit, and with
// "model:many" there are more than asked.
func generateReply(user string) string {
	n, _ := strconv.Atoi(countRE.FindStringSubmatch(user)[1])
	if strings.Contains(user, "model:many") {
		n += 5
	}
	wild := strings.Contains(user, "model:wild")
	fence := strings.Contains(user, "model:fenced")
	var ss []map[string]any
	for i := range n {
		s := map[string]any{"title": fmt.Sprintf("Scenario %d", i+1), "scenario_prompt": fmt.Sprintf("You are caller %d; edge=%v.", i+1, strings.Contains(user, "Include edge cases")),
			"labels": []string{"generated"}, "audio_conditions": map[string]any{"noise_asset": "street", "snr_db": 5},
			"speech_style":    map[string]any{"pace": "fast", "disfluencies": "light", "accent": "en-GB"},
			"caller_behavior": map[string]any{"long_silence_seconds": 3, "dtmf_sequence": "12#", "topic_change": "asks about parking"},
			"telephony":       map[string]any{"voicemail_answer": i == 0}, "direction": "inbound"}
		if wild {
			labels := []string{}
			for j := range 14 {
				labels = append(labels, strconv.Itoa(j)+strings.Repeat("l", 60))
			}
			s = map[string]any{"title": strings.Repeat("T", 250), "scenario_prompt": strings.Repeat("p", 5000), "labels": labels,
				"audio_conditions": map[string]any{"noise_asset": "jungle", "snr_db": 50},
				"speech_style":     map[string]any{"pace": "warp", "accent": "klingon"},
				"caller_behavior":  map[string]any{"long_silence_seconds": 99, "dtmf_sequence": "12ab34#*5678901234", "topic_change": strings.Repeat("x", 600)},
				"telephony":        map[string]any{"voicemail_answer": "yes"}, "direction": "sideways"}
			if i == 1 {
				s["audio_conditions"] = map[string]any{"noise_asset": "cafe", "snr_db": 7}
				s["caller_behavior"] = map[string]any{"long_silence_seconds": -4}
			}
		}
		ss = append(ss, s)
	}
	b, _ := json.Marshal(map[string]any{"scenarios": ss})
	if fence {
		return "```json\n" + string(b) + "\n```"
	}
	return string(b)
}

// refreshReply rewrites every scenario it is sent ("model:partial"
// leaves the last one out).
func refreshReply(user string) string {
	ids := idRE.FindAllStringSubmatch(user, -1)
	if strings.Contains(user, "model:partial") {
		ids = ids[:len(ids)-1]
	}
	var ss []map[string]any
	for _, id := range ids {
		ss = append(ss, map[string]any{"id": json.Number(id[1]), "title": "Refreshed " + id[1], "scenario_prompt": "Refreshed prompt for scenario " + id[1]})
	}
	b, _ := json.Marshal(map[string]any{"scenarios": ss})
	return string(b)
}

// promoteReply makes a scenario whose prompt lists the transcript lines
// the model was shown, so a test sees the focus window.
func promoteReply(user string) string {
	var seen []string
	for _, l := range lineRE.FindAllStringSubmatch(user, -1) {
		seen = append(seen, l[1])
	}
	focus := strings.Contains(user, "<-- the agent's turn that went wrong")
	b, _ := json.Marshal(map[string]any{"scenario": map[string]any{"title": "From production", "scenario_prompt": "Recreate turns " + strings.Join(seen, ",") + fmt.Sprintf(" focus=%v", focus),
		"labels": []string{"production"}, "speech_style": map[string]any{"accent": "en-IN"}}})
	return string(b)
}
