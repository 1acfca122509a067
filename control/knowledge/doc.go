// Package knowledge serves an organization's knowledge store
// (/v1/knowledge and the /v1/knowledge-bases adapters, spec/api.md 2.16,
// 4.11): documents uploaded as files (.txt, .md, .csv, .pdf, .docx) or
// sent as text, the chunks search returns, and knowledge bases, which are
// named groupings over the flat document store.
//
// An upload is validated whole before anything is kept: every file is
// read as a stream through its type's limit into a spool file in the blob
// directory, its content checked against its extension (UTF-8 text, a PDF
// header, a Word zip that is not a zip bomb), and only when all pass are
// the files moved into place (knowledge/<org>/<uuid>.<ext>; file names are
// never paths) and the documents created, pending, in one transaction.
// The request answers at once.
//
// Ingestion is durable background work. The document row is the job: a
// Worker claims it with a lease in the database (one runner across
// replicas), extracts the text, chunks it on structure before size
// (headings, pages, paragraphs, CSV rows; a chunk carries its headings or
// the CSV header as context) and stores the chunks, which indexes them for
// BM25 search (storage.KnowledgeStore.Search). A worker renews its lease
// while it works; if it dies, the lease lapses and another worker takes
// the job over. Unreadable files (encrypted or damaged PDFs, no text)
// fail the document with a user-facing error; other failures retry with
// backoff. Changing a document (PATCH, replace, retry) re-queues it, and a
// result computed for an older version is discarded.
//
// Google Drive files (import-drive) are fetched through ai/drive (files.get,
// then files.export for Docs and Sheets, alt=media for other files) and
// spooled and checked exactly as uploaded files are.
//
// With an embeddings provider (Config.Embed), ingestion also embeds every
// chunk and stores the vectors with the chunks; a provider failure retries
// the job like any transient failure. Search then fuses BM25 with an exact
// in-process vector search (one index per org, loaded lazily and brought
// up to date from the org's vector version before each search) by
// reciprocal rank; without one it is BM25 alone, and says so (mode).
//
// Reads are open to every member; writes need admin+ or a secret API key.
package knowledge
