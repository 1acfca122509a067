package call

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/knowledge"
)

// TestSpeakablePassages: passages come back one per line after their
// document's name; a long one is cut to whole sentences around the one
// that mentions the query most, within passageChars.
func TestSpeakablePassages(t *testing.T) {
	filler := strings.Repeat("Rooms are cleaned daily by our friendly staff. ", 20)
	long := filler + "Late checkout costs 35 euros and ends at two. " + filler
	out := speakable([]knowledge.Passage{{DocumentName: "Policies", Text: long}, {DocumentName: "Menu", Text: "Breakfast  is\nserved at seven."}}, "late checkout cost")
	lines := strings.Split(out, "\n")
	require.Len(t, lines, 2)
	require.True(t, strings.HasPrefix(lines[0], `From "Policies": `), lines[0])
	require.Contains(t, lines[0], "Late checkout costs 35 euros and ends at two.")
	body := strings.TrimPrefix(lines[0], `From "Policies": `)
	require.LessOrEqual(t, utf8.RuneCountInString(body), passageChars)
	require.True(t, strings.HasSuffix(body, "."), "whole sentences: %q", body)
	require.Equal(t, `From "Menu": Breakfast is served at seven.`, lines[1], "short passages whole, spaces folded")

	// One sentence longer than the budget is cut at a word.
	one := excerpt(strings.Repeat("word ", 200), words("word"), 50)
	require.LessOrEqual(t, utf8.RuneCountInString(one), 51)
	require.True(t, strings.HasSuffix(one, "word…"), one)
	require.Empty(t, speakable(nil, "anything"))
}

type oneDoc struct{}

func (oneDoc) SearchKnowledge(context.Context, int64, []string, []string, string, int) ([]knowledge.Passage, error) {
	return []knowledge.Passage{{DocumentName: "Hours", Text: "We open at nine."}}, nil
}

// heldRecorder holds every Append until release is closed.
type heldRecorder struct {
	release  chan struct{}
	appended chan calllog.CallEvent
}

func (r heldRecorder) Append(_ context.Context, _ int64, evs []calllog.CallEvent) error {
	<-r.release
	for _, e := range evs {
		r.appended <- e
	}
	return nil
}

func (heldRecorder) ToolEvent(context.Context, int64, calllog.ToolRun) error { return nil }

func (heldRecorder) Answered(context.Context, int64, time.Time) error { return nil }

// TestKnowledgeRecordsAreWaitedFor: the tool answers without waiting for
// the retrieval's record, and Wait (the node's Close) returns only once
// that record is written.
func TestKnowledgeRecordsAreWaitedFor(t *testing.T) {
	rec := heldRecorder{release: make(chan struct{}), appended: make(chan calllog.CallEvent, 1)}
	k := &KnowledgeTool{Knowledge: func() Knowledge { return oneDoc{} }, Recorder: func() Recorder { return rec }, Log: slog.New(slog.DiscardHandler)}
	c := &Info{CallID: 7, OrgID: 1, Direction: calllog.DirectionWeb, Agent: control.AgentConfig{KnowledgeDocumentIDs: []string{"d"}}}
	out, err := k.Run(context.Background(), c, llm.ToolCall{ID: "call_1", Name: KnowledgeToolName, Arguments: `{"query":"open"}`})
	require.NoError(t, err)
	require.Contains(t, out, "We open at nine.")

	waited := make(chan struct{})
	go func() { k.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while the record was still being written")
	case <-time.After(50 * time.Millisecond):
	}
	close(rec.release)
	<-waited
	e := <-rec.appended
	require.Equal(t, calllog.EventKnowledge, e.Kind)
	require.Equal(t, "call_1", e.ToolCallID)
	require.False(t, e.End.Before(e.Start))
}
