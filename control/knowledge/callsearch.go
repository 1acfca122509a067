package knowledge

import (
	"context"
	"slices"

	"github.com/voiced/voiced/storage"
)

// Passage is one passage a call's knowledge search found.
type Passage struct {
	DocumentName, Text string
}

// CallSearch is the knowledge search of live calls (call.Knowledge), by
// the service's Search (hybrid when embeddings are configured).
type CallSearch struct{ s *Service }

// NewCallSearch returns live calls' search over s.
func NewCallSearch(s *Service) CallSearch { return CallSearch{s} }

// SearchKnowledge returns the best limit passages for query among org
// orgID's documents that are in bases or listed in docs (either list may
// be empty; both empty finds nothing), best first.
func (c CallSearch) SearchKnowledge(ctx context.Context, orgID int64, bases, docs []string, query string, limit int) ([]Passage, error) {
	// Search ANDs its two filters; an agent's knowledge is their union.
	// With both lists the bases are resolved to their documents first, so
	// the union is one search (one index scan, one ranking) rather than
	// two merged by score.
	q := storage.KnowledgeQuery{Text: query, Limit: limit, BaseIDs: bases, DocumentIDs: docs}
	switch {
	case len(bases) == 0 && len(docs) == 0:
		return nil, nil
	case len(bases) > 0 && len(docs) > 0:
		inBases, err := c.s.store.BaseDocumentIDs(ctx, orgID, bases)
		if err != nil {
			return nil, err
		}
		q.BaseIDs, q.DocumentIDs = nil, append(slices.Clip(docs), inBases...)
	}
	hits, _, err := c.s.Search(ctx, orgID, q)
	if err != nil {
		return nil, err
	}
	out := make([]Passage, len(hits))
	for i, h := range hits {
		text := h.Text
		if h.Context != "" {
			text = h.Context + ": " + text
		}
		out[i] = Passage{DocumentName: h.DocumentName, Text: text}
	}
	return out, nil
}
