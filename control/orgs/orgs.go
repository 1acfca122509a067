package orgs

import (
	"context"
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// OrgStore is what the organization routes need from storage.
type OrgStore interface {
	OrgsForUser(ctx context.Context, userID int64) ([]storage.Org, error)
	OrgForUser(ctx context.Context, orgID, userID int64) (storage.Org, error)
	CreateOrg(ctx context.Context, userID int64, name string) (storage.Org, error)
	RenameOrg(ctx context.Context, orgID, userID int64, minRole storage.Role, name string) (storage.Org, error)
	DeleteOrg(ctx context.Context, orgID, userID int64) error
}

// Credentials is the authenticator's cache: membership and role changes
// must not keep being served from it.
type Credentials interface {
	ForgetAll()
}

type orgHandlers struct {
	store OrgStore
	creds Credentials
}

// Routes returns the /v1/orgs routes.
func Routes(store OrgStore, creds Credentials) []api.Route {
	h := &orgHandlers{store: store, creds: creds}
	return []api.Route{
		{Method: "GET", Path: "/v1/orgs", Summary: "List the caller's organizations", Tag: "orgs", Auth: api.AuthUser, ResSchema: "Org", ResList: true, Handler: h.listOrgs},
		{Method: "POST", Path: "/v1/orgs", Summary: "Create an organization (caller becomes owner)", Tag: "orgs", Auth: api.AuthUser, ReqSchema: "OrgInput", ResSchema: "Org", ResStatus: 201, Errors: []int{400}, Handler: h.createOrg},
		{Method: "GET", Path: "/v1/orgs/:id", Summary: "Get an organization", Tag: "orgs", Auth: api.AuthUser, ResSchema: "Org", Errors: []int{404}, Handler: h.getOrg},
		{Method: "PATCH", Path: "/v1/orgs/:id", Summary: "Rename an organization (admin+)", Tag: "orgs", Auth: api.AuthUser, ReqSchema: "OrgInput", ResSchema: "Org", Errors: []int{400, 403, 404}, Handler: h.patchOrg},
		{Method: "DELETE", Path: "/v1/orgs/:id", Summary: "Delete an organization (owner; no other members; not the caller's only org)", Tag: "orgs", Auth: api.AuthUser, ResStatus: 204, Errors: []int{400, 403, 404}, Handler: h.deleteOrg},
	}
}

type orgInput struct {
	Name *string `json:"name"`
}

// orgName decodes and validates the body of POST and PATCH /v1/orgs/.
func orgName(c fiber.Ctx) (string, error) {
	var in orgInput
	if err := api.Decode(c, &in); err != nil {
		return "", err
	}
	f := api.Fields{}
	name := f.Name("name", in.Name, true, 120)
	return name, f.Err()
}

func (h *orgHandlers) listOrgs(c fiber.Ctx, p *storage.Principal) error {
	ctx := c.Context()
	if p.KeyID != "" {
		// An API key is bound to one org.
		o, err := h.store.OrgForUser(ctx, p.OrgID, p.UserID)
		if err != nil {
			return api.StoreErr(err)
		}
		return c.JSON([]orgView{viewOrg(o)})
	}
	orgs, err := h.store.OrgsForUser(ctx, p.UserID)
	if err != nil {
		return err
	}
	out := make([]orgView, len(orgs))
	for i, o := range orgs {
		out[i] = viewOrg(o)
	}
	return c.JSON(out)
}

func (h *orgHandlers) createOrg(c fiber.Ctx, p *storage.Principal) error {
	name, err := orgName(c)
	if err != nil {
		return err
	}
	o, err := h.store.CreateOrg(c.Context(), p.UserID, name)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.Status(http.StatusCreated).JSON(viewOrg(o))
}

// visibleOrg returns the org id in the path if the principal may see it:
// API keys see only their own org.
func visibleOrg(c fiber.Ctx, p *storage.Principal) (int64, error) {
	id, err := api.PathID(c, "id")
	if err != nil {
		return 0, err
	}
	if p.KeyID != "" && id != p.OrgID {
		return 0, api.ErrNotFound
	}
	return id, nil
}

func (h *orgHandlers) getOrg(c fiber.Ctx, p *storage.Principal) error {
	id, err := visibleOrg(c, p)
	if err != nil {
		return err
	}
	o, err := h.store.OrgForUser(c.Context(), id, p.UserID)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewOrg(o))
}

func (h *orgHandlers) patchOrg(c fiber.Ctx, p *storage.Principal) error {
	id, err := visibleOrg(c, p)
	if err != nil {
		return err
	}
	name, err := orgName(c)
	if err != nil {
		return err
	}
	o, err := h.store.RenameOrg(c.Context(), id, p.UserID, storage.RoleAdmin, name)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewOrg(o))
}

func (h *orgHandlers) deleteOrg(c fiber.Ctx, p *storage.Principal) error {
	id, err := visibleOrg(c, p)
	if err != nil {
		return err
	}
	err = h.store.DeleteOrg(c.Context(), id, p.UserID)
	switch {
	case errors.Is(err, storage.ErrMembersRemain):
		return api.Err(http.StatusBadRequest, "Remove the other members before deleting the organization.")
	case errors.Is(err, storage.ErrOnlyOrg):
		return api.Err(http.StatusBadRequest, "You cannot delete your only organization.")
	case errors.Is(err, storage.ErrRole):
		return api.Err(http.StatusForbidden, "Only the owner can delete the organization.")
	case err != nil:
		return api.StoreErr(err)
	}
	h.creds.ForgetAll()
	return c.SendStatus(http.StatusNoContent)
}

type orgView struct {
	ID        int64   `json:"id"`
	Name      string  `json:"name"`
	Role      *string `json:"role"`
	CreatedAt string  `json:"created_at"`
	UpdatedAt string  `json:"updated_at"`
}

func viewOrg(o storage.Org) orgView {
	v := orgView{ID: o.ID, Name: o.Name, CreatedAt: api.TS(o.CreatedAt), UpdatedAt: api.TS(o.UpdatedAt)}
	if o.Role != "" {
		r := string(o.Role)
		v.Role = &r
	}
	return v
}
