package knowledge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/voiced/voiced/ai/embed"
	"github.com/voiced/voiced/control/jobs"
	"github.com/voiced/voiced/storage"
)

// IngestStore is the durable ingestion queue (storage.KnowledgeStore).
type IngestStore interface {
	ClaimIngestion(ctx context.Context, owner string, lease time.Duration) (storage.IngestJob, bool, error)
	ExtendLease(ctx context.Context, job storage.IngestJob, lease time.Duration) error
	CompleteIngestion(ctx context.Context, job storage.IngestJob, content string, chunks []storage.KnowledgeChunk) error
	FailIngestion(ctx context.Context, job storage.IngestJob, msg string, retryAt *time.Time) error
}

// Worker ingests documents: it claims a due document from the store
// (pending, or processing under an expired lease), extracts its text,
// chunks it and stores the chunks, which indexes them. Any number of
// workers may run across replicas; the lease gives each job one runner.
// A worker killed mid-job leaves the lease to expire, after which another
// takes the job over; a transient failure retries with backoff.
type Worker struct {
	cfg   Config
	log   *slog.Logger
	store IngestStore
	blobs blobs
	owner string
	wake  chan struct{}
	now   func() time.Time
	// embedder, when set, embeds every chunk (model embedModel).
	embedder   embed.Embedder
	embedModel string
}

// newWorker returns a worker; Run starts it.
func newWorker(cfg Config, log *slog.Logger, store IngestStore) *Worker {
	return &Worker{cfg: cfg, log: log, store: store, blobs: blobs{cfg.BlobDir}, owner: "ingest-" + storage.NewUUID(),
		wake: make(chan struct{}, 1), now: time.Now}
}

// Wake makes a waiting Run look for work now (after an upload).
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// ingestAtOnce is how many documents a worker ingests at once: one is
// extracted and split into terms while another's chunks and index are
// written (the database takes one writer at a time).
const ingestAtOnce = 2

// Run ingests documents, ingestAtOnce at a time, until ctx ends. A job in
// flight when ctx ends goes back to the queue at once.
func (w *Worker) Run(ctx context.Context) error {
	var g errgroup.Group
	for range ingestAtOnce {
		g.Go(func() error {
			return jobs.Run(ctx, w.cfg.Poll, w.wake, w.RunOnce, func(err error) { w.log.Warn("knowledge ingestion", "err", err.Error()) })
		})
	}
	return g.Wait()
}

// RunOnce claims and ingests one due document; did is false when none
// was due.
func (w *Worker) RunOnce(ctx context.Context) (did bool, err error) {
	job, ok, err := w.store.ClaimIngestion(ctx, w.owner, w.cfg.Lease)
	if err != nil || !ok {
		return false, err
	}
	// More may be queued (an upload of several files wakes one runner):
	// an idle runner looks too.
	w.Wake()
	log := w.log.With("document_id", job.DocumentID, "org_id", job.OrgID)
	// Keep the lease while the job runs; losing it (the document changed
	// or was deleted) abandons the job.
	jctx, stop := jobs.Hold(ctx, w.cfg.Lease, func(ctx context.Context) error { return w.store.ExtendLease(ctx, job, w.cfg.Lease) })
	defer stop()
	content, chunks, err := w.ingest(jctx, job)
	if err == nil && w.embedder != nil {
		// A provider failure retries the job with backoff like any other
		// transient failure; on the last attempt the chunks are kept
		// without vectors (BM25 still finds them) and the next start
		// queues the document to embed again.
		if eerr := embedChunks(jctx, w.embedder, job.Name, chunks); eerr == nil {
			job.EmbedModel = w.embedModel
		} else if jctx.Err() != nil || job.Attempts < int64(w.cfg.MaxAttempts) {
			err = eerr
		} else {
			log.Warn("knowledge document stored without vectors", "err", eerr.Error(), "attempts", job.Attempts)
			for i := range chunks {
				chunks[i].Vector = nil
			}
		}
	}
	// The result is recorded even when ctx ended (shutdown): a job that
	// finished is kept, and one that did not goes back to the queue now.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	var ee *ExtractError
	switch {
	case err == nil:
		err = w.store.CompleteIngestion(rctx, job, content, chunks)
	case errors.As(err, &ee):
		log.Info("knowledge document failed", "reason", ee.Msg)
		err = w.store.FailIngestion(rctx, job, ee.Msg, nil)
	case jctx.Err() != nil:
		at := w.now()
		err = w.store.FailIngestion(rctx, job, "", &at)
	case job.Attempts >= int64(w.cfg.MaxAttempts):
		log.Warn("knowledge ingestion gave up", "err", err.Error(), "attempts", job.Attempts)
		err = w.store.FailIngestion(rctx, job, "Ingestion failed repeatedly; retry the document later.", nil)
	default:
		at := w.now().Add(w.backoff(job.Attempts))
		log.Warn("knowledge ingestion will retry", "err", err.Error(), "attempts", job.Attempts)
		err = w.store.FailIngestion(rctx, job, "", &at)
	}
	if errors.Is(err, storage.ErrConflict) {
		err = nil // the document changed or another worker took over; its result stands
	}
	return true, err
}

// backoff is the wait before attempt n+1: Backoff doubled per attempt,
// capped at ten minutes.
func (w *Worker) backoff(attempts int64) time.Duration {
	d := w.cfg.Backoff << min(max(attempts-1, 0), 10)
	return min(d, 10*time.Minute)
}

// ingest extracts and chunks a claimed document.
func (w *Worker) ingest(ctx context.Context, job storage.IngestJob) (string, []storage.KnowledgeChunk, error) {
	var src io.ReaderAt
	var size int64
	if job.SourceType == "text" {
		r := strings.NewReader(job.Content)
		src, size = r, r.Size()
	} else {
		f, err := w.blobs.open(job.OriginalKey)
		if err != nil {
			return "", nil, fmt.Errorf("open original: %w", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return "", nil, fmt.Errorf("stat original: %w", err)
		}
		src, size = f, st.Size()
	}
	content, blocks, err := extract(job.MimeType, src, size, w.cfg.Limits)
	if err != nil {
		return "", nil, err
	}
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	return content, chunkBlocks(blocks, w.cfg.ChunkWords, w.cfg.ChunkOverlap), nil
}
