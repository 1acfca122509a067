package knowledge

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/jobs/jobstest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// The replica process of TestIngestionKilled reads these.
const (
	replicaDBEnv   = "VOICED_TEST_KNOWLEDGE_REPLICA_DB"
	replicaBlobEnv = "VOICED_TEST_KNOWLEDGE_REPLICA_BLOBS"
)

// replicaLease is both workers' lease: short, so the takeover is quick.
const replicaLease = 2 * time.Second

// TestIngestionReplicaProcess is not a test: it is the replica that
// TestIngestionKilled starts (the os/exec helper-process pattern), an
// ingestion worker that runs until the process is killed. Run directly,
// it returns at once.
func TestIngestionReplicaProcess(t *testing.T) {
	dbURL := os.Getenv(replicaDBEnv)
	if dbURL == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	db, err := storage.Open(ctx, storage.Config{URL: dbURL})
	require.NoError(t, err)
	defer db.Close()
	store, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32)})
	require.NoError(t, err)
	svc, err := New(Config{BlobDir: os.Getenv(replicaBlobEnv), SigningKey: []byte("k"), Poll: 20 * time.Millisecond, Lease: replicaLease}, nil, store.Knowledge)
	require.NoError(t, err)
	_ = svc.Run(ctx)
}

// TestIngestionKilled: a process ingesting a queue of 1 MiB documents is
// killed (SIGKILL) with documents in flight, their chunks and index
// possibly half written in an open transaction. Another worker on the
// same database takes over once the dead one's lease lapses, and every
// document ends ready, each stored once: its chunks as many as its
// chunk_count, its index cells one per (term, block), counting those
// same chunks, and a word of its own found by search.
func TestIngestionKilled(t *testing.T) {
	for _, d := range sqltest.Dialects {
		t.Run(string(d), func(t *testing.T) { testIngestionKilled(t, d) })
	}
}

func testIngestionKilled(t *testing.T, d migrations.Dialect) {
	ctx := context.Background()
	dbURL := sqltest.URL(t, d)
	db, err := storage.Open(ctx, storage.Config{URL: dbURL})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, db.Migrate(ctx, nil))
	store, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32)})
	require.NoError(t, err)
	u, err := store.Orgs.CreateUser(ctx, "killed-"+storage.NewUUID()+"@example.com", "K", "Illed")
	require.NoError(t, err)
	org, err := store.Orgs.CreateOrg(ctx, u.ID, "Killed")
	require.NoError(t, err)

	// Eight documents, each with a word of its own in its last section.
	blobs := t.TempDir()
	body := benchMarkdown(1 << 20)
	var ids []string
	for i := range 8 {
		key := fmt.Sprintf("knowledge/%d/%s.md", org.ID, storage.NewUUID())
		require.NoError(t, os.MkdirAll(filepath.Join(blobs, filepath.Dir(key)), 0o700))
		doc := append(body[:len(body):len(body)], fmt.Sprintf("\n\n## Marker\n\nzyxmarker%c lives here.\n", 'a'+i)...)
		require.NoError(t, os.WriteFile(filepath.Join(blobs, key), doc, 0o600))
		created, err := store.Knowledge.CreateDocuments(ctx, org.ID, 0, []storage.KnowledgeDocument{{Name: fmt.Sprint("doc ", i), SourceType: "file", MimeType: mimeMarkdown, OriginalKey: key}})
		require.NoError(t, err)
		ids = append(ids, created[0].ID)
	}
	statuses := func() map[string]int {
		out := map[string]int{}
		for _, id := range ids {
			d, err := store.Knowledge.Document(ctx, org.ID, id)
			require.NoError(t, err)
			out[d.Status]++
		}
		return out
	}

	replica := jobstest.Start(t, "TestIngestionReplicaProcess", replicaDBEnv+"="+dbURL, replicaBlobEnv+"="+blobs)
	// Killed once the first documents are ready, the next in flight.
	require.Eventually(t, func() bool { return statuses()[storage.DocReady] >= 2 }, 60*time.Second, 5*time.Millisecond,
		"the replica ingested nothing; its output:\n%s", replica.Output())
	replica.Kill(t)
	killed := time.Now()
	at := statuses()
	t.Logf("at the kill: %v", at)
	require.Positive(t, at[storage.DocProcessing], "documents in flight when the replica died")
	require.Less(t, at[storage.DocReady], len(ids), "documents left to ingest")

	// Another worker (this process) takes over after the lease.
	svc, err := New(Config{BlobDir: blobs, SigningKey: []byte("k"), Poll: 20 * time.Millisecond, Lease: replicaLease}, nil, store.Knowledge)
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = svc.Run(rctx) })
	defer func() { cancel(); wg.Wait() }()
	require.Eventually(t, func() bool { return statuses()[storage.DocReady] == len(ids) }, 60*time.Second, 20*time.Millisecond,
		"every document ready: %v", statuses())
	t.Logf("all %d ready %v after the kill (lease %v)", len(ids), time.Since(killed).Round(time.Millisecond), replicaLease)

	for i, id := range ids {
		doc, err := store.Knowledge.Document(ctx, org.ID, id)
		require.NoError(t, err)
		require.Positive(t, doc.ChunkCount)
		var chunks, counted, dupCells int64
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM knowledge_chunks WHERE document_id = $1`, id).Scan(&chunks))
		require.NoError(t, db.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM knowledge_postings WHERE document_id = $1 AND term = ''`, id).Scan(&counted))
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT term, block FROM knowledge_postings WHERE document_id = $1
			GROUP BY term, block HAVING count(*) > 1) x`, id).Scan(&dupCells))
		require.Equal(t, doc.ChunkCount, chunks, "%s: chunks stored once", doc.Name)
		require.Equal(t, chunks, counted, "%s: the index counts its chunks", doc.Name)
		require.Zero(t, dupCells, "%s: one cell per term and block", doc.Name)
		hits, err := store.Knowledge.Search(ctx, org.ID, storage.KnowledgeQuery{Text: fmt.Sprintf("zyxmarker%c", 'a'+i), Limit: 5})
		require.NoError(t, err)
		require.Len(t, hits, 1, "%s: its own word is found once", doc.Name)
		require.Equal(t, id, hits[0].DocumentID)
		require.True(t, strings.Contains(hits[0].Text, "lives here"), hits[0].Text)
	}
	var orphans int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM knowledge_postings WHERE document_id NOT IN (SELECT id FROM knowledge_documents)`).Scan(&orphans))
	require.Zero(t, orphans, "no cells of a document that is gone")
}
