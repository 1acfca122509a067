-- +goose Up
-- Knowledge (docs/decisions.md, "Knowledge"): a flat store of documents
-- per org, their chunks (what search returns) and knowledge bases, which
-- are named groupings over the flat store. A document row is also its
-- ingestion job: status, generation, attempts, next_attempt_at and the
-- lease (lease_owner, lease_until) let one worker across all replicas
-- claim it, and let another take it over when the lease runs out.
CREATE TABLE knowledge_documents (
    id TEXT PRIMARY KEY,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    source_type TEXT NOT NULL,
    source_origin TEXT NOT NULL DEFAULT 'upload',
    original_filename TEXT NOT NULL DEFAULT '',
    mime_type TEXT NOT NULL,
    byte_count BIGINT NOT NULL DEFAULT 0,
    content TEXT NOT NULL DEFAULT '',
    bytes_sha TEXT NOT NULL DEFAULT '',
    text_sha TEXT NOT NULL DEFAULT '',
    original_key TEXT NOT NULL DEFAULT '',
    original_size_bytes BIGINT NOT NULL DEFAULT 0,
    original_mime_type TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '',
    chunk_count BIGINT NOT NULL DEFAULT 0,
    uploaded_by BIGINT REFERENCES users (id) ON DELETE SET NULL,
    generation BIGINT NOT NULL DEFAULT 1,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL DEFAULT 0,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until BIGINT NOT NULL DEFAULT 0,
    replaced_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX knowledge_documents_org ON knowledge_documents (org_id, created_at);
CREATE INDEX knowledge_documents_queue ON knowledge_documents (status, next_attempt_at);
CREATE INDEX knowledge_documents_bytes ON knowledge_documents (org_id, bytes_sha);
CREATE INDEX knowledge_documents_text ON knowledge_documents (org_id, text_sha);

CREATE TABLE knowledge_bases (
    id TEXT PRIMARY KEY,
    org_id BIGINT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX knowledge_bases_org ON knowledge_bases (org_id, created_at);

CREATE TABLE knowledge_base_documents (
    base_id TEXT NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    document_id TEXT NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (base_id, document_id)
);
CREATE INDEX knowledge_base_documents_doc ON knowledge_base_documents (document_id);

-- A chunk's searchable text is context (the headings above it, or a CSV
-- header row) plus text. SQLite indexes it in an FTS5 table (filled by the
-- store, emptied by a trigger); PostgreSQL in a generated tsvector with a
-- GIN index.
CREATE TABLE knowledge_chunks (
    id {{ID}},
    org_id BIGINT NOT NULL,
    document_id TEXT NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    context TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL{{CHUNK_TSV}}
);
CREATE INDEX knowledge_chunks_doc ON knowledge_chunks (document_id, position);
{{CHUNK_SEARCH_UP}}

-- +goose Down
{{CHUNK_SEARCH_DOWN}}
DROP TABLE knowledge_chunks;
DROP TABLE knowledge_base_documents;
DROP TABLE knowledge_bases;
DROP TABLE knowledge_documents;
