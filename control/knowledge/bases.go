package knowledge

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Knowledge bases are named groupings over the flat document store; the
// base-scoped routes are adapters onto the document routes.

// baseInput creates or changes a base.
type baseInput struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
}

func (in baseInput) check(create bool) (name, desc *string, err error) {
	f := api.Fields{}
	if in.Name != nil || create {
		n := f.Name("name", in.Name, create, 255)
		name = &n
	}
	if in.Description != nil {
		if msg := api.TooLong(*in.Description, 2000); msg != "" {
			f.Add("description", msg)
		}
		desc = in.Description
	}
	return name, desc, f.Err()
}

func (s *Service) listBases(c fiber.Ctx, p *storage.Principal) error {
	bs, err := s.store.Bases(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]baseView, len(bs))
	for i, b := range bs {
		out[i] = viewBase(b)
	}
	return c.JSON(out)
}

func (s *Service) createBase(c fiber.Ctx, p *storage.Principal) error {
	if err := canWrite(p); err != nil {
		return err
	}
	var in baseInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	name, desc, err := in.check(true)
	if err != nil {
		return err
	}
	d := ""
	if desc != nil {
		d = *desc
	}
	b, err := s.store.CreateBase(c.Context(), p.OrgID, *name, d)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.Status(http.StatusCreated).JSON(viewBase(b))
}

func (s *Service) getBase(c fiber.Ctx, p *storage.Principal) error {
	b, err := s.store.Base(c.Context(), p.OrgID, c.Params("knowledge_base_id"))
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewBase(b))
}

func (s *Service) patchBase(c fiber.Ctx, p *storage.Principal) error {
	if err := canWrite(p); err != nil {
		return err
	}
	var in baseInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	name, desc, err := in.check(false)
	if err != nil {
		return err
	}
	b, err := s.store.UpdateBase(c.Context(), p.OrgID, c.Params("knowledge_base_id"), name, desc)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewBase(b))
}

func (s *Service) deleteBase(c fiber.Ctx, p *storage.Principal) error {
	if err := canWrite(p); err != nil {
		return err
	}
	if err := s.store.DeleteBase(c.Context(), p.OrgID, c.Params("knowledge_base_id")); err != nil {
		return api.StoreErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Service) listBaseDocuments(c fiber.Ctx, p *storage.Principal) error {
	b, err := s.store.Base(c.Context(), p.OrgID, c.Params("knowledge_base_id"))
	if err != nil {
		return api.StoreErr(err)
	}
	f, err := s.filter(c)
	if err != nil {
		return err
	}
	f.BaseID = b.ID
	return s.writeList(c, p, f)
}

// attachInput attaches existing documents to a base.
type attachInput struct {
	DocumentID  *string  `json:"document_id"`
	DocumentIDs []string `json:"document_ids"`
}

// addBaseDocuments attaches existing documents ({document_ids} or
// {document_id}) or, for an upload (multipart, or JSON {name, content}),
// creates documents and attaches them. It answers as an upload does.
func (s *Service) addBaseDocuments(c fiber.Ctx, p *storage.Principal) error {
	if err := canWrite(p); err != nil {
		return err
	}
	b, err := s.store.Base(c.Context(), p.OrgID, c.Params("knowledge_base_id"))
	if err != nil {
		return api.StoreErr(err)
	}
	var docs []storage.KnowledgeDocument
	warnings := []warningView{}
	if multipartBoundary(string(c.Request().Header.ContentType())) == "" {
		if err := s.readJSON(c, &struct{}{}); err != nil {
			return err
		}
		var in attachInput
		if err := json.NewDecoder(bytes.NewReader(c.Body())).Decode(&in); err == nil && (in.DocumentID != nil || in.DocumentIDs != nil) {
			ids := in.DocumentIDs
			if in.DocumentID != nil {
				ids = append(ids, *in.DocumentID)
			}
			if len(ids) == 0 || len(ids) > 100 {
				return api.FieldErr("document_ids", "Give from 1 to 100 document ids.")
			}
			for _, id := range ids {
				d, err := s.store.Document(c.Context(), p.OrgID, id)
				if err != nil {
					if api.StoreErr(err) == api.ErrNotFound {
						return api.FieldErr("document_ids", "No document "+id+".")
					}
					return err
				}
				docs = append(docs, d)
			}
		}
	}
	status := http.StatusOK
	if docs == nil {
		if docs, warnings, err = s.upload(c, p); err != nil {
			return err
		}
		status = http.StatusCreated
	}
	for _, d := range docs {
		if err := s.store.AttachDocument(c.Context(), p.OrgID, b.ID, d.ID); err != nil {
			return api.StoreErr(err)
		}
	}
	out := make([]detailView, len(docs))
	for i, d := range docs {
		out[i] = s.viewDetail(d)
	}
	return c.Status(status).JSON(fiber.Map{"documents": out, "warnings": warnings})
}

// inBase runs h for a document only when it belongs to the path's base.
func (s *Service) inBase(h api.Handler) api.Handler {
	return func(c fiber.Ctx, p *storage.Principal) error {
		ok, err := s.store.InBase(c.Context(), p.OrgID, c.Params("knowledge_base_id"), c.Params("document_id"))
		if err != nil {
			return err
		}
		if !ok {
			return api.ErrNotFound
		}
		return h(c, p)
	}
}

func (s *Service) detachDocument(c fiber.Ctx, p *storage.Principal) error {
	if err := canWrite(p); err != nil {
		return err
	}
	if err := s.store.DetachDocument(c.Context(), p.OrgID, c.Params("knowledge_base_id"), c.Params("document_id")); err != nil {
		return api.StoreErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Service) searchBase(c fiber.Ctx, p *storage.Principal) error {
	b, err := s.store.Base(c.Context(), p.OrgID, c.Params("knowledge_base_id"))
	if err != nil {
		return api.StoreErr(err)
	}
	return s.runSearch(c, p, b.ID)
}
