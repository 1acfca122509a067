package knowledge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/voiced/voiced/ai/drive"
	"github.com/voiced/voiced/ai/embed"
	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Config holds the knowledge service's settings. Zero values mean defaults.
type Config struct {
	// BlobDir is the server's blob directory (the one recordings use);
	// originals go under its knowledge/ folder. Required.
	BlobDir string
	// PublicURL is the base of signed original-file URLs.
	PublicURL string
	// SigningKey keys signed URLs (HMAC-SHA256); the server's key.
	SigningKey []byte
	// OriginalURLTTL is how long a signed original-file URL stays valid
	// (its expires_in). Default 5 minutes.
	OriginalURLTTL time.Duration
	// Limits bound uploads.
	Limits Limits
	// ChunkWords and ChunkOverlap size chunks in words. Defaults 230 and
	// 30 (about 300 and 40 tokens).
	ChunkWords, ChunkOverlap int
	// Poll is how often an idle worker looks for work (uploads on this
	// replica wake it at once). Default 1 s.
	Poll time.Duration
	// Lease is how long a claimed job is the worker's; a worker renews it
	// while working, so it lapses only when the worker dies. Default 1 min.
	Lease time.Duration
	// MaxAttempts bounds transient-failure retries before the document
	// fails. Default 5. Backoff is the first retry's wait, doubled per
	// attempt. Default 5 s.
	MaxAttempts int
	Backoff     time.Duration
	// DriveBaseURL is the Google Drive API root of import-drive; default
	// https://www.googleapis.com/drive/v3 (tests point it at a fake).
	DriveBaseURL string
	// Embed configures the optional embeddings provider (semantic search);
	// an empty BaseURL means none.
	Embed EmbedConfig
}

func (c Config) withDefaults() Config {
	c.Limits = c.Limits.withDefaults()
	if c.OriginalURLTTL == 0 {
		c.OriginalURLTTL = 5 * time.Minute
	}
	if c.ChunkWords == 0 {
		c.ChunkWords = 230
	}
	if c.ChunkOverlap == 0 {
		c.ChunkOverlap = 30
	}
	if c.Poll == 0 {
		c.Poll = time.Second
	}
	if c.Lease == 0 {
		c.Lease = time.Minute
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if c.Backoff == 0 {
		c.Backoff = 5 * time.Second
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	return c
}

// DocumentStore is what the document routes need.
type DocumentStore interface {
	CreateDocuments(ctx context.Context, orgID, uploadedBy int64, docs []storage.KnowledgeDocument) ([]storage.KnowledgeDocument, error)
	Document(ctx context.Context, orgID int64, id string) (storage.KnowledgeDocument, error)
	Documents(ctx context.Context, orgID int64, f storage.DocumentFilter) ([]storage.KnowledgeDocument, error)
	DuplicateDocuments(ctx context.Context, orgID int64, bytesSHA, textSHA, except string) ([]string, error)
	UpdateDocument(ctx context.Context, orgID int64, id string, ch storage.DocumentChange) (storage.KnowledgeDocument, string, error)
	RetryDocument(ctx context.Context, orgID int64, id string) (storage.KnowledgeDocument, error)
	DeleteDocument(ctx context.Context, orgID int64, id string) (string, error)
}

// BaseStore is what the knowledge-base routes need.
type BaseStore interface {
	CreateBase(ctx context.Context, orgID int64, name, description string) (storage.KnowledgeBase, error)
	Base(ctx context.Context, orgID int64, id string) (storage.KnowledgeBase, error)
	Bases(ctx context.Context, orgID int64) ([]storage.KnowledgeBase, error)
	UpdateBase(ctx context.Context, orgID int64, id string, name, description *string) (storage.KnowledgeBase, error)
	DeleteBase(ctx context.Context, orgID int64, id string) error
	AttachDocument(ctx context.Context, orgID int64, baseID, docID string) error
	DetachDocument(ctx context.Context, orgID int64, baseID, docID string) error
	InBase(ctx context.Context, orgID int64, baseID, docID string) (bool, error)
}

// Searcher ranks chunks.
type Searcher interface {
	Search(ctx context.Context, orgID int64, q storage.KnowledgeQuery) ([]storage.KnowledgeHit, error)
}

// Store is everything the service uses; *storage.KnowledgeStore is one.
type Store interface {
	DocumentStore
	BaseStore
	Searcher
	IngestStore
	VectorStore
	HybridStore
}

// Service serves /v1/knowledge and /v1/knowledge-bases and owns the
// ingestion worker.
type Service struct {
	cfg    Config
	log    *slog.Logger
	store  Store
	blobs  blobs
	worker *Worker
	// embedder is the embeddings provider (nil: none; search is BM25
	// alone), embedModel its model.
	embedder   embed.Embedder
	embedModel string
	// drive serves import-drive.
	drive driveImporter
	// hybrid fuses BM25 and vector search; nil without a provider.
	hybrid *hybridSearch
}

// New returns the service. Its worker does nothing until Run.
func New(cfg Config, log *slog.Logger, store Store) (*Service, error) {
	if store == nil {
		return nil, errors.New("knowledge: a store is required")
	}
	if cfg.BlobDir == "" {
		return nil, errors.New("knowledge: a blob directory is required")
	}
	if len(cfg.SigningKey) == 0 {
		return nil, errors.New("knowledge: a signing key is required")
	}
	cfg = cfg.withDefaults()
	if cfg.ChunkOverlap >= cfg.ChunkWords {
		return nil, fmt.Errorf("knowledge: chunk overlap %d must be below the chunk size %d", cfg.ChunkOverlap, cfg.ChunkWords)
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = log.With("component", "knowledge")
	e, model, err := newEmbedder(cfg.Embed)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, log: log, store: store, blobs: blobs{cfg.BlobDir}, worker: newWorker(cfg, log, store), embedder: e, embedModel: model}
	dc, err := drive.New(drive.Config{BaseURL: cfg.DriveBaseURL})
	if err != nil {
		return nil, fmt.Errorf("knowledge: %w", err)
	}
	s.drive = driveImporter{s: s, files: dc}
	if e != nil {
		s.worker.embedder, s.worker.embedModel = e, model
		s.hybrid = &hybridSearch{log: log, store: store, embedder: e, vectors: newVectorIndex(store, model)}
	}
	return s, nil
}

// Run runs the ingestion worker until ctx ends, after removing spool
// files a killed process left behind.
func (s *Service) Run(ctx context.Context) error {
	if n := s.blobs.sweepSpool(time.Hour, time.Now()); n > 0 {
		s.log.Info("removed abandoned upload spool files", "count", n)
	}
	if s.embedder != nil {
		// Documents ingested without vectors (before the provider was
		// configured, or with another model) are ingested again.
		n, err := s.store.RequeueUnembedded(ctx, s.embedModel)
		if err != nil {
			return fmt.Errorf("knowledge: queue documents to embed: %w", err)
		}
		if n > 0 {
			s.log.Info("queued documents for embedding", "count", n, "model", s.embedModel)
		}
	}
	return s.worker.Run(ctx)
}

// Worker is the service's ingestion worker.
func (s *Service) Worker() *Worker { return s.worker }

// canWrite says whether p may change knowledge: admins, owners and secret
// API keys (spec/api.md section 5).
func canWrite(p *storage.Principal) error {
	if p.KeyID != "" || p.Role.AtLeast(storage.RoleAdmin) {
		return nil
	}
	return api.ErrForbidden
}

// Routes returns the knowledge routes.
func (s *Service) Routes() []api.Route {
	r := func(method, path, summary, req, res string, status int, errs []int, h api.Handler) api.Route {
		return api.Route{Method: method, Path: path, Summary: summary, Tag: "knowledge", Auth: api.AuthOrg, ReqSchema: req, ResSchema: res, ResStatus: status, Errors: errs, Handler: h}
	}
	const docs, doc = "/v1/knowledge/documents", "/v1/knowledge/documents/:document_id"
	const kbs, kb = "/v1/knowledge-bases", "/v1/knowledge-bases/:knowledge_base_id"
	const kbDoc = kb + "/documents/:document_id"
	list := func(rt api.Route) api.Route { rt.ResList = true; return rt }
	stream := func(rt api.Route) api.Route { rt.StreamBody = true; return rt }
	return []api.Route{
		list(r("GET", docs, "List knowledge documents, newest first (query q, status)", "", "KnowledgeDocument", 0, []int{400}, s.listDocuments)),
		stream(r("POST", docs, "Upload documents: multipart files[] (or file + name) or JSON {name, content} (admin+)", "KnowledgeTextInput", "KnowledgeUploadResult", 201, []int{400, 403}, s.createDocuments)),
		r("POST", docs+"/import-drive", "Import Google Drive files: {access_token, files: [{id, name, mimeType}]}; Docs as text, Sheets as CSV (admin+)", "KnowledgeDriveImport", "KnowledgeUploadResult", 201, []int{400, 403, 502, 503}, s.drive.importDrive),
		r("GET", doc, "A knowledge document with its extracted content", "", "KnowledgeDocumentDetail", 0, []int{404}, s.getDocument),
		stream(r("PATCH", doc, "Rename, change text or upload a new file (multipart file); re-queues ingestion (admin+)", "KnowledgeDocumentPatch", "KnowledgeDocumentDetail", 0, []int{400, 403, 404}, s.patchDocument)),
		r("DELETE", doc, "Delete a document and its chunks (admin+)", "", "", 204, []int{403, 404}, s.deleteDocument),
		r("POST", doc+"/retry", "Re-queue a failed document (admin+)", "", "KnowledgeDocumentDetail", 0, []int{400, 403, 404}, s.retryDocument),
		r("GET", doc+"/original", "The uploaded file: a stream (download=1 for an attachment), or {url, expires_in} with Accept: application/json", "", "KnowledgeOriginalURL", 0, []int{404}, s.original),
		stream(r("POST", doc+"/replace", "Replace the file (multipart file); re-queues ingestion (admin+)", "KnowledgeFileInput", "KnowledgeReplaceResult", 0, []int{400, 403, 404}, s.replaceDocument)),
		{Method: "GET", Path: "/v1/knowledge/originals/:document_id", Summary: "An original file through a signed URL (expires, sig); no credential", Tag: "knowledge", Errors: []int{401, 404}, Raw: s.signedOriginal},
		r("POST", "/v1/knowledge/search", "Search the org's chunks: BM25, fused with vector search when an embeddings provider is configured", "KnowledgeSearchInput", "KnowledgeSearchResult", 0, []int{400}, s.search),

		list(r("GET", kbs, "List knowledge bases", "", "KnowledgeBase", 0, nil, s.listBases)),
		r("POST", kbs, "Create a knowledge base (admin+)", "KnowledgeBaseInput", "KnowledgeBase", 201, []int{400, 403}, s.createBase),
		r("GET", kb, "A knowledge base", "", "KnowledgeBase", 0, []int{404}, s.getBase),
		r("PATCH", kb, "Rename or describe a knowledge base (admin+)", "KnowledgeBaseInput", "KnowledgeBase", 0, []int{400, 403, 404}, s.patchBase),
		r("DELETE", kb, "Delete a knowledge base; its documents stay (admin+)", "", "", 204, []int{403, 404}, s.deleteBase),
		list(r("GET", kb+"/documents", "List a base's documents", "", "KnowledgeDocument", 0, []int{400, 404}, s.listBaseDocuments)),
		stream(r("POST", kb+"/documents", "Add documents to a base: {document_ids} attaches existing ones, an upload creates them (admin+)", "KnowledgeBaseAttach", "KnowledgeUploadResult", 201, []int{400, 403, 404}, s.addBaseDocuments)),
		stream(r("PATCH", kbDoc, "Change a document of a base (as PATCH /v1/knowledge/documents/{id}) (admin+)", "KnowledgeDocumentPatch", "KnowledgeDocumentDetail", 0, []int{400, 403, 404}, s.inBase(s.patchDocument))),
		r("DELETE", kbDoc, "Detach a document from a base; it stays in the store (admin+)", "", "", 204, []int{403, 404}, s.detachDocument),
		r("POST", kbDoc+"/retry", "Re-queue a failed document of a base (admin+)", "", "KnowledgeDocumentDetail", 0, []int{400, 403, 404}, s.inBase(s.retryDocument)),
		r("POST", kb+"/search", "Search within one knowledge base (as /v1/knowledge/search)", "KnowledgeSearchInput", "KnowledgeSearchResult", 0, []int{400, 404}, s.searchBase),
	}
}
