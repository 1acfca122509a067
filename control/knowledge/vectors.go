package knowledge

import (
	"context"
	"math"
	"slices"
	"sync"

	"github.com/coder/hnsw"
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
// vectors changed are reloaded. Below threshold vectors an org is
// searched exactly (a dot product per vector; vectors are normalized);
// above it through an HNSW graph (github.com/coder/hnsw), with exact
// search kept for filtered searches over few vectors. Safe for
// concurrent use.
type vectorIndex struct {
	store     VectorStore
	model     string
	threshold int
	mu        sync.Mutex
	orgs      map[int64]*orgVectors
}

// orgVectors is one org's index. Slots of removed vectors are reused;
// the graph keeps them as tombstones (coder/hnsw's Delete damages
// neighbourhoods) until they reach a quarter of it, when it is rebuilt.
type orgVectors struct {
	mu      sync.RWMutex
	loaded  bool
	version int64
	docs    map[string]docSlots
	entries []vecEntry
	free    []int
	live    int
	graph   *hnsw.Graph[int]
	// inGraph counts the graph's nodes, dead ones included.
	inGraph int
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
	inGraph  bool
}

// vecHit is a chunk found by vector search; score is the cosine similarity.
type vecHit struct {
	key   storage.ChunkKey
	score float32
}

func newVectorIndex(store VectorStore, model string, threshold int) *vectorIndex {
	return &vectorIndex{store: store, model: model, threshold: threshold, orgs: map[int64]*orgVectors{}}
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
	x.reshape(o)
	return nil
}

func (o *orgVectors) remove(doc string) {
	for _, s := range o.docs[doc].slots {
		e := &o.entries[s]
		e.live, e.vec = false, nil
		if !e.inGraph {
			o.free = append(o.free, s)
		}
		o.live--
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
	o.live++
	if o.graph != nil && o.graph.Len() > 0 && len(vec) == o.graph.Dims() {
		o.graph.Add(hnsw.MakeNode(s, vec))
		o.entries[s].inGraph = true
		o.inGraph++
	}
}

// reshape builds the graph when the org passed the threshold, drops it
// below, and rebuilds it when tombstones reach a quarter of it.
func (x *vectorIndex) reshape(o *orgVectors) {
	switch {
	case o.live < x.threshold:
		if o.graph != nil {
			o.graph, o.inGraph = nil, 0
			for i := range o.entries {
				if o.entries[i].inGraph {
					o.entries[i].inGraph = false
					if !o.entries[i].live {
						o.free = append(o.free, i)
					}
				}
			}
		}
	case o.graph == nil || (o.inGraph-o.live)*4 > o.inGraph:
		o.graph = newGraph()
		o.free, o.inGraph = o.free[:0], 0
		dims := 0
		for i := range o.entries {
			e := &o.entries[i]
			e.inGraph = false
			if !e.live {
				o.free = append(o.free, i)
				continue
			}
			if dims == 0 {
				dims = len(e.vec)
			}
			if len(e.vec) != dims {
				continue // another model's length: exact search only
			}
			o.graph.Add(hnsw.MakeNode(i, e.vec))
			e.inGraph = true
			o.inGraph++
		}
	}
}

// newGraph is an HNSW graph over normalized vectors. M 16 and EfSearch
// 100 were measured (bench/RESULTS.md, "Knowledge vector search").
func newGraph() *hnsw.Graph[int] {
	g := hnsw.NewGraph[int]()
	g.Distance = dotDistance
	g.EfSearch = 100
	return g
}

// dotDistance is the cosine distance of normalized vectors.
func dotDistance(a, b []float32) float32 { return 1 - vek32.Dot(a, b) }

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
	if o.graph != nil && o.graph.Dims() == len(q) {
		n := 0
		for d := range allowed {
			n += len(o.docs[d].slots)
		}
		if allowed == nil || n > x.threshold {
			if hits := o.graphSearch(q, k, allowed); len(hits) == k {
				return hits, nil
			}
			// Too few survived the filter or the tombstones: exact.
		}
	}
	return o.exact(q, k, allowed), nil
}

// graphSearch asks the graph for more than k neighbours, so that dead
// slots and filtered documents can be dropped, and keeps the best k.
func (o *orgVectors) graphSearch(q []float32, k int, allowed map[string]bool) []vecHit {
	ask := k + (o.inGraph - o.live)
	if allowed != nil {
		ask = k * 8
	}
	var out []vecHit
	for _, n := range o.graph.Search(q, ask) {
		e := &o.entries[n.Key]
		if !e.live || (allowed != nil && !allowed[e.doc]) {
			continue
		}
		out = append(out, vecHit{key: storage.ChunkKey{DocumentID: e.doc, Position: e.position}, score: vek32.Dot(q, e.vec)})
	}
	slices.SortFunc(out, byScore)
	return out[:min(k, len(out))]
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
