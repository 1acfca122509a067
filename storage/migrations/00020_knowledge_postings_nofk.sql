-- +goose Up
-- knowledge_postings.document_id loses its foreign key (docs/decisions.md,
-- "Knowledge ingestion on PostgreSQL"). Checking it cost PostgreSQL a
-- primary-key probe of knowledge_documents for each of the ~20,000 cells
-- a megabyte of text writes: two fifths of the server's ingestion time.
-- The store deletes postings itself wherever their document goes: with its
-- chunks (document delete, re-ingestion, failed ingestion) and, before
-- the org row, on organization delete. SQLite cannot drop a constraint,
-- so there the table is rebuilt without it (same columns, same indexes).
{{POSTINGS_FK_DROP}}

-- +goose Down
-- Postings whose document is gone (there should be none) would break the
-- restored constraint: they go first.
DELETE FROM knowledge_postings WHERE document_id NOT IN (SELECT id FROM knowledge_documents);
{{POSTINGS_FK_RESTORE}}
