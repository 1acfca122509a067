package call

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/knowledge"
)

// Knowledge searches an organization's knowledge for a call
// (knowledge.CallSearch): the best limit passages for query among its
// documents in bases or listed in docs.
type Knowledge interface {
	SearchKnowledge(ctx context.Context, orgID int64, bases, docs []string, query string, limit int) ([]knowledge.Passage, error)
}

// KnowledgeToolName is the built-in knowledge search tool's.
const KnowledgeToolName = "search_knowledge_base"

// Passages handed to the model per search, and the characters each keeps:
// a voice answer needs a fact or two, not pages.
const (
	knowledgePassages = 3
	passageChars      = 480
	// beforeReplyTimeout bounds a retrieval before a reply: past it the
	// answer goes on without passages.
	beforeReplyTimeout = time.Second
)

// KnowledgeTool is the tool source of an agent's knowledge
// (knowledge_base_ids, knowledge_document_ids): search_knowledge_base,
// and, with knowledge_retrieve_before_reply, passages for the caller's
// last turn before each answer (a ContextSource). Every search is a
// knowledge_retrieval call event with its latency.
type KnowledgeTool struct {
	// Knowledge is the search (nil: no tool).
	Knowledge func() Knowledge
	// Recorder records the retrievals (nil: nowhere).
	Recorder func() Recorder
	Log      *slog.Logger

	// writes are the retrievals being recorded (Wait).
	writes sync.WaitGroup
}

// Wait returns once every retrieval started so far is recorded (or its
// write gave up): the node calls it when it closes.
func (k *KnowledgeTool) Wait() { k.writes.Wait() }

var knowledgeSpec = llm.Tool{Name: KnowledgeToolName,
	Description: "Search the business's documents (policies, prices, menus, opening hours and the like) for facts to answer the caller. " +
		"Use it before answering a question they may cover; say you do not know when it finds nothing.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what to look up, in a few words"}},"required":["query"]}`)}

func (k *KnowledgeTool) search(c *Info) Knowledge {
	if len(c.Agent.KnowledgeBaseIDs)+len(c.Agent.KnowledgeDocumentIDs) == 0 || k.Knowledge == nil {
		return nil
	}
	return k.Knowledge()
}

// Tools implements Source: search_knowledge_base when the agent has
// knowledge.
func (k *KnowledgeTool) Tools(c *Info) []llm.Tool {
	if k.search(c) == nil {
		return nil
	}
	return []llm.Tool{knowledgeSpec}
}

// Run implements Source: the passages for the model's query.
func (k *KnowledgeTool) Run(ctx context.Context, c *Info, tc llm.ToolCall) (string, error) {
	s := k.search(c)
	if s == nil {
		return "", errors.New("this agent has no knowledge to search")
	}
	var args struct {
		Query string `json:"query"`
	}
	if json.Unmarshal([]byte(tc.Arguments), &args) != nil || strings.TrimSpace(args.Query) == "" {
		return "", errors.New(`arguments must be {"query": "what to look up"}`)
	}
	out, err := k.retrieve(ctx, s, c, args.Query, tc)
	if err != nil {
		return "", err
	}
	if out == "" {
		return "Nothing in the knowledge base matches that.", nil
	}
	return out, nil
}

// TurnContext implements ContextSource: with knowledge_retrieve_before_reply,
// the passages for the caller's turn, as a note for the model.
func (k *KnowledgeTool) TurnContext(ctx context.Context, c *Info, callerText string) string {
	s := k.search(c)
	if s == nil || !c.Agent.KnowledgeBeforeReply || strings.TrimSpace(callerText) == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, beforeReplyTimeout)
	defer cancel()
	out, err := k.retrieve(ctx, s, c, callerText, llm.ToolCall{})
	if err != nil {
		k.Log.Warn("knowledge not retrieved before the reply", "call_id", c.CallID, "err", err)
		return ""
	}
	if out == "" {
		return ""
	}
	return "Passages from the knowledge base that may answer the caller's last turn:\n" + out
}

// retrieve runs one search and records it; tc is the tool call it
// answers (zero before a reply). The passages come back one per line,
// each with its document's name.
func (k *KnowledgeTool) retrieve(ctx context.Context, s Knowledge, c *Info, query string, tc llm.ToolCall) (string, error) {
	start := time.Now()
	ps, err := s.SearchKnowledge(ctx, c.OrgID, c.Agent.KnowledgeBaseIDs, c.Agent.KnowledgeDocumentIDs, query, knowledgePassages)
	end := time.Now()
	if err != nil {
		return "", err
	}
	out := speakable(ps, query)
	k.record(c, calllog.CallEvent{Kind: calllog.EventKnowledge, At: end, Text: query, Start: start, End: end, Output: out,
		ToolCallID: tc.ID, ToolName: tc.Name})
	return out, nil
}

// record appends the retrieval to the call's record off the answer's
// path: the search is what the turn waits for, not the write.
func (k *KnowledgeTool) record(c *Info, ev calllog.CallEvent) {
	if k.Recorder == nil || c.Direction == calllog.DirectionTest {
		return
	}
	r := k.Recorder()
	if r == nil {
		return
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	ev.ID = "knowledge-" + hex.EncodeToString(id[:])
	k.writes.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Append(ctx, c.CallID, []calllog.CallEvent{ev}); err != nil {
			k.Log.Warn("knowledge retrieval not recorded", "call_id", c.CallID, "err", err)
		}
	})
}

// speakable renders passages for a voice answer: each cut to
// passageChars around the sentences that mention the query most, after
// its document's name.
func speakable(ps []knowledge.Passage, query string) string {
	var b strings.Builder
	terms := words(query)
	for _, p := range ps {
		b.WriteString(`From "`)
		b.WriteString(p.DocumentName)
		b.WriteString(`": `)
		b.WriteString(excerpt(p.Text, terms, passageChars))
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// excerpt is text when it fits in max characters, else the run of whole
// sentences around the one with the most query terms that fits (a
// single longer sentence is cut at a word).
func excerpt(text string, terms map[string]bool, max int) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) <= max {
		return text
	}
	sents := sentences(text)
	best, bestScore := 0, -1
	for i, s := range sents {
		n := 0
		for w := range words(s) {
			if terms[w] {
				n++
			}
		}
		if n > bestScore {
			best, bestScore = i, n
		}
	}
	lo, hi := best, best+1
	size := func(i, j int) int { return utf8.RuneCountInString(strings.Join(sents[i:j], " ")) }
	for {
		grew := false
		if hi < len(sents) && size(lo, hi+1) <= max {
			hi, grew = hi+1, true
		}
		if lo > 0 && size(lo-1, hi) <= max {
			lo, grew = lo-1, true
		}
		if !grew {
			break
		}
	}
	out := strings.Join(sents[lo:hi], " ")
	if r := []rune(out); len(r) > max {
		cut := string(r[:max])
		if i := strings.LastIndexByte(cut, ' '); i > 0 {
			cut = cut[:i]
		}
		out = cut + "…"
	}
	return out
}

// sentences splits text after ., ! or ? followed by a space.
func sentences(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text)-1; i++ {
		if (text[i] == '.' || text[i] == '!' || text[i] == '?') && text[i+1] == ' ' {
			out = append(out, text[start:i+1])
			start = i + 2
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// words are text's lowercase words (letters and digits).
func words(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out[w] = true
	}
	return out
}
