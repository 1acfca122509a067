package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// benchVocab is a deterministic vocabulary of pronounceable made-up words
// (so no word is a stop word and stemming leaves them distinct).
func benchVocab(n int) []string {
	syl := []string{"ka", "lo", "mi", "ne", "ru", "ta", "vo", "zen", "pri", "sol", "dar", "qui", "bex", "fal", "gor", "hul"}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// benchCorpus stores chunks chunks of ~150 Zipf-distributed words (as
// ingestion does), perDoc chunks a document, in a new org and returns the
// store, the org and the vocabulary.
func benchCorpus(b *testing.B, db *storage.DB, chunks, perDoc int) (*storage.Store, int64, []string) {
	b.Helper()
	ctx := context.Background()
	s, org := benchOrg(b, db)
	vocab := benchVocab(20000)
	r := rand.New(rand.NewPCG(3, 4))
	z := rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1))
	start := time.Now()
	for done := 0; done < chunks; done += perDoc {
		docs, err := s.Knowledge.CreateDocuments(ctx, org, 0, []storage.KnowledgeDocument{{Name: fmt.Sprint("doc ", done), SourceType: "text", MimeType: "text/plain"}})
		if err != nil {
			b.Fatal(err)
		}
		cs := make([]storage.KnowledgeChunk, min(perDoc, chunks-done))
		for i := range cs {
			words := make([]string, 150)
			for j := range words {
				words[j] = vocab[z.Uint64()]
			}
			cs[i] = storage.KnowledgeChunk{Position: i, Context: "Section " + vocab[r.IntN(200)], Text: strings.Join(words, " ")}
		}
		job, ok, err := s.Knowledge.ClaimIngestion(ctx, "bench", time.Hour)
		if err != nil || !ok || job.DocumentID != docs[0].ID {
			b.Fatalf("claim: %v %v", ok, err)
		}
		if err := s.Knowledge.CompleteIngestion(ctx, job, "", cs); err != nil {
			b.Fatal(err)
		}
	}
	if db.Dialect == "postgres" {
		if _, err := db.ExecContext(ctx, "ANALYZE knowledge_chunks"); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%s: %d chunks stored in %v", db.Dialect, chunks, time.Since(start).Round(time.Millisecond))
	return s, org, vocab
}

// BenchmarkKnowledgeSearch measures BM25 search latency (limit 5) over
// 10,000 and 100,000 chunks on each database, in documents of 1,000
// chunks (a megabyte of text makes about 1,250) and, at 100,000, also of
// 2,000 (a large PDF's: one block each with cellChunks 2,048, two with
// 1,024). Queries are 1-4 words in two classes, run alternately and
// reported apart (p50 and p99 of each): "rare" words come from outside the
// corpus's 500 most frequent words (a few hundred chunks each, like the
// informative words of a question); "mixed" draws half its words from
// those 500 (which appear in up to every chunk). The corpus is built once
// per sub-benchmark (b.Loop runs the body once).
func BenchmarkKnowledgeSearch(b *testing.B) {
	for _, d := range sqltest.Dialects {
		for _, c := range []struct {
			name      string
			n, perDoc int
		}{{"10k", 10_000, 1000}, {"100k", 100_000, 1000}, {"100k-docs2000", 100_000, 2000}} {
			b.Run(fmt.Sprintf("%s/%s", d, c.name), func(b *testing.B) {
				ctx := context.Background()
				s, org, vocab := benchCorpus(b, sqltest.New(b, d), c.n, c.perDoc)
				r := rand.New(rand.NewPCG(5, 6))
				query := func(mixed bool) string {
					w := make([]string, 1+r.IntN(4))
					for j := range w {
						if mixed && r.IntN(2) == 0 {
							w[j] = vocab[2+r.IntN(500)]
						} else {
							w[j] = vocab[502+r.IntN(len(vocab)-502)]
						}
					}
					return strings.Join(w, " ")
				}
				var queries [2][]string
				for range 500 {
					queries[0] = append(queries[0], query(false))
					queries[1] = append(queries[1], query(true))
				}
				var lat [2][]time.Duration
				i := 0
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					class := i % 2
					t0 := time.Now()
					if _, err := s.Knowledge.Search(ctx, org, storage.KnowledgeQuery{Text: queries[class][(i/2)%500], Limit: 5}); err != nil {
						b.Fatal(err)
					}
					lat[class] = append(lat[class], time.Since(t0))
					i++
				}
				for class, name := range []string{"rare", "mixed"} {
					l := lat[class]
					slices.Sort(l)
					b.ReportMetric(float64(l[len(l)/2].Microseconds())/1000, name+"-p50-ms")
					b.ReportMetric(float64(l[len(l)*99/100].Microseconds())/1000, name+"-p99-ms")
				}
			})
		}
	}
}
