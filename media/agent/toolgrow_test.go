package agent

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/media"
)

// growRunner makes "found" callable once "find" has run.
type growRunner struct {
	mu    sync.Mutex
	found bool
}

func (g *growRunner) RunTool(_ context.Context, c llm.ToolCall) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.found = g.found || c.Name == "find"
	return `{"ok":true}`, nil
}

func (g *growRunner) GrownTools() []llm.Tool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.found {
		return nil
	}
	return []llm.Tool{{Name: "found"}}
}

// TestGrownToolsAreOffered: a ToolGrower's tools join Config.Tools in the
// model requests after the run that grew them.
func TestGrownToolsAreOffered(t *testing.T) {
	lm := &fakeLLM{scripts: [][]llm.Chunk{
		{{ToolCall: &llm.ToolCall{ID: "c1", Name: "find", Arguments: `{}`}}, {FinishReason: "tool_calls"}},
		say("Found it."),
	}}
	m := newSim(t, Config{OutputRate: media.Rate16k, Tools: []llm.Tool{{Name: "find"}}},
		Deps{LLM: lm, STT: &fakeSTT{}, TTS: &fakeTTS{wordMS: 50}, Tools: &growRunner{}})
	require.NoError(t, m.s.CreateResponse("", ResponseOptions{}))
	reqs := lm.waitRequests(t, 2)
	names := func(r llm.Request) (out []string) {
		for _, tl := range r.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	require.Equal(t, []string{"find"}, names(reqs[0]))
	require.Equal(t, []string{"find", "found"}, names(reqs[1]))
}
