package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/voiced/voiced/storage/migrations"
)

// KnowledgeStore holds knowledge documents, their chunks and knowledge
// bases. A document row doubles as its ingestion job (ClaimIngestion).
type KnowledgeStore struct{ *base }

// Knowledge document statuses (spec/api.md section 3).
const (
	DocPending    = "pending"
	DocProcessing = "processing"
	DocReady      = "ready"
	DocFailed     = "failed"
)

// KnowledgeDocument is one document of the flat store.
type KnowledgeDocument struct {
	ID, Name, SourceType, SourceOrigin string
	OrgID                              int64
	OriginalFilename, MimeType         string
	ByteCount                          int64
	// Content is the extracted text (set for text documents at once, for
	// files when ingestion ends). Lists leave it empty.
	Content string
	// BytesSHA is the hex SHA-256 of an uploaded file's bytes; TextSHA of
	// its extracted text. Duplicate warnings compare them.
	BytesSHA, TextSHA string
	// OriginalKey is the blob key of the uploaded file, "" for text.
	OriginalKey       string
	OriginalSizeBytes int64
	OriginalMimeType  string
	Status, Error     string
	ChunkCount        int64
	UploadedBy        *KnowledgeUser
	ReplacedAt        *time.Time
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// KnowledgeUser is the uploader shown on a document.
type KnowledgeUser struct {
	ID          int64
	Name, Email string
}

// DocumentFilter narrows a document list.
type DocumentFilter struct {
	// Q matches a substring of the name or content, case-insensitively.
	Q, Status string
	// BaseID lists only documents of that knowledge base.
	BaseID string
}

// DocumentChange is a PATCH or replace. Set fields change; any change
// re-queues ingestion.
type DocumentChange struct {
	Name    *string
	Content *string
	// File, when set, replaces the original (and the extracted content).
	File *KnowledgeDocument
	// Replaced sets replaced_at (POST replace).
	Replaced bool
}

// KnowledgeChunk is one indexed piece of a document.
type KnowledgeChunk struct {
	Position int
	// Context is what stands above the text: its headings, or a CSV
	// header row. It is indexed with the text.
	Context, Text string
	// Vector is the chunk's embedding, nil when there is none.
	Vector []float32
}

// IngestJob is a claimed document to ingest.
type IngestJob struct {
	DocumentID, Owner      string
	OrgID                  int64
	Generation, Attempts   int64
	SourceType, MimeType   string
	OriginalKey, Content   string
	OriginalFilename, Name string
	// EmbedModel, set by the worker, is the model of the chunks' vectors
	// ("" when they have none).
	EmbedModel string
}

// KnowledgeBase is a named grouping of documents.
type KnowledgeBase struct {
	ID, Name, Description string
	OrgID                 int64
	DocumentCount         int64
	CreatedAt, UpdatedAt  time.Time
}

const docCols = `d.id, d.org_id, d.name, d.source_type, d.source_origin, d.original_filename, d.mime_type, d.byte_count,
	d.bytes_sha, d.text_sha, d.original_key, d.original_size_bytes, d.original_mime_type, d.status, d.error, d.chunk_count,
	d.replaced_at, d.created_at, d.updated_at, u.id, u.first_name, u.last_name, u.email`

const docFrom = ` FROM knowledge_documents d LEFT JOIN users u ON u.id = d.uploaded_by`

func scanDoc(sc interface{ Scan(...any) error }, extra ...any) (KnowledgeDocument, error) {
	var d KnowledgeDocument
	var replaced sql.NullInt64
	var created, updated int64
	var uid sql.NullInt64
	var first, last, email sql.NullString
	dst := []any{&d.ID, &d.OrgID, &d.Name, &d.SourceType, &d.SourceOrigin, &d.OriginalFilename, &d.MimeType, &d.ByteCount,
		&d.BytesSHA, &d.TextSHA, &d.OriginalKey, &d.OriginalSizeBytes, &d.OriginalMimeType, &d.Status, &d.Error, &d.ChunkCount,
		&replaced, &created, &updated, &uid, &first, &last, &email}
	if err := sc.Scan(append(dst, extra...)...); err != nil {
		return d, translate(err)
	}
	d.ReplacedAt, d.CreatedAt, d.UpdatedAt = fromNullMS(replaced), fromMS(created), fromMS(updated)
	if uid.Valid {
		d.UploadedBy = &KnowledgeUser{ID: uid.Int64, Name: strings.TrimSpace(first.String + " " + last.String), Email: email.String}
	}
	return d, nil
}

// CreateDocuments stores docs (all or none) as pending; each gets its id
// and timestamps. uploadedBy is the acting user (0: none).
func (s *KnowledgeStore) CreateDocuments(ctx context.Context, orgID, uploadedBy int64, docs []KnowledgeDocument) ([]KnowledgeDocument, error) {
	now := s.nowMS()
	var by any
	if uploadedBy > 0 {
		by = uploadedBy
	}
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		for i := range docs {
			d := &docs[i]
			d.ID, d.OrgID, d.Status = NewUUID(), orgID, DocPending
			if d.SourceOrigin == "" {
				d.SourceOrigin = "upload"
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO knowledge_documents (id, org_id, name, source_type, source_origin, original_filename,
				mime_type, byte_count, content, bytes_sha, text_sha, original_key, original_size_bytes, original_mime_type, status,
				uploaded_by, next_attempt_at, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $17, $17)`,
				d.ID, orgID, d.Name, d.SourceType, d.SourceOrigin, d.OriginalFilename, d.MimeType, d.ByteCount, d.Content,
				d.BytesSHA, d.TextSHA, d.OriginalKey, d.OriginalSizeBytes, d.OriginalMimeType, DocPending, by, now); err != nil {
				return translate(err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]KnowledgeDocument, len(docs))
	for i, d := range docs {
		if out[i], err = s.Document(ctx, orgID, d.ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Document returns one document with its content.
func (s *KnowledgeStore) Document(ctx context.Context, orgID int64, id string) (KnowledgeDocument, error) {
	var content string
	d, err := scanDoc(s.db.QueryRowContext(ctx, `SELECT `+docCols+`, d.content`+docFrom+` WHERE d.org_id = $1 AND d.id = $2`, orgID, id), &content)
	d.Content = content
	return d, err
}

// Documents lists an org's documents, newest first, without content.
func (s *KnowledgeStore) Documents(ctx context.Context, orgID int64, f DocumentFilter) ([]KnowledgeDocument, error) {
	q := `SELECT ` + docCols + docFrom + ` WHERE d.org_id = $1
		AND ($2 = '' OR d.status = $2)
		AND ($3 = '' OR EXISTS (SELECT 1 FROM knowledge_base_documents b WHERE b.document_id = d.id AND b.base_id = $3))
		AND ($4 = '' OR LOWER(d.name) LIKE $4 ESCAPE '\' OR LOWER(d.content) LIKE $4 ESCAPE '\')
		ORDER BY d.created_at DESC, d.id DESC`
	like := ""
	if f.Q != "" {
		r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
		like = "%" + r.Replace(strings.ToLower(f.Q)) + "%"
	}
	rows, err := s.db.QueryContext(ctx, q, orgID, f.Status, f.BaseID, like)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []KnowledgeDocument
	for rows.Next() {
		d, err := scanDoc(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, translate(rows.Err())
}

// DuplicateDocuments returns the ids of the org's documents other than
// except whose bytes hash equals bytesSHA or whose text hash equals
// textSHA (empty hashes match nothing), oldest first.
func (s *KnowledgeStore) DuplicateDocuments(ctx context.Context, orgID int64, bytesSHA, textSHA, except string) ([]string, error) {
	return s.ids(ctx, `SELECT id FROM knowledge_documents WHERE org_id = $1 AND id <> $4
		AND (($2 <> '' AND bytes_sha = $2) OR ($3 <> '' AND text_sha = $3)) ORDER BY created_at, id`, orgID, bytesSHA, textSHA, except)
}

// ids runs a query of one text column and returns its values.
func (s *KnowledgeStore) ids(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, translate(err)
		}
		out = append(out, id)
	}
	return out, translate(rows.Err())
}

// UpdateDocument applies ch and re-queues ingestion. It returns the
// document and the blob key the change replaced ("" if none), which the
// caller deletes once the change is committed.
func (s *KnowledgeStore) UpdateDocument(ctx context.Context, orgID int64, id string, ch DocumentChange) (KnowledgeDocument, string, error) {
	now := s.nowMS()
	var oldKey string
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		var cur KnowledgeDocument
		err := tx.QueryRowContext(ctx, `SELECT name, source_type, original_key, content, byte_count, mime_type, original_filename,
			bytes_sha, text_sha, original_size_bytes, original_mime_type FROM knowledge_documents WHERE org_id = $1 AND id = $2`, orgID, id).
			Scan(&cur.Name, &cur.SourceType, &cur.OriginalKey, &cur.Content, &cur.ByteCount, &cur.MimeType, &cur.OriginalFilename,
				&cur.BytesSHA, &cur.TextSHA, &cur.OriginalSizeBytes, &cur.OriginalMimeType)
		if err != nil {
			return translate(err)
		}
		if ch.Name != nil {
			cur.Name = *ch.Name
		}
		if ch.Content != nil {
			// New text turns the document into a text document.
			oldKey = cur.OriginalKey
			cur.SourceType, cur.Content, cur.OriginalKey, cur.OriginalFilename = "text", *ch.Content, "", ""
			cur.MimeType, cur.ByteCount, cur.BytesSHA, cur.OriginalSizeBytes, cur.OriginalMimeType = "text/plain", int64(len(*ch.Content)), "", 0, ""
			cur.TextSHA = TextHash(*ch.Content)
		}
		if f := ch.File; f != nil {
			oldKey = cur.OriginalKey
			cur.SourceType, cur.Content, cur.OriginalKey, cur.OriginalFilename = "file", f.Content, f.OriginalKey, f.OriginalFilename
			cur.MimeType, cur.ByteCount, cur.BytesSHA, cur.TextSHA = f.MimeType, f.ByteCount, f.BytesSHA, f.TextSHA
			cur.OriginalSizeBytes, cur.OriginalMimeType = f.OriginalSizeBytes, f.OriginalMimeType
		}
		var replaced any
		if ch.Replaced {
			replaced = now
		}
		_, err = tx.ExecContext(ctx, `UPDATE knowledge_documents SET name = $3, source_type = $4, content = $5, original_key = $6,
			original_filename = $7, mime_type = $8, byte_count = $9, bytes_sha = $10, text_sha = $11, original_size_bytes = $12,
			original_mime_type = $13, replaced_at = COALESCE($14, replaced_at), status = 'pending', error = '', generation = generation + 1,
			attempts = 0, next_attempt_at = $15, lease_owner = '', lease_until = 0, updated_at = $15
			WHERE org_id = $1 AND id = $2`, orgID, id, cur.Name, cur.SourceType, cur.Content, cur.OriginalKey, cur.OriginalFilename,
			cur.MimeType, cur.ByteCount, cur.BytesSHA, cur.TextSHA, cur.OriginalSizeBytes, cur.OriginalMimeType, replaced, now)
		return translate(err)
	})
	if err != nil {
		return KnowledgeDocument{}, "", err
	}
	d, err := s.Document(ctx, orgID, id)
	return d, oldKey, err
}

// RetryDocument re-queues a failed document; any other status is
// ErrWrongState.
func (s *KnowledgeStore) RetryDocument(ctx context.Context, orgID int64, id string) (KnowledgeDocument, error) {
	now := s.nowMS()
	res, err := s.db.ExecContext(ctx, `UPDATE knowledge_documents SET status = 'pending', error = '', generation = generation + 1,
		attempts = 0, next_attempt_at = $3, lease_owner = '', lease_until = 0, updated_at = $3
		WHERE org_id = $1 AND id = $2 AND status = 'failed'`, orgID, id, now)
	if err != nil {
		return KnowledgeDocument{}, translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := s.Document(ctx, orgID, id); err != nil {
			return KnowledgeDocument{}, err
		}
		return KnowledgeDocument{}, ErrWrongState
	}
	return s.Document(ctx, orgID, id)
}

// DeleteDocument deletes a document, its chunks and its base memberships,
// and returns its blob key ("" for text) for the caller to remove.
func (s *KnowledgeStore) DeleteDocument(ctx context.Context, orgID int64, id string) (string, error) {
	var key string
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT original_key FROM knowledge_documents WHERE org_id = $1 AND id = $2`, orgID, id).Scan(&key); err != nil {
			return translate(err)
		}
		// Chunks and postings first, explicitly: the statements say what is
		// removed.
		if err := deleteChunks(ctx, tx, id); err != nil {
			return err
		}
		if err := dropVectors(ctx, tx, orgID, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM knowledge_documents WHERE org_id = $1 AND id = $2`, orgID, id)
		return translate(err)
	})
	return key, err
}

// ChunkCount is the number of stored chunks of a document (tests).
func (s *KnowledgeStore) ChunkCount(ctx context.Context, id string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM knowledge_chunks WHERE document_id = $1`, id).Scan(&n)
	return n, translate(err)
}

// ClaimIngestion leases the next document due for ingestion to owner
// until now+lease: a pending one whose next attempt is due, or one left
// processing by a worker whose lease ran out (it crashed or was killed).
// The conditional UPDATE makes the claim atomic across replicas. ok is
// false when nothing is due.
func (s *KnowledgeStore) ClaimIngestion(ctx context.Context, owner string, lease time.Duration) (job IngestJob, ok bool, err error) {
	now := s.nowMS()
	for range 5 {
		var id string
		err := s.db.QueryRowContext(ctx, `SELECT id FROM knowledge_documents
			WHERE (status = 'pending' AND next_attempt_at <= $1) OR (status = 'processing' AND lease_until < $1)
			ORDER BY next_attempt_at, created_at LIMIT 1`, now).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return IngestJob{}, false, nil
		}
		if err != nil {
			return IngestJob{}, false, translate(err)
		}
		err = s.db.QueryRowContext(ctx, `UPDATE knowledge_documents SET status = 'processing', lease_owner = $2, lease_until = $3,
			attempts = attempts + 1, updated_at = $1
			WHERE id = $4 AND ((status = 'pending' AND next_attempt_at <= $1) OR (status = 'processing' AND lease_until < $1))
			RETURNING org_id, generation, attempts, source_type, mime_type, original_key, content, original_filename, name`,
			now, owner, now+lease.Milliseconds(), id).Scan(&job.OrgID, &job.Generation, &job.Attempts, &job.SourceType, &job.MimeType,
			&job.OriginalKey, &job.Content, &job.OriginalFilename, &job.Name)
		if errors.Is(err, sql.ErrNoRows) {
			continue // another worker won it; look again
		}
		if err != nil {
			return IngestJob{}, false, translate(err)
		}
		job.DocumentID, job.Owner = id, owner
		return job, true, nil
	}
	return IngestJob{}, false, nil
}

// CompleteIngestion stores a claimed job's text and chunks and marks the
// document ready. If the document changed or was claimed by another worker
// since (its generation or lease owner differ), nothing is written and
// the result is ErrConflict.
func (s *KnowledgeStore) CompleteIngestion(ctx context.Context, job IngestJob, content string, chunks []KnowledgeChunk) error {
	now := s.nowMS()
	// Splitting the chunks into terms is most of the client's CPU: it runs
	// on another core while the server stores the document and its chunks;
	// the index is written when both are done.
	split := make(chan docTerms, 1)
	go func() { split <- splitChunks(chunks) }()
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		// The document's text (a megabyte for a big one) is compressed as
		// it is stored: with pglz that was a tenth of PostgreSQL's share of
		// ingestion, with lz4 a sixth of that.
		if err := s.db.compressFast(ctx, tx); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE knowledge_documents SET status = 'ready', error = '', content = $4, text_sha = $5,
			chunk_count = $6, lease_owner = '', lease_until = 0, updated_at = $7
			WHERE id = $1 AND generation = $2 AND lease_owner = $3 AND status = 'processing'`,
			job.DocumentID, job.Generation, job.Owner, content, TextHash(content), len(chunks), now)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrConflict
		}
		if err := deleteChunks(ctx, tx, job.DocumentID); err != nil {
			return err
		}
		// Many rows per statement: a round trip per chunk was most of
		// PostgreSQL's ingestion time.
		for i := 0; i < len(chunks); i += chunkBatch {
			batch := chunks[i:min(i+chunkBatch, len(chunks))]
			var q strings.Builder
			q.WriteString(`INSERT INTO knowledge_chunks (org_id, document_id, position, context, text) VALUES `)
			args := make([]any, 0, 3*len(batch)+2)
			args = append(args, job.OrgID, job.DocumentID)
			for j, c := range batch {
				if j > 0 {
					q.WriteString(", ")
				}
				if s.db.Dialect == migrations.SQLite {
					q.WriteString("(?1, ?2, ?, ?, ?)") // see insertCells
				} else {
					n := len(args)
					fmt.Fprintf(&q, "($1, $2, $%d, $%d, $%d)", n+1, n+2, n+3)
				}
				args = append(args, c.Position, c.Context, c.Text)
			}
			if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
				return translate(err)
			}
		}
		if err := putVectors(ctx, tx, job, chunks); err != nil {
			return err
		}
		return s.writeIndex(ctx, tx, job.OrgID, job.DocumentID, <-split)
	})
}

// deleteChunks removes a document's chunks and their postings. Every
// path that removes or re-indexes a document goes through it: postings
// have no foreign key to cascade from their document (migration 00020).
func deleteChunks(ctx context.Context, tx *sql.Tx, docID string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM knowledge_postings WHERE document_id = $1`, docID); err != nil {
		return translate(err)
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM knowledge_chunks WHERE document_id = $1`, docID)
	return translate(err)
}

// deleteOrgPostings removes all knowledge postings of an org, which is
// about to be deleted. knowledge_postings has no foreign key (migration
// 00020), so the cascade that removes the org's documents and chunks does
// not reach them.
func deleteOrgPostings(ctx context.Context, tx *sql.Tx, orgID int64) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM knowledge_postings WHERE org_id = $1`, orgID)
	return translate(err)
}

// chunkBatch is how many chunks one INSERT writes.
const chunkBatch = 100

// FailIngestion ends a claimed job that did not succeed. With retryAt nil
// the document is failed with msg (written for users); otherwise it goes
// back to pending until retryAt. A stale job (see CompleteIngestion) is
// ErrConflict.
func (s *KnowledgeStore) FailIngestion(ctx context.Context, job IngestJob, msg string, retryAt *time.Time) error {
	now := s.nowMS()
	status, next := DocFailed, int64(0)
	if retryAt != nil {
		status, next = DocPending, ms(*retryAt)
	}
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		// A retry keeps the document's chunks searchable until new ones
		// replace them; a failure removes them.
		res, err := tx.ExecContext(ctx, `UPDATE knowledge_documents SET status = $4, error = $5, next_attempt_at = $6,
			chunk_count = 0, lease_owner = '', lease_until = 0, updated_at = $7
			WHERE id = $1 AND generation = $2 AND lease_owner = $3 AND status = 'processing'`,
			job.DocumentID, job.Generation, job.Owner, status, msg, next, now)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrConflict
		}
		if retryAt != nil {
			return nil
		}
		if err := deleteChunks(ctx, tx, job.DocumentID); err != nil {
			return err
		}
		return dropVectors(ctx, tx, job.OrgID, job.DocumentID)
	})
}

// ExtendLease pushes a claimed job's lease to now+lease; ErrConflict when
// the job is no longer this worker's.
func (s *KnowledgeStore) ExtendLease(ctx context.Context, job IngestJob, lease time.Duration) error {
	now := s.nowMS()
	res, err := s.db.ExecContext(ctx, `UPDATE knowledge_documents SET lease_until = $4
		WHERE id = $1 AND generation = $2 AND lease_owner = $3 AND status = 'processing'`, job.DocumentID, job.Generation, job.Owner, now+lease.Milliseconds())
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrConflict
	}
	return nil
}
