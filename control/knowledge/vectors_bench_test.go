package knowledge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/coder/hnsw"
	"github.com/viterin/vek/vek32"

	"github.com/voiced/voiced/storage"
)

// memVectors is an in-memory VectorStore for the index benchmarks (the
// database only feeds the index; searches never touch it).
type memVectors struct{ vecs []storage.StoredVector }

func (m *memVectors) VectorVersion(context.Context, int64) (int64, error) { return 1, nil }
func (m *memVectors) VectorDocuments(context.Context, int64, string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, v := range m.vecs {
		out[v.DocumentID] = 1
	}
	return out, nil
}
func (m *memVectors) DocumentVectors(context.Context, int64, string, []string) ([]storage.StoredVector, error) {
	return m.vecs, nil
}

// embeddings returns n vectors of dims with the low intrinsic dimension
// of real text embeddings: a random 24-dimensional latent point projected
// to dims, plus a little noise; one document per 10 chunks.
func embeddings(r *rand.Rand, n, dims int) []storage.StoredVector {
	const latent = 24
	proj := make([][]float32, latent)
	for i := range proj {
		pr := rand.New(rand.NewPCG(7, uint64(i))) // the same projection for every call
		proj[i] = make([]float32, dims)
		for j := range proj[i] {
			proj[i][j] = float32(pr.NormFloat64())
		}
	}
	out := make([]storage.StoredVector, n)
	for i := range out {
		v := make([]float32, dims)
		for l := range latent {
			z := float32(r.NormFloat64())
			for j := range v {
				v[j] += z * proj[l][j]
			}
		}
		for j := range v {
			v[j] += 0.5 * float32(r.NormFloat64())
		}
		out[i] = storage.StoredVector{DocumentID: "d" + strconv.Itoa(i/10), Position: i % 10, Vector: v}
	}
	return out
}

// BenchmarkVectorSearch measures the index's exact search for the k=10
// nearest of n vectors of 768 dimensions (nomic-embed-text's) against
// github.com/coder/hnsw's approximate search over the same normalized
// vectors (M 16, EfSearch 100, asking for 10k and keeping the best k),
// with HNSW's recall of the exact top 10 and its build time: the figures
// behind keeping search exact (docs/decisions.md).
//
//	go test -run '^$' -bench BenchmarkVectorSearch -benchtime 100x ./control/knowledge/
func BenchmarkVectorSearch(b *testing.B) {
	const dims, k = 768, 10
	for _, n := range []int{250, 1000, 2000, 20000} {
		r := rand.New(rand.NewPCG(1, uint64(n)))
		store := &memVectors{vecs: embeddings(r, n, dims)}
		queries := embeddings(r, 64, dims)
		x := newVectorIndex(store, "m")
		o := x.org(1)
		if err := x.sync(context.Background(), 1, o); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("n=%d/exact", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := x.search(context.Background(), 1, queries[i%len(queries)].Vector, k, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("n=%d/hnsw", n), func(b *testing.B) {
			start := time.Now()
			g := hnsw.NewGraph[int]()
			g.Distance = func(a, b []float32) float32 { return 1 - vek32.Dot(a, b) }
			g.EfSearch = 100
			for s, e := range o.entries {
				g.Add(hnsw.MakeNode(s, e.vec))
			}
			build := time.Since(start)
			search := func(q []float32) map[storage.ChunkKey]bool {
				var hits []vecHit
				for _, nd := range g.Search(q, 10*k) {
					e := o.entries[nd.Key]
					hits = append(hits, vecHit{key: storage.ChunkKey{DocumentID: e.doc, Position: e.position}, score: vek32.Dot(q, e.vec)})
				}
				slices.SortFunc(hits, byScore)
				out := map[storage.ChunkKey]bool{}
				for _, h := range hits[:min(k, len(hits))] {
					out[h.key] = true
				}
				return out
			}
			hit := 0
			for _, q := range queries {
				qn := normalize(q.Vector)
				got := search(qn)
				for _, h := range o.exact(qn, k, nil) {
					if got[h.key] {
						hit++
					}
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				search(normalize(queries[i%len(queries)].Vector))
				i++
			}
			b.ReportMetric(build.Seconds(), "build-s")
			b.ReportMetric(float64(hit)/float64(k*len(queries)), "recall")
		})
	}
}
