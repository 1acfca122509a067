package mcp

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// SearchTool is the tool an agent's model is offered instead of its MCP
// tools when they are more than the agent's mcp_tool_search_threshold.
const SearchTool = "tool_search"

// searchResults is how many tool definitions one search returns at most.
const searchResults = 5

// toolIndex ranks a call's MCP tools against tool_search queries: every
// query term (a run of letters and digits, lowercased) found in a tool's
// name scores 3, found in its description 1; the best searchResults tools
// with a score above 0 are returned, ties in catalog order. It is built
// once per call and read-only after.
type toolIndex struct {
	tools   []CachedTool
	names   []string // lowercased MCP tool names
	descs   []string // lowercased descriptions
	servers []string // display names, for the tool's description
}

func newToolIndex(tools []CachedTool, servers map[string]*callServer) *toolIndex {
	ix := &toolIndex{tools: tools, names: make([]string, len(tools)), descs: make([]string, len(tools))}
	for i, t := range tools {
		ix.names[i] = strings.ToLower(t.MCP.ToolName)
		ix.descs[i] = strings.ToLower(t.Description)
	}
	for _, s := range servers {
		ix.servers = append(ix.servers, s.m.DisplayName)
	}
	sort.Strings(ix.servers)
	return ix
}

// spec is tool_search as the model is offered it.
func (ix *toolIndex) spec() CachedTool {
	return CachedTool{Type: "function", Name: SearchTool,
		Description: fmt.Sprintf("Find the tool to use among %d tools of these services: %s. Describe what you need to do in a few words; "+
			"the best matching tools (at most %d) are returned with their parameters, and you can call them from then on.",
			len(ix.tools), strings.Join(ix.servers, ", "), searchResults),
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"what the tool should do, in a few words"}},"required":["query"]}`)}
}

// terms splits a query into lowercased runs of letters and digits.
func terms(q string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// find returns the indexes of the best tools for query, best first.
func (ix *toolIndex) find(query string) []int {
	ts := terms(query)
	type hit struct{ i, score int }
	var hits []hit
	for i := range ix.tools {
		score := 0
		for _, t := range ts {
			if strings.Contains(ix.names[i], t) {
				score += 3
			}
			if strings.Contains(ix.descs[i], t) {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, hit{i, score})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	out := make([]int, 0, searchResults)
	for _, h := range hits[:min(len(hits), searchResults)] {
		out = append(out, h.i)
	}
	return out
}

// toolSearch runs tool_search: the matching definitions, which become
// callable for the rest of the call (Loaded).
func (ct *CallTools) toolSearch(args string) (string, error) {
	var in struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil || strings.TrimSpace(in.Query) == "" {
		return "", fmt.Errorf("%s needs a query: what the tool should do, in a few words", SearchTool)
	}
	type def struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	found := []def{}
	ct.mu.Lock()
	for _, i := range ct.search.find(in.Query) {
		t := ct.search.tools[i]
		found = append(found, def{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		if !slices.ContainsFunc(ct.loaded, func(l CachedTool) bool { return l.Name == t.Name }) {
			ct.loaded = append(ct.loaded, t)
		}
	}
	ct.mu.Unlock()
	note := "These tools can be called now."
	if len(found) == 0 {
		note = "No tool matches; search again with other words."
	}
	b, err := json.Marshal(map[string]any{"tools": found, "note": note})
	return string(b), err
}

// Loaded returns the tools tool_search has made callable so far, in the
// order they were found.
func (ct *CallTools) Loaded() []CachedTool {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return slices.Clone(ct.loaded)
}

func (ct *CallTools) isLoaded(name string) bool {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return slices.ContainsFunc(ct.loaded, func(l CachedTool) bool { return l.Name == name })
}
