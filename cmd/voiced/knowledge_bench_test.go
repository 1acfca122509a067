package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/call"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/knowledge"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// BenchmarkKnowledgeTool measures what knowledge adds to an agent's turn:
// one run of the search_knowledge_base tool source (control's in-process
// search, then the passages trimmed for speech), which is also the whole
// of a retrieval before a reply. The org holds 10,000 chunks of ~150
// words in 10 documents; the agent is given all 10 by id ("documents"),
// or 5 by id and the other 5 through a knowledge base ("base+documents",
// the base resolved to its documents, then one search). Queries are 2-4 words drawn from the corpus's
// Zipf vocabulary (mostly rare words, like the informative words of a
// question; some among the commonest, which every BM25 engine ranks
// slowly). p50 and p99 of each case are reported, and, for the documents
// case, of the bare storage search of the same queries, interleaved (the
// A/B: what the tool adds over the search).
func BenchmarkKnowledgeTool(b *testing.B) {
	ctx := context.Background()
	db := sqltest.New(b, migrations.SQLite)
	st, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32)})
	if err != nil {
		b.Fatal(err)
	}
	u, err := st.Orgs.CreateUser(ctx, "bench-"+storage.NewUUID()+"@example.com", "B", "Ench")
	if err != nil {
		b.Fatal(err)
	}
	org, err := st.Orgs.CreateOrg(ctx, u.ID, "Bench")
	if err != nil {
		b.Fatal(err)
	}
	syl := []string{"ba", "ce", "di", "fo", "gu", "ha", "je", "ki", "lo", "mu", "na", "pe", "ri", "so", "tu", "vy"}
	r := rand.New(rand.NewPCG(7, 8))
	var vocab []string
	for seen := map[string]bool{}; len(vocab) < 20000; {
		var w strings.Builder
		for range 2 + r.IntN(3) {
			w.WriteString(syl[r.IntN(len(syl))])
		}
		if !seen[w.String()] {
			seen[w.String()] = true
			vocab = append(vocab, w.String())
		}
	}
	z := rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1))
	base, err := st.Knowledge.CreateBase(ctx, org.ID, "Half", "")
	if err != nil {
		b.Fatal(err)
	}
	var docs []string
	for d := range 10 {
		ds, err := st.Knowledge.CreateDocuments(ctx, org.ID, 0, []storage.KnowledgeDocument{{Name: fmt.Sprint("doc ", d), SourceType: "text", MimeType: "text/plain"}})
		if err != nil {
			b.Fatal(err)
		}
		cs := make([]storage.KnowledgeChunk, 1000)
		for i := range cs {
			var t strings.Builder
			for j := range 150 {
				t.WriteString(vocab[z.Uint64()])
				if j%15 == 14 {
					t.WriteString(". ")
				} else {
					t.WriteByte(' ')
				}
			}
			cs[i] = storage.KnowledgeChunk{Position: i, Context: "Section " + vocab[r.IntN(200)], Text: t.String()}
		}
		job, ok, err := st.Knowledge.ClaimIngestion(ctx, "bench", time.Hour)
		if err != nil || !ok || job.DocumentID != ds[0].ID {
			b.Fatalf("claim: %v %v", ok, err)
		}
		if err := st.Knowledge.CompleteIngestion(ctx, job, "", cs); err != nil {
			b.Fatal(err)
		}
		docs = append(docs, ds[0].ID)
		if d >= 5 {
			if err := st.Knowledge.AttachDocument(ctx, org.ID, base.ID, ds[0].ID); err != nil {
				b.Fatal(err)
			}
		}
	}
	svc, err := knowledge.New(knowledge.Config{BlobDir: b.TempDir(), SigningKey: []byte("bench")}, nil, st.Knowledge)
	if err != nil {
		b.Fatal(err)
	}
	search := knowledge.NewCallSearch(svc)
	tool := &call.KnowledgeTool{Knowledge: func() call.Knowledge { return search }}
	cases := []struct {
		name string
		cfg  control.AgentConfig
	}{
		{"documents", control.AgentConfig{KnowledgeDocumentIDs: docs}},
		{"base+documents", control.AgentConfig{KnowledgeBaseIDs: []string{base.ID}, KnowledgeDocumentIDs: docs[:5]}},
	}
	var queries []string
	for range 500 {
		w := make([]string, 2+r.IntN(3))
		for j := range w {
			w[j] = vocab[2+r.IntN(len(vocab)-2)]
		}
		queries = append(queries, fmt.Sprintf(`{"query":%q}`, strings.Join(w, " ")))
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			info := &call.Info{CallID: 1, OrgID: org.ID, Agent: c.cfg, Direction: calllog.DirectionWeb}
			if len(tool.Tools(info)) != 1 {
				b.Fatal("the tool is not offered")
			}
			// Iterations alternate the tool run and, as its baseline, the
			// bare storage search of the same query and scope (the
			// documents case only: one search), so both see the same load.
			var lat [2][]time.Duration
			i := 0
			for b.Loop() {
				q := queries[(i/2)%len(queries)]
				// Each query runs twice in a row, its two sides in turn
				// first, so neither gains from the other's warm pages.
				raw := (i%2 == 1) != ((i/2)%2 == 1) && len(c.cfg.KnowledgeBaseIDs) == 0
				t0 := time.Now()
				if raw {
					var a struct{ Query string }
					_ = json.Unmarshal([]byte(q), &a)
					if _, err := st.Knowledge.Search(ctx, org.ID, storage.KnowledgeQuery{Text: a.Query, Limit: 3, DocumentIDs: docs}); err != nil {
						b.Fatal(err)
					}
					lat[1] = append(lat[1], time.Since(t0))
				} else {
					out, err := tool.Run(ctx, info, llm.ToolCall{ID: "c", Name: call.KnowledgeToolName, Arguments: q})
					if err != nil || out == "" {
						b.Fatal(out, err)
					}
					lat[0] = append(lat[0], time.Since(t0))
				}
				i++
			}
			for k, name := range []string{"tool", "search"} {
				if l := lat[k]; len(l) > 0 {
					slices.Sort(l)
					b.ReportMetric(float64(l[len(l)/2].Microseconds())/1000, name+"-p50-ms")
					b.ReportMetric(float64(l[len(l)*99/100].Microseconds())/1000, name+"-p99-ms")
				}
			}
		})
	}
}
