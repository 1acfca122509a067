-- +goose Up
-- Knowledge search moves from the databases' own full-text engines (FTS5,
-- tsvector) to one term index written by the store, identical on SQLite
-- and PostgreSQL (docs/decisions.md, "Knowledge", search). A row is a
-- cell: the postings of one stemmed term in one block of a document's
-- chunks, as a packed list of (chunk id, quantized BM25 term weight);
-- max_weight bounds them and n counts them, so a search ranks cells by
-- their best possible score and reads only the postings that can reach
-- its top results. Term '' cells count a block's chunks (n), the corpus
-- size BM25's idf needs.
{{KNOWLEDGE_FTS_DROP}}
CREATE TABLE knowledge_postings (
    id {{ID}},
    org_id BIGINT NOT NULL,
    document_id TEXT NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    term TEXT NOT NULL,
    block INTEGER NOT NULL,
    max_weight INTEGER NOT NULL,
    n INTEGER NOT NULL,
    postings {{BYTES}} NOT NULL
);
CREATE INDEX knowledge_postings_term ON knowledge_postings (org_id, term, document_id, block, max_weight, n);
CREATE INDEX knowledge_postings_doc ON knowledge_postings (document_id);
-- Chunks stored before this index have no postings: ingest every
-- document again (its old chunks stay searchable by nothing until then,
-- and are replaced when it is ready).
UPDATE knowledge_documents SET status = 'pending', error = '', generation = generation + 1, attempts = 0,
    next_attempt_at = 0, lease_owner = '', lease_until = 0
    WHERE status IN ('ready', 'processing');

-- +goose Down
DROP TABLE knowledge_postings;
{{KNOWLEDGE_FTS_RESTORE}}
