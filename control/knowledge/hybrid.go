package knowledge

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/voiced/voiced/ai/embed"
	"github.com/voiced/voiced/storage"
)

// Search modes, the search response's mode.
const (
	ModeBM25   = "bm25"
	ModeHybrid = "hybrid"
)

// EmbedConfig configures the optional embeddings provider: an
// OpenAI-compatible embeddings API (OpenAI, Ollama, vLLM, llama.cpp).
// An empty BaseURL means none: search is BM25 alone.
type EmbedConfig struct {
	// BaseURL is the API root up to and including /v1.
	BaseURL string
	// APIKey is sent as a bearer token when set.
	APIKey string
	// Model is the embedding model; default text-embedding-3-small.
	Model string
}

// HybridStore is what semantic search needs beyond BM25 and the vectors.
type HybridStore interface {
	ChunksAt(ctx context.Context, orgID int64, keys []storage.ChunkKey) ([]storage.KnowledgeHit, error)
	BaseDocumentIDs(ctx context.Context, orgID int64, baseIDs []string) ([]string, error)
	RequeueUnembedded(ctx context.Context, model string) (int64, error)
}

const (
	// rrfK is reciprocal rank fusion's constant: a chunk scores
	// 1/(rrfK+rank) in each list it is in (Cormack et al., SIGIR 2009).
	rrfK = 60
	// queryEmbedTimeout bounds embedding a query; past it the search
	// answers with BM25 alone rather than keep a caller waiting.
	queryEmbedTimeout = 3 * time.Second
	// embedBatch is how many chunks one embeddings request carries.
	embedBatch = 64
)

func newEmbedder(cfg EmbedConfig) (embed.Embedder, string, error) {
	if cfg.BaseURL == "" {
		return nil, "", nil
	}
	c, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model})
	if err != nil {
		return nil, "", fmt.Errorf("knowledge: embeddings provider: %w", err)
	}
	model := cfg.Model
	if model == "" {
		model = "text-embedding-3-small" // embed.NewOpenAI's default
	}
	return c, model, nil
}

// Search ranks the org's chunks for q, best first: BM25, fused by
// reciprocal rank with vector search when an embeddings provider is
// configured. mode says which ran; a query the provider fails to embed
// in time is answered by BM25 alone (mode bm25).
func (s *Service) Search(ctx context.Context, orgID int64, q storage.KnowledgeQuery) (hits []storage.KnowledgeHit, mode string, err error) {
	if s.hybrid == nil || strings.TrimSpace(q.Text) == "" {
		hits, err = s.store.Search(ctx, orgID, q)
		return hits, ModeBM25, err
	}
	return s.hybrid.search(ctx, orgID, q)
}

// hybridSearch fuses BM25 with in-process vector search.
type hybridSearch struct {
	log      *slog.Logger
	store    Store
	embedder embed.Embedder
	vectors  *vectorIndex
}

func (s *hybridSearch) search(ctx context.Context, orgID int64, q storage.KnowledgeQuery) ([]storage.KnowledgeHit, string, error) {
	limit := q.Limit
	wide := q
	wide.Limit = min(max(limit*4, 20), 200)
	lexical, err := s.store.Search(ctx, orgID, wide)
	if err != nil {
		return nil, "", err
	}
	ectx, cancel := context.WithTimeout(ctx, queryEmbedTimeout)
	qv, err := s.embedder.Embed(ectx, []string{q.Text})
	cancel()
	if err != nil {
		s.log.Warn("knowledge query embedding failed; searching by BM25 alone", "org_id", orgID, "err", err.Error())
		return lexical[:min(limit, len(lexical))], ModeBM25, nil
	}
	allowed, err := s.allowedDocs(ctx, orgID, q)
	if err != nil {
		return nil, "", err
	}
	var semantic []vecHit
	if allowed == nil || len(allowed) > 0 {
		if semantic, err = s.vectors.search(ctx, orgID, qv[0], wide.Limit, allowed); err != nil {
			return nil, "", err
		}
	}
	fused, err := s.fuse(ctx, orgID, lexical, semantic)
	if err != nil {
		return nil, "", err
	}
	return fused[:min(limit, len(fused))], ModeHybrid, nil
}

// allowedDocs is the set of documents a filtered query may return (nil
// when it has no filter): its documents, those in its bases, or both
// intersected.
func (s *hybridSearch) allowedDocs(ctx context.Context, orgID int64, q storage.KnowledgeQuery) (map[string]bool, error) {
	if len(q.DocumentIDs) == 0 && len(q.BaseIDs) == 0 {
		return nil, nil
	}
	var set map[string]bool
	if len(q.DocumentIDs) > 0 {
		set = map[string]bool{}
		for _, id := range q.DocumentIDs {
			set[id] = true
		}
	}
	if len(q.BaseIDs) > 0 {
		ids, err := s.store.BaseDocumentIDs(ctx, orgID, q.BaseIDs)
		if err != nil {
			return nil, err
		}
		in := map[string]bool{}
		for _, id := range ids {
			if set == nil || set[id] {
				in[id] = true
			}
		}
		set = in
	}
	return set, nil
}

// fuse merges the BM25 and vector rankings by reciprocal rank: each
// chunk scores the sum of 1/(rrfK+rank) over the lists it is in.
func (s *hybridSearch) fuse(ctx context.Context, orgID int64, lexical []storage.KnowledgeHit, semantic []vecHit) ([]storage.KnowledgeHit, error) {
	score := map[storage.ChunkKey]float64{}
	byKey := map[storage.ChunkKey]storage.KnowledgeHit{}
	for i, h := range lexical {
		k := storage.ChunkKey{DocumentID: h.DocumentID, Position: h.Position}
		score[k] += 1 / float64(rrfK+i+1)
		byKey[k] = h
	}
	var missing []storage.ChunkKey
	for i, h := range semantic {
		score[h.key] += 1 / float64(rrfK+i+1)
		if _, ok := byKey[h.key]; !ok {
			missing = append(missing, h.key)
		}
	}
	if len(missing) > 0 {
		found, err := s.store.ChunksAt(ctx, orgID, missing)
		if err != nil {
			return nil, err
		}
		for _, h := range found {
			byKey[storage.ChunkKey{DocumentID: h.DocumentID, Position: h.Position}] = h
		}
	}
	out := make([]storage.KnowledgeHit, 0, len(byKey))
	for k, h := range byKey {
		h.Score = score[k]
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b storage.KnowledgeHit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		case a.DocumentID != b.DocumentID:
			return strings.Compare(a.DocumentID, b.DocumentID)
		}
		return a.Position - b.Position
	})
	return out, nil
}

// embedChunks sets each chunk's vector, embedding embedBatch chunks per
// request. A chunk is embedded with its context (headings, CSV header),
// as BM25 indexes it.
func embedChunks(ctx context.Context, e embed.Embedder, name string, chunks []storage.KnowledgeChunk) error {
	for i := 0; i < len(chunks); i += embedBatch {
		batch := chunks[i:min(i+embedBatch, len(chunks))]
		texts := make([]string, len(batch))
		for j, c := range batch {
			texts[j] = strings.TrimSpace(c.Context + "\n" + c.Text)
			if texts[j] == "" {
				texts[j] = name
			}
		}
		vecs, err := e.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("embed chunks %d-%d: %w", i, i+len(batch)-1, err)
		}
		for j := range batch {
			batch[j].Vector = vecs[j]
		}
	}
	return nil
}
