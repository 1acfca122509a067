package knowledge

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

var statuses = []string{storage.DocPending, storage.DocProcessing, storage.DocReady, storage.DocFailed}

func (s *Service) filter(c fiber.Ctx) (storage.DocumentFilter, error) {
	f := storage.DocumentFilter{Q: strings.TrimSpace(c.Query("q")), Status: c.Query("status")}
	if f.Status != "" {
		if msg := api.OneOf(f.Status, statuses); msg != "" {
			return f, api.FieldErr("status", msg)
		}
	}
	return f, nil
}

func (s *Service) listDocuments(c fiber.Ctx, p *storage.Principal) error {
	f, err := s.filter(c)
	if err != nil {
		return err
	}
	return s.writeList(c, p, f)
}

func (s *Service) writeList(c fiber.Ctx, p *storage.Principal, f storage.DocumentFilter) error {
	docs, err := s.store.Documents(c.Context(), p.OrgID, f)
	if err != nil {
		return err
	}
	out := make([]documentView, len(docs))
	for i, d := range docs {
		out[i] = s.viewDocument(d)
	}
	return c.JSON(out)
}

// bodyReader is the request body as a stream: the server streams large
// bodies (StreamBody routes), so an upload is never buffered whole.
func bodyReader(c fiber.Ctx) io.Reader {
	if r := c.Request().BodyStream(); r != nil {
		return r
	}
	return bytes.NewReader(c.Body())
}

// readFiles reads and checks every file of a multipart request; one bad
// file fails the request with a 400 naming it, after all were checked,
// and nothing is kept. The caller owns the returned uploads' spooled files.
func (s *Service) readFiles(c fiber.Ctx, boundary string) (*multipartForm, error) {
	dir, err := s.blobs.spoolDir()
	if err != nil {
		return nil, err
	}
	f := api.Fields{}
	form, err := readMultipart(bodyReader(c), boundary, dir, s.cfg.Limits, f)
	if err != nil {
		return nil, err
	}
	for _, u := range form.files {
		check(u, s.cfg.Limits, f)
	}
	if err := f.Err(); err != nil {
		discard(form.files)
		return nil, err
	}
	return form, nil
}

// textInput is a JSON text document.
type textInput struct {
	Name    *string `json:"name"`
	Content *string `json:"content"`
}

// readJSON decodes a JSON body of at most the text limit plus room for
// the rest of the object.
func (s *Service) readJSON(c fiber.Ctx, dst any) error {
	if cl := c.Request().Header.ContentLength(); cl > int(s.cfg.Limits.Text)+64<<10 {
		return api.FieldErr("content", fmt.Sprintf("Ensure this field has no more than %s.", sizeText(s.cfg.Limits.Text)))
	}
	if c.Request().BodyStream() != nil {
		b, err := io.ReadAll(io.LimitReader(c.Request().BodyStream(), s.cfg.Limits.Text+64<<10+1))
		if err != nil {
			return api.Err(http.StatusBadRequest, "The request body could not be read.")
		}
		if int64(len(b)) > s.cfg.Limits.Text+64<<10 {
			return api.FieldErr("content", fmt.Sprintf("Ensure this field has no more than %s.", sizeText(s.cfg.Limits.Text)))
		}
		c.Request().SetBodyRaw(b)
	}
	return api.Decode(c, dst)
}

// upload reads an upload request (multipart files or JSON text), stores
// the documents with their originals and queues them for ingestion.
func (s *Service) upload(c fiber.Ctx, p *storage.Principal) ([]storage.KnowledgeDocument, []warningView, error) {
	var docs []storage.KnowledgeDocument
	var kept []string
	if b := multipartBoundary(string(c.Request().Header.ContentType())); b != "" {
		form, err := s.readFiles(c, b)
		if err != nil {
			return nil, nil, err
		}
		defer discard(form.files)
		if len(form.files) == 0 {
			return nil, nil, api.FieldErr("files", "Upload at least one file, as files[] parts or one file part.")
		}
		var name string
		if form.name != nil {
			if len(form.files) != 1 {
				return nil, nil, api.FieldErr("name", "A name can be given only with a single file.")
			}
			f := api.Fields{}
			name = f.Name("name", form.name, false, 255)
			if err := f.Err(); err != nil {
				return nil, nil, err
			}
		}
		for _, u := range form.files {
			d, err := s.keep(p.OrgID, u)
			if err != nil {
				s.drop(kept)
				return nil, nil, err
			}
			if name != "" {
				d.Name = name
			}
			kept = append(kept, d.OriginalKey)
			docs = append(docs, d)
		}
	} else {
		var in textInput
		if err := s.readJSON(c, &in); err != nil {
			return nil, nil, err
		}
		f := api.Fields{}
		name, content := parseJSONUpload(in.Name, in.Content, s.cfg.Limits, f)
		if err := f.Err(); err != nil {
			return nil, nil, err
		}
		docs = append(docs, storage.KnowledgeDocument{Name: name, SourceType: "text", MimeType: mimeText, ByteCount: int64(len(content)),
			Content: content, TextSHA: storage.TextHash(content)})
	}
	return s.create(c.Context(), p, docs, kept)
}

// create stores checked documents (all or none; their kept originals are
// removed if that fails), wakes the worker and returns them with their
// duplicate-content warnings.
func (s *Service) create(ctx context.Context, p *storage.Principal, docs []storage.KnowledgeDocument, kept []string) ([]storage.KnowledgeDocument, []warningView, error) {
	created, err := s.store.CreateDocuments(ctx, p.OrgID, p.UserID, docs)
	if err != nil {
		s.drop(kept)
		return nil, nil, api.StoreErr(err)
	}
	s.worker.Wake()
	warnings := []warningView{}
	for _, d := range created {
		w, err := s.duplicates(ctx, p.OrgID, d)
		if err != nil {
			return nil, nil, err
		}
		if w != nil {
			warnings = append(warnings, *w)
		}
	}
	return created, warnings, nil
}

// keep moves a checked upload into the blob store and describes its
// document.
func (s *Service) keep(orgID int64, u *upload) (storage.KnowledgeDocument, error) {
	key, err := s.blobs.keep(u.tmp, orgID, u.mime)
	if err != nil {
		return storage.KnowledgeDocument{}, err
	}
	u.tmp = ""
	return storage.KnowledgeDocument{Name: u.filename, SourceType: "file", OriginalFilename: u.filename, MimeType: u.mime, ByteCount: u.size,
		BytesSHA: u.sha, TextSHA: u.textSHA, OriginalKey: key, OriginalSizeBytes: u.size, OriginalMimeType: u.mime}, nil
}

func (s *Service) drop(keys []string) {
	for _, k := range keys {
		s.blobs.remove(k)
	}
}

// duplicates is the warning for d when other documents have its bytes or
// its text, else nil.
func (s *Service) duplicates(ctx context.Context, orgID int64, d storage.KnowledgeDocument) (*warningView, error) {
	ids, err := s.store.DuplicateDocuments(ctx, orgID, d.BytesSHA, d.TextSHA, d.ID)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	msg := fmt.Sprintf("%q has the same content as %d other document(s); it was stored anyway.", d.Name, len(ids))
	return &warningView{DocumentID: d.ID, DuplicateDocumentIDs: ids, Message: msg}, nil
}

func (s *Service) createDocuments(c fiber.Ctx, p *storage.Principal) error {
	if err := canWrite(p); err != nil {
		return err
	}
	docs, warnings, err := s.upload(c, p)
	if err != nil {
		return err
	}
	out := make([]detailView, len(docs))
	for i, d := range docs {
		out[i] = s.viewDetail(d)
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"documents": out, "warnings": warnings})
}

func (s *Service) getDocument(c fiber.Ctx, p *storage.Principal) error {
	d, err := s.store.Document(c.Context(), p.OrgID, c.Params("document_id"))
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(s.viewDetail(d))
}

// patchInput is a JSON PATCH.
type patchInput struct {
	Name    *string `json:"name"`
	Content *string `json:"content"`
}

func (s *Service) patchDocument(c fiber.Ctx, p *storage.Principal) error {
	if err := canWrite(p); err != nil {
		return err
	}
	id := c.Params("document_id")
	cur, err := s.store.Document(c.Context(), p.OrgID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	if b := multipartBoundary(string(c.Request().Header.ContentType())); b != "" {
		d, _, err := s.replaceFile(c, p, cur, b)
		if err != nil {
			return err
		}
		return c.JSON(s.viewDetail(d))
	}
	var in patchInput
	if err := s.readJSON(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	var ch storage.DocumentChange
	if in.Name != nil {
		n := f.Name("name", in.Name, false, 255)
		ch.Name = &n
	}
	if in.Content != nil {
		switch {
		case cur.SourceType != "text":
			f.Add("content", "This document was uploaded as a file; upload a new file with replace instead.")
		case strings.TrimSpace(*in.Content) == "":
			f.Add("content", "This field may not be blank.")
		case int64(len(*in.Content)) > s.cfg.Limits.Text:
			f.Add("content", fmt.Sprintf("Ensure this field has no more than %s.", sizeText(s.cfg.Limits.Text)))
		}
		ch.Content = in.Content
	}
	if err := f.Err(); err != nil {
		return err
	}
	if ch.Name == nil && ch.Content == nil {
		return c.JSON(s.viewDetail(cur)) // nothing changed, nothing re-queued
	}
	d, _, err := s.store.UpdateDocument(c.Context(), p.OrgID, id, ch)
	if err != nil {
		return api.StoreErr(err)
	}
	s.worker.Wake()
	return c.JSON(s.viewDetail(d))
}

// replaceFile swaps a document's file for the request's single file
// (replace, or PATCH with a file), sets replaced_at and re-queues it. The warnings say when
// the new bytes equal the old ones or another document's.
func (s *Service) replaceFile(c fiber.Ctx, p *storage.Principal, cur storage.KnowledgeDocument, boundary string) (storage.KnowledgeDocument, []warningView, error) {
	form, err := s.readFiles(c, boundary)
	if err != nil {
		return storage.KnowledgeDocument{}, nil, err
	}
	defer discard(form.files)
	if len(form.files) != 1 {
		return storage.KnowledgeDocument{}, nil, api.FieldErr("file", "Upload exactly one file as the file part.")
	}
	ch := storage.DocumentChange{Replaced: true}
	if form.name != nil {
		f := api.Fields{}
		n := f.Name("name", form.name, false, 255)
		if err := f.Err(); err != nil {
			return storage.KnowledgeDocument{}, nil, err
		}
		ch.Name = &n
	}
	u := form.files[0]
	same := u.sha == cur.BytesSHA
	nd, err := s.keep(p.OrgID, u)
	if err != nil {
		return storage.KnowledgeDocument{}, nil, err
	}
	ch.File = &nd
	d, old, err := s.store.UpdateDocument(c.Context(), p.OrgID, cur.ID, ch)
	if err != nil {
		s.blobs.remove(nd.OriginalKey)
		return storage.KnowledgeDocument{}, nil, api.StoreErr(err)
	}
	if old != "" {
		s.blobs.remove(old)
	}
	s.worker.Wake()
	warnings := []warningView{}
	if same {
		warnings = append(warnings, warningView{DocumentID: d.ID, DuplicateDocumentIDs: []string{d.ID},
			Message: "The new file has the same bytes as the file it replaces; it was re-ingested anyway."})
	}
	if w, err := s.duplicates(c.Context(), p.OrgID, d); err != nil {
		return storage.KnowledgeDocument{}, nil, err
	} else if w != nil {
		warnings = append(warnings, *w)
	}
	return d, warnings, nil
}

func (s *Service) replaceDocument(c fiber.Ctx, p *storage.Principal) error {
	if err := canWrite(p); err != nil {
		return err
	}
	cur, err := s.store.Document(c.Context(), p.OrgID, c.Params("document_id"))
	if err != nil {
		return api.StoreErr(err)
	}
	b := multipartBoundary(string(c.Request().Header.ContentType()))
	if b == "" {
		return api.FieldErr("file", "Send the new file as multipart/form-data with a file part.")
	}
	d, warnings, err := s.replaceFile(c, p, cur, b)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"document": s.viewDetail(d), "warnings": warnings})
}

func (s *Service) deleteDocument(c fiber.Ctx, p *storage.Principal) error {
	if err := canWrite(p); err != nil {
		return err
	}
	key, err := s.store.DeleteDocument(c.Context(), p.OrgID, c.Params("document_id"))
	if err != nil {
		return api.StoreErr(err)
	}
	if key != "" {
		s.blobs.remove(key)
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Service) retryDocument(c fiber.Ctx, p *storage.Principal) error {
	if err := canWrite(p); err != nil {
		return err
	}
	d, err := s.store.RetryDocument(c.Context(), p.OrgID, c.Params("document_id"))
	if errors.Is(err, storage.ErrWrongState) {
		return api.Err(http.StatusBadRequest, "Only a failed document can be retried.")
	}
	if err != nil {
		return api.StoreErr(err)
	}
	s.worker.Wake()
	return c.JSON(s.viewDetail(d))
}

// Signed original URLs: GET /v1/knowledge/originals/{id}?org=O&expires=E&sig=S
// where S is the lowercase hex HMAC-SHA256, keyed with the server's
// signing key, of "knowledge-original\n<org>\n<document id>\n<E>" (as
// recordings are signed, control/recording.go).
func (s *Service) sign(orgID int64, id string, exp int64) string {
	m := hmac.New(sha256.New, s.cfg.SigningKey)
	m.Write([]byte("knowledge-original\n" + strconv.FormatInt(orgID, 10) + "\n" + id + "\n" + strconv.FormatInt(exp, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

var errNoOriginal = api.Err(http.StatusNotFound, "This document was created from text; it has no original file.")

func (s *Service) original(c fiber.Ctx, p *storage.Principal) error {
	d, err := s.store.Document(c.Context(), p.OrgID, c.Params("document_id"))
	if err != nil {
		return api.StoreErr(err)
	}
	if d.OriginalKey == "" {
		return errNoOriginal
	}
	if c.Accepts("application/octet-stream", "application/json") == "application/json" {
		exp := time.Now().Add(s.cfg.OriginalURLTTL).Unix()
		q := url.Values{"org": {strconv.FormatInt(p.OrgID, 10)}, "expires": {strconv.FormatInt(exp, 10)}, "sig": {s.sign(p.OrgID, d.ID, exp)}}
		if c.Query("download") == "1" {
			q.Set("download", "1")
		}
		return c.JSON(fiber.Map{"url": s.cfg.PublicURL + "/v1/knowledge/originals/" + d.ID + "?" + q.Encode(), "expires_in": int64(s.cfg.OriginalURLTTL / time.Second)})
	}
	return s.sendOriginal(c, d)
}

var errBadSignature = api.Err(http.StatusUnauthorized, "This file link is invalid or has expired; request a new one.")

// signedOriginal serves an original to whoever holds a valid signed URL.
func (s *Service) signedOriginal(c fiber.Ctx) error {
	id := c.Params("document_id")
	org, err1 := strconv.ParseInt(c.Query("org"), 10, 64)
	exp, err2 := strconv.ParseInt(c.Query("expires"), 10, 64)
	if err1 != nil || err2 != nil || !hmac.Equal([]byte(s.sign(org, id, exp)), []byte(c.Query("sig"))) || time.Now().Unix() > exp {
		return errBadSignature
	}
	d, err := s.store.Document(c.Context(), org, id)
	if err != nil {
		return api.StoreErr(err)
	}
	if d.OriginalKey == "" {
		return errNoOriginal
	}
	return s.sendOriginal(c, d)
}

func (s *Service) sendOriginal(c fiber.Ctx, d storage.KnowledgeDocument) error {
	f, err := s.blobs.open(d.OriginalKey)
	if err != nil {
		return api.Err(http.StatusNotFound, "The original file is not available.")
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	disp := "inline"
	if c.Query("download") == "1" {
		disp = "attachment"
	}
	c.Set(fiber.HeaderContentType, d.OriginalMimeType)
	c.Set(fiber.HeaderContentDisposition, disposition(disp, d.OriginalFilename))
	c.Set(fiber.HeaderCacheControl, "private, no-store")
	c.Set("X-Content-Type-Options", "nosniff")
	return c.SendStream(f, int(st.Size())) // fasthttp closes f when sent
}

// disposition is a Content-Disposition header carrying any file name
// safely: an ASCII fallback plus the UTF-8 name (RFC 6266 section 4.3).
func disposition(kind, name string) string {
	ascii := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '_'
		}
		return r
	}, name)
	return kind + `; filename="` + ascii + `"; filename*=UTF-8''` + url.PathEscape(name)
}

// searchInput is a search request.
type searchInput struct {
	Query            *string  `json:"query"`
	Limit            *int     `json:"limit"`
	KnowledgeBaseIDs []string `json:"knowledge_base_ids"`
	DocumentIDs      []string `json:"document_ids"`
}

func (s *Service) search(c fiber.Ctx, p *storage.Principal) error {
	return s.runSearch(c, p, "")
}

func (s *Service) runSearch(c fiber.Ctx, p *storage.Principal, baseID string) error {
	var in searchInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	q := f.Name("query", in.Query, true, 1000)
	limit := 5
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > 50 {
			f.Add("limit", "Must be an integer from 1 to 50.")
		}
		limit = *in.Limit
	}
	if len(in.KnowledgeBaseIDs) > 100 {
		f.Add("knowledge_base_ids", "At most 100 ids.")
	}
	if len(in.DocumentIDs) > 100 {
		f.Add("document_ids", "At most 100 ids.")
	}
	if err := f.Err(); err != nil {
		return err
	}
	kq := storage.KnowledgeQuery{Text: q, Limit: limit, BaseIDs: in.KnowledgeBaseIDs, DocumentIDs: in.DocumentIDs}
	if baseID != "" {
		kq.BaseIDs = []string{baseID}
	}
	hits, mode, err := s.Search(c.Context(), p.OrgID, kq)
	if err != nil {
		return err
	}
	out := make([]hitView, len(hits))
	for i, h := range hits {
		out[i] = hitView{DocumentID: h.DocumentID, DocumentName: h.DocumentName, Position: h.Position, Context: h.Context, Text: h.Text, Score: h.Score}
	}
	return c.JSON(fiber.Map{"mode": mode, "query": q, "results": out})
}
