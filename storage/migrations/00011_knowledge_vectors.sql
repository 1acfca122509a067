-- +goose Up
-- Semantic knowledge search (docs/decisions.md, "Knowledge embeddings"):
-- one vector per chunk, keyed like the chunk by (document_id, position),
-- as little-endian float32s (BLOB, BYTEA), written in the transaction that
-- writes the chunks. The server searches them in process; a document's
-- embed_model names the model its vectors came from ('' = none), so a
-- server configured with another model re-embeds it. embed_version is
-- the org's vector version when they were written, and
-- knowledge_vector_versions counts every change of an org's vectors so
-- each replica's in-process index notices changes made on the others
-- with one point read per search.
CREATE TABLE knowledge_vectors (
    document_id TEXT NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    org_id BIGINT NOT NULL,
    vector {{BYTES}} NOT NULL,
    PRIMARY KEY (document_id, position)
);
CREATE INDEX knowledge_vectors_org ON knowledge_vectors (org_id);
ALTER TABLE knowledge_documents ADD COLUMN embed_model TEXT NOT NULL DEFAULT '';
ALTER TABLE knowledge_documents ADD COLUMN embed_version BIGINT NOT NULL DEFAULT 0;
CREATE TABLE knowledge_vector_versions (
    org_id BIGINT PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    version BIGINT NOT NULL
);

-- +goose Down
DROP TABLE knowledge_vector_versions;
ALTER TABLE knowledge_documents DROP COLUMN embed_version;
ALTER TABLE knowledge_documents DROP COLUMN embed_model;
DROP TABLE knowledge_vectors;
