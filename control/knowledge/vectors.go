package knowledge

import (
	"context"
	"math"
	"slices"
	"sync"

	"github.com/viterin/vek/vek32"

	"github.com/voiced/voiced/storage"
)

// VectorStore is where chunk vectors live (storage.KnowledgeStore).
type VectorStore interface {
	VectorVersion(ctx context.Context, orgID int64) (int64, error)
	VectorDocuments(ctx context.Context, orgID int64, model string) (map[string]int64, error)
	DocumentVectors(ctx context.Context, orgID int64, model string, ids []string) ([]storage.StoredVector, error)
}

// vectorIndex searches the orgs' chunk vectors in process. Each org's
// vectors are loaded on its first search and brought up to date before
// every search when the org's vector version in the database changed
// (ingestion or deletion on any replica): only the documents whose
// vectors changed are reloaded. Search is exact: a dot product per
// vector (vectors are normalized), 5.6 ms for 20,000; github.com/coder/hnsw
// v0.6.1 recalls only a quarter to two fifths of the true top 10 even on
// clustered data with M 32 and EfSearch 200, because of defects in its
// search (docs/decisions.md, "Knowledge embeddings"). Safe for concurrent
// use.
type vectorIndex struct {
	store VectorStore
	model string
	mu    sync.Mutex
	orgs  map[int64]*orgVectors
}

// orgVectors is one org's index. Slots of removed vectors are reused.
type orgVectors struct {
	mu      sync.RWMutex
	loaded  bool
	version int64
	docs    map[string]docSlots
	entries []vecEntry
	free    []int
}

type docSlots struct {
	version int64
	slots   []int
}

type vecEntry struct {
	doc      string
	position int
	vec      []float32
	live     bool
}

// vecHit is a chunk found by vector search; score is the cosine similarity.
type vecHit struct {
	key   storage.ChunkKey
	score float32
}

func newVectorIndex(store VectorStore, model string) *vectorIndex {
	return &vectorIndex{store: store, model: model, orgs: map[int64]*orgVectors{}}
}

func (x *vectorIndex) org(orgID int64) *orgVectors {
	x.mu.Lock()
	defer x.mu.Unlock()
	o := x.orgs[orgID]
	if o == nil {
		o = &orgVectors{docs: map[string]docSlots{}}
		x.orgs[orgID] = o
	}
	return o
}

// sync brings the org's index up to date with the database.
func (x *vectorIndex) sync(ctx context.Context, orgID int64, o *orgVectors) error {
	v, err := x.store.VectorVersion(ctx, orgID)
	if err != nil {
		return err
	}
	o.mu.RLock()
	current := o.loaded && o.version == v
	o.mu.RUnlock()
	if current {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.loaded && o.version == v {
		return nil
	}
	docs, err := x.store.VectorDocuments(ctx, orgID, x.model)
	if err != nil {
		return err
	}
	var changed []string
	for id, dv := range docs {
		if have, ok := o.docs[id]; !ok || have.version != dv {
			changed = append(changed, id)
		}
	}
	for id := range o.docs {
		if _, ok := docs[id]; !ok {
			o.remove(id)
		}
	}
	if len(changed) > 0 {
		ids := changed
		if !o.loaded {
			ids = nil // every document: one query
		}
		vecs, err := x.store.DocumentVectors(ctx, orgID, x.model, ids)
		if err != nil {
			return err
		}
		for _, id := range changed {
			o.remove(id)
		}
		for _, sv := range vecs {
			dv, ok := docs[sv.DocumentID]
			if !ok {
				continue // written after the list was read; the next sync takes it
			}
			o.add(sv, dv)
		}
	}
	o.loaded, o.version = true, v
	return nil
}

func (o *orgVectors) remove(doc string) {
	for _, s := range o.docs[doc].slots {
		e := &o.entries[s]
		e.live, e.vec = false, nil
		o.free = append(o.free, s)
	}
	delete(o.docs, doc)
}

func (o *orgVectors) add(sv storage.StoredVector, version int64) {
	vec := normalize(sv.Vector)
	if vec == nil {
		return
	}
	e := vecEntry{doc: sv.DocumentID, position: sv.Position, vec: vec, live: true}
	var s int
	if n := len(o.free); n > 0 {
		s, o.free = o.free[n-1], o.free[:n-1]
		o.entries[s] = e
	} else {
		s = len(o.entries)
		o.entries = append(o.entries, e)
	}
	d := o.docs[sv.DocumentID]
	d.version, d.slots = version, append(d.slots, s)
	o.docs[sv.DocumentID] = d
}

// normalize returns v scaled to unit length, or nil for a zero vector.
func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return nil
	}
	inv := float32(1 / math.Sqrt(n))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}

// search returns the org's k chunks nearest q, best first, among the
// documents allowed (nil: all).
func (x *vectorIndex) search(ctx context.Context, orgID int64, q []float32, k int, allowed map[string]bool) ([]vecHit, error) {
	o := x.org(orgID)
	if err := x.sync(ctx, orgID, o); err != nil {
		return nil, err
	}
	q = normalize(q)
	if q == nil {
		return nil, nil
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.exact(q, k, allowed), nil
}

// exact scores every live vector of the allowed documents.
func (o *orgVectors) exact(q []float32, k int, allowed map[string]bool) []vecHit {
	var out []vecHit
	consider := func(s int) {
		e := &o.entries[s]
		if !e.live || len(e.vec) != len(q) {
			return
		}
		sc := vek32.Dot(q, e.vec)
		if len(out) == k && sc <= out[k-1].score {
			return
		}
		h := vecHit{key: storage.ChunkKey{DocumentID: e.doc, Position: e.position}, score: sc}
		i, _ := slices.BinarySearchFunc(out, h, byScore)
		if len(out) < k {
			out = slices.Insert(out, i, h)
		} else {
			copy(out[i+1:], out[i:k-1])
			out[i] = h
		}
	}
	if allowed != nil {
		for d := range allowed {
			for _, s := range o.docs[d].slots {
				consider(s)
			}
		}
		return out
	}
	for s := range o.entries {
		consider(s)
	}
	return out
}

// byScore orders hits best first.
func byScore(a, b vecHit) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	}
	return 0
}
