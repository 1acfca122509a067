package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/media"
)

// contextRunner runs tools and adds context for each caller turn it is
// asked about, keeping the turns.
type contextRunner struct {
	runner
	mu    sync.Mutex
	turns []string
}

func (r *contextRunner) TurnContext(_ context.Context, callerText string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turns = append(r.turns, callerText)
	return "Notes for: " + callerText
}

func (r *contextRunner) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.turns...)
}

// TestTurnContext: a tool runner that implements TurnContext adds its text
// as a last system message of each request answering a caller turn (the
// follow-up after that turn's tool call too), and of no other request:
// not a speak-first greeting, not an out-of-band answer. The conversation
// does not keep it.
func TestTurnContext(t *testing.T) {
	lm := &fakeLLM{scripts: [][]llm.Chunk{
		say("Hello."),
		{{ToolCall: &llm.ToolCall{ID: "c1", Name: "book", Arguments: `{}`}}, {FinishReason: "tool_calls"}},
		say("Booked."),
	}}
	r := &contextRunner{}
	m := newSim(t, Config{OutputRate: media.Rate16k, SpeakFirst: true, Tools: []llm.Tool{{Name: "book"}}},
		Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 50}, Tools: r})
	m.untilDone(200)
	require.Empty(t, r.asked(), "no caller turn to answer yet")
	require.Len(t, lm.waitRequests(t, 1)[0].Messages, 1)

	const q = "Can I book for two?"
	require.NoError(t, m.s.CreateItem("u", Item{Type: ItemMessage, Role: RoleUser, Content: []Content{{Type: InputText, Text: q}}}, ""))
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	reqs := lm.waitRequests(t, 3)
	for _, req := range reqs[1:] {
		last := req.Messages[len(req.Messages)-1]
		require.Equal(t, llm.Message{Role: llm.RoleSystem, Content: "Notes for: " + q}, last)
		require.Equal(t, 1, countRole(req.Messages, llm.RoleSystem)-1, "one note, besides the instructions")
	}
	require.Equal(t, llm.RoleTool, reqs[2].Messages[len(reqs[2].Messages)-2].Role, "the follow-up after the tool call has it too")
	require.Equal(t, []string{q, q}, r.asked())

	// The answer plays out; then an out-of-band response.
	deadline := time.Now().Add(5 * time.Second)
	for count[ResponseDone](m.k) < 3 && time.Now().Before(deadline) {
		if !m.tick(nil) {
			time.Sleep(100 * time.Microsecond)
		}
	}
	require.Equal(t, 3, count[ResponseDone](m.k), kinds(m.k.all()))
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{OutOfBand: true}))
	reqs = lm.waitRequests(t, 4)
	require.Equal(t, 1, countRole(reqs[3].Messages, llm.RoleSystem), "out of band: no note")
	require.Len(t, r.asked(), 2)
}

func countRole(msgs []llm.Message, role string) int {
	n := 0
	for _, m := range msgs {
		if m.Role == role {
			n++
		}
	}
	return n
}
