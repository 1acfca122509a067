package control

import (
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/storage"
)

type orgInput struct {
	Name *string `json:"name"`
}

// orgName decodes and validates the body of POST and PATCH /v1/orgs/.
func orgName(c fiber.Ctx) (string, error) {
	var in orgInput
	if err := decode(c, &in); err != nil {
		return "", err
	}
	f := fields{}
	name := f.name("name", in.Name, true, 120)
	return name, f.err()
}

func (s *Server) listOrgs(c fiber.Ctx, p *storage.Principal) error {
	ctx := c.Context()
	if p.KeyID != "" {
		// An API key is bound to one org.
		o, err := s.store.OrgForUser(ctx, p.OrgID, p.UserID)
		if err != nil {
			return storeErr(err)
		}
		return c.JSON([]orgView{viewOrg(o)})
	}
	orgs, err := s.store.OrgsForUser(ctx, p.UserID)
	if err != nil {
		return err
	}
	out := make([]orgView, len(orgs))
	for i, o := range orgs {
		out[i] = viewOrg(o)
	}
	return c.JSON(out)
}

func (s *Server) createOrg(c fiber.Ctx, p *storage.Principal) error {
	name, err := orgName(c)
	if err != nil {
		return err
	}
	o, err := s.store.CreateOrg(c.Context(), p.UserID, name)
	if err != nil {
		return storeErr(err)
	}
	return c.Status(http.StatusCreated).JSON(viewOrg(o))
}

// visibleOrg returns the org id in the path if the principal may see it:
// API keys see only their own org.
func visibleOrg(c fiber.Ctx, p *storage.Principal) (int64, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return 0, err
	}
	if p.KeyID != "" && id != p.OrgID {
		return 0, errNotFound
	}
	return id, nil
}

func (s *Server) getOrg(c fiber.Ctx, p *storage.Principal) error {
	id, err := visibleOrg(c, p)
	if err != nil {
		return err
	}
	o, err := s.store.OrgForUser(c.Context(), id, p.UserID)
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewOrg(o))
}

func (s *Server) patchOrg(c fiber.Ctx, p *storage.Principal) error {
	id, err := visibleOrg(c, p)
	if err != nil {
		return err
	}
	name, err := orgName(c)
	if err != nil {
		return err
	}
	o, err := s.store.RenameOrg(c.Context(), id, p.UserID, storage.RoleAdmin, name)
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewOrg(o))
}

func (s *Server) deleteOrg(c fiber.Ctx, p *storage.Principal) error {
	id, err := visibleOrg(c, p)
	if err != nil {
		return err
	}
	err = s.store.DeleteOrg(c.Context(), id, p.UserID)
	switch {
	case errors.Is(err, storage.ErrMembersRemain):
		return apiErr(http.StatusBadRequest, "Remove the other members before deleting the organization.")
	case errors.Is(err, storage.ErrOnlyOrg):
		return apiErr(http.StatusBadRequest, "You cannot delete your only organization.")
	case errors.Is(err, storage.ErrRole):
		return apiErr(http.StatusForbidden, "Only the owner can delete the organization.")
	case err != nil:
		return storeErr(err)
	}
	s.auth.ForgetAll()
	return c.SendStatus(http.StatusNoContent)
}
