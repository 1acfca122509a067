package knowledge

import (
	"context"
	"errors"
	"slices"
	"sync"

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
	// Search ANDs its two filters; an agent's knowledge is their union:
	// one search per list, run side by side and merged by score (the
	// scores of one query, BM25 or fused ranks, compare across its
	// filtered searches).
	qs := []storage.KnowledgeQuery{{BaseIDs: bases}, {DocumentIDs: docs}}
	found := make([][]storage.KnowledgeHit, len(qs))
	errs := make([]error, len(qs))
	var wg sync.WaitGroup
	for i, q := range qs {
		if len(q.BaseIDs)+len(q.DocumentIDs) == 0 {
			continue
		}
		q.Text, q.Limit = query, limit
		wg.Go(func() { found[i], _, errs[i] = c.s.Search(ctx, orgID, q) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var hits []storage.KnowledgeHit
	for _, hs := range found {
		for _, h := range hs {
			if !slices.ContainsFunc(hits, func(o storage.KnowledgeHit) bool { return o.ChunkID == h.ChunkID }) {
				hits = append(hits, h)
			}
		}
	}
	slices.SortStableFunc(hits, func(a, b storage.KnowledgeHit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if len(hits) > limit {
		hits = hits[:limit]
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
