package storage

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/voiced/voiced/storage/migrations"
)

// Knowledge vectors: one embedding per chunk, keyed like the chunk by
// (document, position), written with the chunks (CompleteIngestion) and
// searched in process by package knowledge. Every change of an org's
// vectors bumps its vector version, so an in-process index learns of
// changes made by any replica from one point read.

// StoredVector is one chunk's embedding.
type StoredVector struct {
	DocumentID string
	Position   int
	Vector     []float32
}

// ChunkKey names a chunk by its document and position.
type ChunkKey struct {
	DocumentID string
	Position   int
}

// encodeVector is v as little-endian float32s.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("knowledge vector of %d bytes: not float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// bumpVectorVersion counts a change of the org's vectors and returns the
// new version.
func bumpVectorVersion(ctx context.Context, tx *sql.Tx, orgID int64) (int64, error) {
	var v int64
	err := tx.QueryRowContext(ctx, `INSERT INTO knowledge_vector_versions (org_id, version) VALUES ($1, 1)
		ON CONFLICT (org_id) DO UPDATE SET version = knowledge_vector_versions.version + 1 RETURNING version`, orgID).Scan(&v)
	return v, translate(err)
}

// putVectors replaces a completed job's vectors inside its transaction:
// the chunks' vectors when every chunk has one and the job names the
// model, else none (the document is then searched by BM25 alone).
func putVectors(ctx context.Context, tx *sql.Tx, job IngestJob, chunks []KnowledgeChunk) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM knowledge_vectors WHERE document_id = $1`, job.DocumentID); err != nil {
		return translate(err)
	}
	model := job.EmbedModel
	for _, c := range chunks {
		if len(c.Vector) == 0 {
			model = ""
		}
	}
	if model != "" {
		for i := 0; i < len(chunks); i += chunkBatch {
			batch := chunks[i:min(i+chunkBatch, len(chunks))]
			var q strings.Builder
			q.WriteString(`INSERT INTO knowledge_vectors (org_id, document_id, position, vector) VALUES `)
			args := make([]any, 0, 2*len(batch)+2)
			args = append(args, job.OrgID, job.DocumentID)
			for j, c := range batch {
				if j > 0 {
					q.WriteString(", ")
				}
				n := len(args)
				fmt.Fprintf(&q, "($1, $2, $%d, $%d)", n+1, n+2)
				args = append(args, c.Position, encodeVector(c.Vector))
			}
			if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
				return translate(err)
			}
		}
	}
	v, err := bumpVectorVersion(ctx, tx, job.OrgID)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE knowledge_documents SET embed_model = $2, embed_version = $3 WHERE id = $1`, job.DocumentID, model, v)
	return translate(err)
}

// dropVectors removes a document's vectors inside tx (its chunks are going).
func dropVectors(ctx context.Context, tx *sql.Tx, orgID int64, docID string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM knowledge_vectors WHERE document_id = $1`, docID); err != nil {
		return translate(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE knowledge_documents SET embed_model = '', embed_version = 0 WHERE id = $1`, docID); err != nil {
		return translate(err)
	}
	_, err := bumpVectorVersion(ctx, tx, orgID)
	return err
}

// VectorVersion is the org's vector version: it changes whenever any of
// the org's vectors do (0 before the first).
func (s *KnowledgeStore) VectorVersion(ctx context.Context, orgID int64) (int64, error) {
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT version FROM knowledge_vector_versions WHERE org_id = $1`, orgID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return v, translate(err)
}

// VectorDocuments maps each of the org's documents with vectors from
// model to the vector version they were written at.
func (s *KnowledgeStore) VectorDocuments(ctx context.Context, orgID int64, model string) (map[string]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, embed_version FROM knowledge_documents WHERE org_id = $1 AND embed_model = $2`, orgID, model)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, translate(err)
		}
		out[id] = v
	}
	return out, translate(rows.Err())
}

// DocumentVectors returns the vectors of the org's documents ids (all of
// the org's documents with vectors from model when ids is nil).
func (s *KnowledgeStore) DocumentVectors(ctx context.Context, orgID int64, model string, ids []string) ([]StoredVector, error) {
	in, list := s.jsonList(4, ids)
	rows, err := s.db.QueryContext(ctx, `SELECT v.document_id, v.position, v.vector FROM knowledge_vectors v
		JOIN knowledge_documents d ON d.id = v.document_id
		WHERE v.org_id = $1 AND d.embed_model = $2 AND ($3 = 0 OR v.document_id IN (`+in+`))`, orgID, model, btoi(ids != nil), list)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []StoredVector
	for rows.Next() {
		var sv StoredVector
		var b []byte
		if err := rows.Scan(&sv.DocumentID, &sv.Position, &b); err != nil {
			return nil, translate(err)
		}
		if sv.Vector, err = decodeVector(b); err != nil {
			return nil, err
		}
		out = append(out, sv)
	}
	return out, translate(rows.Err())
}

// jsonList is a subquery of the strings passed as parameter $n, and
// that parameter: vals as a JSON array.
func (s *KnowledgeStore) jsonList(n int, vals []string) (string, string) {
	in := fmt.Sprintf(`SELECT jsonb_array_elements_text($%d::jsonb)`, n)
	if s.db.Dialect == migrations.SQLite {
		in = fmt.Sprintf(`SELECT value FROM json_each($%d)`, n)
	}
	list, _ := json.Marshal(nonNil(vals))
	return in, string(list)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ChunksAt returns the org's chunks at keys as search hits (Score 0), in
// no particular order; keys of chunks that are gone are left out.
func (s *KnowledgeStore) ChunksAt(ctx context.Context, orgID int64, keys []ChunkKey) ([]KnowledgeHit, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var q strings.Builder
	q.WriteString(`SELECT c.id, c.document_id, d.name, c.position, c.context, c.text FROM knowledge_chunks c
		JOIN knowledge_documents d ON d.id = c.document_id WHERE c.org_id = $1 AND (`)
	args := []any{orgID}
	for i, k := range keys {
		if i > 0 {
			q.WriteString(" OR ")
		}
		fmt.Fprintf(&q, "(c.document_id = $%d AND c.position = $%d)", len(args)+1, len(args)+2)
		args = append(args, k.DocumentID, k.Position)
	}
	q.WriteString(")")
	rows, err := s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []KnowledgeHit
	for rows.Next() {
		var h KnowledgeHit
		if err := rows.Scan(&h.ChunkID, &h.DocumentID, &h.DocumentName, &h.Position, &h.Context, &h.Text); err != nil {
			return nil, translate(err)
		}
		out = append(out, h)
	}
	return out, translate(rows.Err())
}

// BaseDocumentIDs returns the ids of the documents in any of the org's
// bases baseIDs.
func (s *KnowledgeStore) BaseDocumentIDs(ctx context.Context, orgID int64, baseIDs []string) ([]string, error) {
	in, list := s.jsonList(2, baseIDs)
	return s.ids(ctx, `SELECT DISTINCT m.document_id FROM knowledge_base_documents m
		JOIN knowledge_bases b ON b.id = m.base_id WHERE b.org_id = $1 AND m.base_id IN (`+in+`)`, orgID, list)
}

// RequeueUnembedded queues every ready document with chunks whose vectors
// are not from model for ingestion again, so a server given an embeddings
// provider (or a new model) embeds what was ingested before. Their chunks
// stay searchable meanwhile. It returns how many were queued.
func (s *KnowledgeStore) RequeueUnembedded(ctx context.Context, model string) (int64, error) {
	now := s.nowMS()
	res, err := s.db.ExecContext(ctx, `UPDATE knowledge_documents SET status = 'pending', generation = generation + 1, attempts = 0,
		next_attempt_at = $2, lease_owner = '', lease_until = 0, updated_at = $2
		WHERE status = 'ready' AND chunk_count > 0 AND embed_model <> $1`, model, now)
	if err != nil {
		return 0, translate(err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// EmbedModel is the model of a document's vectors ("" for none; tests).
func (s *KnowledgeStore) EmbedModel(ctx context.Context, id string) (string, error) {
	var m string
	err := s.db.QueryRowContext(ctx, `SELECT embed_model FROM knowledge_documents WHERE id = $1`, id).Scan(&m)
	return m, translate(err)
}
