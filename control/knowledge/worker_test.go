package knowledge

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// meetingEmbedder is the embeddings provider's side of the test: each
// call waits (up to a few seconds) until ingestAtOnce calls are in
// flight together, and counts the most it saw.
type meetingEmbedder struct {
	mu       sync.Mutex
	inFlight int
	most     int
	met      chan struct{}
}

func (m *meetingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	m.mu.Lock()
	m.inFlight++
	m.most = max(m.most, m.inFlight)
	if m.inFlight == ingestAtOnce {
		close(m.met)
	}
	m.mu.Unlock()
	select {
	case <-m.met:
	case <-time.After(3 * time.Second):
	}
	m.mu.Lock()
	m.inFlight--
	m.mu.Unlock()
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}

// TestWorkerIngestsAtOnce: Run works ingestAtOnce documents at the same
// time (one uploaded with a wake, the next found by the idle runner the
// first one wakes), and each still ends ready.
func TestWorkerIngestsAtOnce(t *testing.T) {
	ctx := context.Background()
	db := sqltest.New(t, migrations.SQLite)
	store, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32)})
	require.NoError(t, err)
	u, err := store.Orgs.CreateUser(ctx, "at-once@example.com", "A", "Once")
	require.NoError(t, err)
	org, err := store.Orgs.CreateOrg(ctx, u.ID, "Once")
	require.NoError(t, err)
	svc, err := New(Config{BlobDir: t.TempDir(), SigningKey: []byte("k"), Poll: time.Hour}, nil, store.Knowledge)
	require.NoError(t, err)
	e := &meetingEmbedder{met: make(chan struct{})}
	svc.worker.embedder, svc.worker.embedModel = e, "m"
	var docs []storage.KnowledgeDocument
	for _, text := range []string{"Parcels ship on Mondays.", "Refunds take five days."} {
		docs = append(docs, storage.KnowledgeDocument{Name: "d", SourceType: "text", MimeType: "text/plain", Content: text})
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go svc.worker.Run(rctx)
	time.Sleep(100 * time.Millisecond) // both runners found nothing and wait
	created, err := store.Knowledge.CreateDocuments(ctx, org.ID, 0, docs)
	require.NoError(t, err)
	svc.worker.Wake() // as an upload does: one wake for the lot
	require.Eventually(t, func() bool {
		for _, c := range created {
			if d, _ := store.Knowledge.Document(ctx, org.ID, c.ID); d.Status != storage.DocReady {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "every document ready")
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Equal(t, 2, e.most, "documents in ingestion at once")
}
