package control

import (
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/storage"
)

type keyInput struct {
	Name *string `json:"name"`
}

func (s *Server) listKeys(c fiber.Ctx, p *storage.Principal) error {
	keys, err := s.store.APIKeys(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]keyView, len(keys))
	for i, k := range keys {
		out[i] = viewKey(k)
	}
	return c.JSON(out)
}

func (s *Server) createKey(c fiber.Ctx, p *storage.Principal) error {
	name := "Default key"
	if len(c.Body()) > 0 {
		var in keyInput
		if err := decode(c, &in); err != nil {
			return err
		}
		if in.Name != nil {
			f := fields{}
			name = f.name("name", in.Name, false, 120)
			if err := f.err(); err != nil {
				return err
			}
		}
	}
	k, raw, err := s.store.CreateAPIKey(c.Context(), p.OrgID, p.UserID, name)
	if err != nil {
		return storeErr(err)
	}
	v := viewKey(k)
	v.Key = raw
	return c.Status(http.StatusCreated).JSON(v)
}

func (s *Server) revokeKey(c fiber.Ctx, p *storage.Principal) error {
	id := c.Params("key_id")
	if err := s.store.RevokeAPIKey(c.Context(), p.OrgID, id); err != nil {
		return storeErr(err)
	}
	s.auth.forgetKey(id)
	return c.SendStatus(http.StatusNoContent)
}
