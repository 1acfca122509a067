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

// clustered returns n vectors of dims around a few hundred Gaussian
// cluster centres (the topics of a business's documents), each centre
// plus noise of a third of its length; centres are fixed per seed so
// queries drawn with another r land near the data.
func clustered(r *rand.Rand, n, dims int) []storage.StoredVector {
	const centres = 300
	cr := rand.New(rand.NewPCG(11, 0))
	cs := make([][]float32, centres)
	for i := range cs {
		cs[i] = make([]float32, dims)
		for j := range cs[i] {
			cs[i][j] = float32(cr.NormFloat64())
		}
	}
	out := make([]storage.StoredVector, n)
	for i := range out {
		c := cs[r.IntN(centres)]
		v := make([]float32, dims)
		for j := range v {
			v[j] = c[j] + 0.35*float32(r.NormFloat64())
		}
		out[i] = storage.StoredVector{DocumentID: "d" + strconv.Itoa(i/10), Position: i % 10, Vector: v}
	}
	return out
}

// BenchmarkVectorSearch measures the index's exact search for the k=10
// nearest of n clustered, normalized vectors of 768 dimensions
// (nomic-embed-text's) against github.com/coder/hnsw's approximate search
// over the same vectors (CosineDistance; M 16 with EfSearch 100, and M 32
// with EfSearch 200), with HNSW's recall of the exact top 10 and its build
// time: the figures behind keeping search exact (docs/decisions.md).
//
//	go test -run '^$' -bench BenchmarkVectorSearch -benchtime 50x ./control/knowledge/
func BenchmarkVectorSearch(b *testing.B) {
	const dims, k = 768, 10
	for _, n := range []int{1000, 5000, 20000} {
		r := rand.New(rand.NewPCG(1, uint64(n)))
		store := &memVectors{vecs: clustered(r, n, dims)}
		queries := clustered(r, 64, dims)
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
		for _, p := range []struct{ m, ef int }{{16, 100}, {32, 200}} {
			b.Run(fmt.Sprintf("n=%d/hnsw-M%d-ef%d", n, p.m, p.ef), func(b *testing.B) {
				start := time.Now()
				g := hnsw.NewGraph[int]()
				g.Distance = hnsw.CosineDistance
				g.M, g.EfSearch = p.m, p.ef
				for s, e := range o.entries {
					g.Add(hnsw.MakeNode(s, e.vec))
				}
				build := time.Since(start)
				search := func(q []float32) map[storage.ChunkKey]bool {
					var hits []vecHit
					for _, nd := range g.Search(q, k) {
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
}
