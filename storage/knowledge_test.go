package storage_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

func textDoc(name, content string) storage.KnowledgeDocument {
	return storage.KnowledgeDocument{Name: name, SourceType: "text", MimeType: "text/plain", ByteCount: int64(len(content)),
		Content: content, TextSHA: storage.TextHash(content)}
}

// ingest claims the next job and completes it with one chunk per text.
func ingest(t *testing.T, s *storage.Store, texts ...string) storage.IngestJob {
	t.Helper()
	ctx := context.Background()
	job, ok, err := s.Knowledge.ClaimIngestion(ctx, "w1", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	var chunks []storage.KnowledgeChunk
	for i, tx := range texts {
		chunks = append(chunks, storage.KnowledgeChunk{Position: i, Text: tx})
	}
	require.NoError(t, s.Knowledge.CompleteIngestion(ctx, job, job.Content, chunks))
	return job
}

func TestKnowledgeIngestionQueue(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		s, org := billingOrg(t, db, c, 0)
		docs, err := s.Knowledge.CreateDocuments(ctx, org, 0, []storage.KnowledgeDocument{textDoc("a", "alpha text")})
		require.NoError(t, err)
		require.Equal(t, storage.DocPending, docs[0].Status)

		job, ok, err := s.Knowledge.ClaimIngestion(ctx, "w1", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, docs[0].ID, job.DocumentID)
		_, ok, err = s.Knowledge.ClaimIngestion(ctx, "w2", time.Minute)
		require.NoError(t, err)
		require.False(t, ok, "a leased job is not claimed twice")

		// The first worker dies (kill -9): its lease runs out and another
		// worker takes the job over; the dead worker's late result is refused.
		c.add(2 * time.Minute)
		job2, ok, err := s.Knowledge.ClaimIngestion(ctx, "w2", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, job.DocumentID, job2.DocumentID)
		require.EqualValues(t, 2, job2.Attempts)
		require.ErrorIs(t, s.Knowledge.CompleteIngestion(ctx, job, "x", nil), storage.ErrConflict)
		require.NoError(t, s.Knowledge.CompleteIngestion(ctx, job2, "alpha text", []storage.KnowledgeChunk{{Text: "alpha text"}}))
		d, err := s.Knowledge.Document(ctx, org, job.DocumentID)
		require.NoError(t, err)
		require.Equal(t, storage.DocReady, d.Status)
		require.EqualValues(t, 1, d.ChunkCount)

		// A transient failure goes back to pending until its retry time.
		name := "renamed"
		_, _, err = s.Knowledge.UpdateDocument(ctx, org, d.ID, storage.DocumentChange{Name: &name})
		require.NoError(t, err)
		job3, ok, err := s.Knowledge.ClaimIngestion(ctx, "w3", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		at := c.now().Add(30 * time.Second)
		require.NoError(t, s.Knowledge.FailIngestion(ctx, job3, "", &at))
		_, ok, _ = s.Knowledge.ClaimIngestion(ctx, "w3", time.Minute)
		require.False(t, ok, "not before its retry time")
		c.add(31 * time.Second)
		job4, ok, _ := s.Knowledge.ClaimIngestion(ctx, "w3", time.Minute)
		require.True(t, ok)
		require.NoError(t, s.Knowledge.FailIngestion(ctx, job4, "The PDF is encrypted.", nil))
		d, _ = s.Knowledge.Document(ctx, org, d.ID)
		require.Equal(t, storage.DocFailed, d.Status)
		require.Equal(t, "The PDF is encrypted.", d.Error)
		n, _ := s.Knowledge.ChunkCount(ctx, d.ID)
		require.Zero(t, n, "a failed document has no chunks")

		_, err = s.Knowledge.RetryDocument(ctx, org, d.ID)
		require.NoError(t, err)
		_, err = s.Knowledge.RetryDocument(ctx, org, d.ID)
		require.ErrorIs(t, err, storage.ErrWrongState)
	})
}

func TestKnowledgeSearch(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s, org := billingOrg(t, db, nil, 0)
		_, other := billingOrg(t, db, nil, 0)
		docs, err := s.Knowledge.CreateDocuments(ctx, org, 0, []storage.KnowledgeDocument{textDoc("refunds", "x"), textDoc("shipping", "y")})
		require.NoError(t, err)
		ingest(t, s, "Refunds are issued within 14 days of purchase.", "Our office is open Monday to Friday.")
		ingest(t, s, "Shipping takes three days; refunds for shipping are not issued.", "Parcels are tracked.")
		_, err = s.Knowledge.CreateDocuments(ctx, other, 0, []storage.KnowledgeDocument{textDoc("foreign", "z")})
		require.NoError(t, err)
		ingest(t, s, "refunds refunds refunds")

		hits, err := s.Knowledge.Search(ctx, org, storage.KnowledgeQuery{Text: "How are REFUNDS issued?", Limit: 10})
		require.NoError(t, err)
		require.Len(t, hits, 2, "only this org's chunks, only matching ones")
		require.Equal(t, docs[0].ID, hits[0].DocumentID, "the chunk about refunds ranks first")
		require.Equal(t, "refunds", hits[0].DocumentName)
		require.Greater(t, hits[0].Score, hits[1].Score)
		require.Greater(t, hits[1].Score, 0.0)
		// BM25 (k1 1.2, b 0.75, reference length 120 terms): both words are
		// in 2 of the org's 4 chunks (idf ln 2), once each in a chunk of 6
		// index terms (stop words are not counted).
		bm25 := func(tf, length float64) float64 { return tf * 2.2 / (tf + 1.2*(0.25+0.75*length/120)) }
		require.InDelta(t, 2*math.Log(2)*bm25(1, 6), hits[0].Score, 1e-3)
		require.InDelta(t, 2*math.Log(2)*bm25(1, 7), hits[1].Score, 1e-3)

		hits, err = s.Knowledge.Search(ctx, org, storage.KnowledgeQuery{Text: "refunds", Limit: 10, DocumentIDs: []string{docs[1].ID}})
		require.NoError(t, err)
		require.Len(t, hits, 1)
		require.Equal(t, docs[1].ID, hits[0].DocumentID)

		kb, err := s.Knowledge.CreateBase(ctx, org, "Support", "")
		require.NoError(t, err)
		require.NoError(t, s.Knowledge.AttachDocument(ctx, org, kb.ID, docs[1].ID))
		hits, err = s.Knowledge.Search(ctx, org, storage.KnowledgeQuery{Text: "refund", Limit: 10, BaseIDs: []string{kb.ID}})
		require.NoError(t, err)
		require.Len(t, hits, 1, "stemming: refund matches refunds")
		require.Equal(t, docs[1].ID, hits[0].DocumentID)

		hits, err = s.Knowledge.Search(ctx, org, storage.KnowledgeQuery{Text: `"); DROP TABLE x; -- *`, Limit: 10})
		require.NoError(t, err)
		require.Empty(t, hits)

		// Another org's better matches fill the top of the index: the
		// org's own best match is still found (SQLite falls back from the
		// top-rows query to joining every match).
		crowd, err := s.Knowledge.CreateDocuments(ctx, other, 0, []storage.KnowledgeDocument{textDoc("crowd", "z")})
		require.NoError(t, err)
		var many []string
		for range 30 {
			many = append(many, "refunds refunds")
		}
		ingest(t, s, many...)
		hits, err = s.Knowledge.Search(ctx, org, storage.KnowledgeQuery{Text: "refunds", Limit: 1})
		require.NoError(t, err)
		require.Len(t, hits, 1)
		require.Equal(t, docs[0].ID, hits[0].DocumentID)
		hits, err = s.Knowledge.Search(ctx, other, storage.KnowledgeQuery{Text: "refunds", Limit: 3})
		require.NoError(t, err)
		require.Len(t, hits, 3)
		for _, h := range hits {
			require.NotEqual(t, docs[0].ID, h.DocumentID)
		}
		require.Equal(t, crowd[0].ID, hits[2].DocumentID)

		require.NoError(t, s.Knowledge.DeleteBase(ctx, org, kb.ID))
		_, err = s.Knowledge.Document(ctx, org, docs[1].ID)
		require.NoError(t, err, "deleting a base keeps its documents")
		_, err = s.Knowledge.DeleteDocument(ctx, org, docs[0].ID)
		require.NoError(t, err)
		hits, err = s.Knowledge.Search(ctx, org, storage.KnowledgeQuery{Text: "refunds", Limit: 10})
		require.NoError(t, err)
		require.Len(t, hits, 1, "a deleted document's chunks are gone from the index")
	})
}

// TestKnowledgeSearchPruning checks the pruned ranking against reading
// every block, over documents of several blocks (128 chunks each) and of
// one chunk, with and without filters.
func TestKnowledgeSearchPruning(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s, org := billingOrg(t, db, nil, 0)
		vocab := benchVocab(3000)
		r := rand.New(rand.NewPCG(7, 8))
		z := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
		var ids []string
		for d, n := range []int{300, 40, 1, 260} {
			docs, err := s.Knowledge.CreateDocuments(ctx, org, 0, []storage.KnowledgeDocument{textDoc(fmt.Sprint("d", d), "x")})
			require.NoError(t, err)
			ids = append(ids, docs[0].ID)
			texts := make([]string, n)
			for i := range texts {
				words := make([]string, 5+r.IntN(200))
				for j := range words {
					words[j] = vocab[z.Uint64()]
				}
				texts[i] = strings.Join(words, " ")
			}
			ingest(t, s, texts...)
		}
		kb, err := s.Knowledge.CreateBase(ctx, org, "Some", "")
		require.NoError(t, err)
		require.NoError(t, s.Knowledge.AttachDocument(ctx, org, kb.ID, ids[1]))
		require.NoError(t, s.Knowledge.AttachDocument(ctx, org, kb.ID, ids[3]))
		found := 0
		for range 60 {
			words := make([]string, 1+r.IntN(4))
			for j := range words {
				if r.IntN(2) == 0 {
					words[j] = vocab[2+r.IntN(50)]
				} else {
					words[j] = vocab[52+r.IntN(1000)]
				}
			}
			text := strings.Join(words, " ")
			for _, q := range []storage.KnowledgeQuery{{Text: text, Limit: 1}, {Text: text, Limit: 5}, {Text: text, Limit: 10, BaseIDs: []string{kb.ID}},
				{Text: text, Limit: 3, DocumentIDs: ids[2:]}, {Text: text, Limit: 4, BaseIDs: []string{kb.ID}, DocumentIDs: ids[:2]}} {
				got, err := s.Knowledge.Search(ctx, org, q)
				require.NoError(t, err)
				want, err := s.Knowledge.SearchExhaustive(ctx, org, q)
				require.NoError(t, err)
				require.Equal(t, want, got, "%+v", q)
				require.LessOrEqual(t, len(got), q.Limit)
				found += len(got)
				for _, h := range got {
					if len(q.BaseIDs) > 0 {
						require.Contains(t, []string{ids[1], ids[3]}, h.DocumentID)
					}
					if len(q.DocumentIDs) > 0 {
						require.Contains(t, q.DocumentIDs, h.DocumentID)
					}
				}
			}
		}
		require.Greater(t, found, 500, "the queries find chunks")
	})
}

// TestKnowledgePostingsNotOrphaned follows every path that removes or
// re-indexes a document and checks that its postings go with it:
// knowledge_postings has no foreign key to cascade from (migration 00020),
// so the store deletes them itself.
func TestKnowledgePostingsNotOrphaned(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32)})
		require.NoError(t, err)
		u, err := s.Orgs.CreateUser(ctx, "postings-"+storage.NewUUID()+"@example.com", "P", "Ostings")
		require.NoError(t, err)
		keep, err := s.Orgs.CreateOrg(ctx, u.ID, "Keep")
		require.NoError(t, err)
		doomed, err := s.Orgs.CreateOrg(ctx, u.ID, "Doomed")
		require.NoError(t, err)

		count := func(q string, args ...any) int {
			t.Helper()
			var n int
			require.NoError(t, db.QueryRowContext(ctx, q, args...).Scan(&n))
			return n
		}
		// Postings whose document or chunk is gone, anywhere in the database.
		orphans := func() int {
			t.Helper()
			return count(`SELECT COUNT(*) FROM knowledge_postings p
				WHERE NOT EXISTS (SELECT 1 FROM knowledge_documents d WHERE d.id = p.document_id)
				OR (p.term <> '' AND NOT EXISTS (SELECT 1 FROM knowledge_chunks c WHERE c.document_id = p.document_id))`)
		}
		cells := func(docID string) int {
			t.Helper()
			return count(`SELECT COUNT(*) FROM knowledge_postings WHERE document_id = $1`, docID)
		}
		found := func(org int64, text string) []string {
			t.Helper()
			hits, err := s.Knowledge.Search(ctx, org, storage.KnowledgeQuery{Text: text, Limit: 10})
			require.NoError(t, err)
			var ids []string
			for _, h := range hits {
				ids = append(ids, h.DocumentID)
			}
			return ids
		}

		docs, err := s.Knowledge.CreateDocuments(ctx, keep.ID, 0, []storage.KnowledgeDocument{
			textDoc("deleted", "a"), textDoc("replaced", "b"), textDoc("failed", "c"), textDoc("kept", "d")})
		require.NoError(t, err)
		deleted, replaced, failed, kept := docs[0].ID, docs[1].ID, docs[2].ID, docs[3].ID
		ingest(t, s, "walrus tusks", "walrus herds")
		ingest(t, s, "pelican beaks")
		ingest(t, s, "heron legs")
		ingest(t, s, "otter dens")
		other, err := s.Knowledge.CreateDocuments(ctx, doomed.ID, 0, []storage.KnowledgeDocument{textDoc("doomed", "e")})
		require.NoError(t, err)
		ingest(t, s, "otter whiskers")
		for _, id := range []string{deleted, replaced, failed, kept, other[0].ID} {
			require.Positive(t, cells(id), "every ingested document has postings")
		}
		require.Zero(t, orphans())

		// Document delete.
		_, err = s.Knowledge.DeleteDocument(ctx, keep.ID, deleted)
		require.NoError(t, err)
		require.Zero(t, cells(deleted))
		require.Empty(t, found(keep.ID, "walrus"))

		// Replace and re-ingest: the old text's postings go, the new text's
		// come. Until then the old chunks stay searchable.
		content := "cormorant wings"
		_, _, err = s.Knowledge.UpdateDocument(ctx, keep.ID, replaced, storage.DocumentChange{Content: &content, Replaced: true})
		require.NoError(t, err)
		require.Equal(t, []string{replaced}, found(keep.ID, "pelican"))
		ingest(t, s, content)
		require.Empty(t, found(keep.ID, "pelican"))
		require.Equal(t, []string{replaced}, found(keep.ID, "cormorant"))
		require.Zero(t, count(`SELECT COUNT(*) FROM knowledge_postings WHERE document_id = $1 AND term = 'pelican'`, replaced))

		// Re-ingestion that fails for good removes chunks and postings.
		content = "heron again"
		_, _, err = s.Knowledge.UpdateDocument(ctx, keep.ID, failed, storage.DocumentChange{Content: &content})
		require.NoError(t, err)
		job, ok, err := s.Knowledge.ClaimIngestion(ctx, "w1", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, failed, job.DocumentID)
		require.NoError(t, s.Knowledge.FailIngestion(ctx, job, "unreadable", nil))
		require.Zero(t, cells(failed))
		require.Empty(t, found(keep.ID, "heron"))

		// Deleting a base detaches its documents: their postings stay.
		kb, err := s.Knowledge.CreateBase(ctx, keep.ID, "Animals", "")
		require.NoError(t, err)
		require.NoError(t, s.Knowledge.AttachDocument(ctx, keep.ID, kb.ID, kept))
		before := cells(kept)
		require.NoError(t, s.Knowledge.DeleteBase(ctx, keep.ID, kb.ID))
		require.Equal(t, before, cells(kept))
		require.Equal(t, []string{kept}, found(keep.ID, "otter"))

		// Org delete: the org's postings go with its documents; the other
		// org's stay.
		require.NoError(t, s.Orgs.DeleteOrg(ctx, doomed.ID, u.ID))
		require.Zero(t, count(`SELECT COUNT(*) FROM knowledge_postings WHERE org_id = $1`, doomed.ID))
		require.Zero(t, orphans())
		require.Equal(t, before, cells(kept))
		require.Equal(t, []string{kept}, found(keep.ID, "otter"))
	})
}

// TestKnowledgePostingsMigration moves migration 00020 down and up again
// over stored postings: down restores the foreign key (dropping postings
// whose document is gone, which would break it), up removes it again,
// and the stored index keeps answering searches throughout.
func TestKnowledgePostingsMigration(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s, org := billingOrg(t, db, nil, 0)
		docs, err := s.Knowledge.CreateDocuments(ctx, org, 0, []storage.KnowledgeDocument{textDoc("a", "x")})
		require.NoError(t, err)
		ingest(t, s, "puffin burrows", "puffin colonies")
		orphan := func() error {
			_, err := db.ExecContext(ctx, `INSERT INTO knowledge_postings (org_id, document_id, term, block, max_weight, n, postings)
				VALUES ($1, 'no-such-document', 'puffin', 0, 1, 0, $2)`, org, []byte{})
			return err
		}
		require.NoError(t, orphan(), "no foreign key after 00020")

		fsys, err := migrations.FS(db.Dialect)
		require.NoError(t, err)
		gd := goose.DialectSQLite3
		if db.Dialect == migrations.Postgres {
			gd = goose.DialectPostgres
		}
		p, err := goose.NewProvider(gd, db.DB, fsys)
		require.NoError(t, err)
		_, err = p.DownTo(ctx, 19)
		require.NoError(t, err)
		var n int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM knowledge_postings WHERE document_id = 'no-such-document'`).Scan(&n))
		require.Zero(t, n, "going down drops orphans")
		require.Error(t, orphan(), "the foreign key is back")
		hits, err := s.Knowledge.Search(ctx, org, storage.KnowledgeQuery{Text: "puffin", Limit: 10})
		require.NoError(t, err)
		require.Len(t, hits, 2)

		_, err = p.Up(ctx)
		require.NoError(t, err)
		hits, err = s.Knowledge.Search(ctx, org, storage.KnowledgeQuery{Text: "puffin burrows", Limit: 10})
		require.NoError(t, err)
		require.Len(t, hits, 2)
		require.Equal(t, docs[0].ID, hits[0].DocumentID)
		require.NoError(t, orphan(), "no foreign key after 00020 again")
	})
}
