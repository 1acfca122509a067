package knowledge

import (
	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// documentView is a document in lists (spec/api.md section 2.16).
type documentView struct {
	ID                  string `json:"id"`
	Name                string `json:"name"`
	SourceType          string `json:"source_type"`
	OriginalFilename    string `json:"original_filename"`
	MimeType            string `json:"mime_type"`
	ByteCount           int64  `json:"byte_count"`
	EstimatedChunkCount int64  `json:"estimated_chunk_count"`
	Status              string `json:"status"`
	Error               string `json:"error"`
	ChunkCount          int64  `json:"chunk_count"`
	CreatedAt           string `json:"created_at"`
	UpdatedAt           string `json:"updated_at"`
}

// userView is the uploader of a document.
type userView struct {
	ID    int64  `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

// detailView is a document with its content and provenance.
type detailView struct {
	documentView
	Content           string    `json:"content"`
	UploadedBy        *userView `json:"uploaded_by"`
	SourceOrigin      string    `json:"source_origin"`
	ReplacedAt        *string   `json:"replaced_at"`
	HasOriginal       bool      `json:"has_original"`
	OriginalSizeBytes int64     `json:"original_size_bytes"`
	OriginalMimeType  string    `json:"original_mime_type"`
}

// estimateChunks guesses a document's chunk count before ingestion from
// its size: about 6 bytes a word for text; PDF and Word files carry about
// a quarter of their bytes as text. Once ingested it is the real count.
func (s *Service) estimateChunks(d storage.KnowledgeDocument) int64 {
	if d.Status == storage.DocReady {
		return d.ChunkCount
	}
	textBytes := d.ByteCount
	if d.MimeType == mimePDF || d.MimeType == mimeDOCX {
		textBytes /= 4
	}
	per := int64(s.cfg.ChunkWords-s.cfg.ChunkOverlap) * 6
	return max(1, (textBytes+per-1)/per)
}

func (s *Service) viewDocument(d storage.KnowledgeDocument) documentView {
	return documentView{ID: d.ID, Name: d.Name, SourceType: d.SourceType, OriginalFilename: d.OriginalFilename, MimeType: d.MimeType,
		ByteCount: d.ByteCount, EstimatedChunkCount: s.estimateChunks(d), Status: d.Status, Error: d.Error, ChunkCount: d.ChunkCount,
		CreatedAt: api.TS(d.CreatedAt), UpdatedAt: api.TS(d.UpdatedAt)}
}

func (s *Service) viewDetail(d storage.KnowledgeDocument) detailView {
	v := detailView{documentView: s.viewDocument(d), Content: d.Content, SourceOrigin: d.SourceOrigin, ReplacedAt: api.TSPtr(d.ReplacedAt),
		HasOriginal: d.OriginalKey != "", OriginalSizeBytes: d.OriginalSizeBytes, OriginalMimeType: d.OriginalMimeType}
	if u := d.UploadedBy; u != nil {
		v.UploadedBy = &userView{ID: u.ID, Name: u.Name, Email: u.Email}
	}
	return v
}

// warningView flags an upload whose content is already in the store.
type warningView struct {
	DocumentID           string   `json:"document_id"`
	DuplicateDocumentIDs []string `json:"duplicate_document_ids"`
	Message              string   `json:"message"`
}

// baseView is a knowledge base.
type baseView struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Description   string `json:"description"`
	DocumentCount int64  `json:"document_count"`
	CreatedAt     string `json:"created_at"`
	UpdatedAt     string `json:"updated_at"`
}

func viewBase(b storage.KnowledgeBase) baseView {
	return baseView{ID: b.ID, Name: b.Name, Description: b.Description, DocumentCount: b.DocumentCount, CreatedAt: api.TS(b.CreatedAt), UpdatedAt: api.TS(b.UpdatedAt)}
}

// hitView is one search result.
type hitView struct {
	DocumentID   string  `json:"document_id"`
	DocumentName string  `json:"document_name"`
	Position     int     `json:"position"`
	Context      string  `json:"context"`
	Text         string  `json:"text"`
	Score        float64 `json:"score"`
}
