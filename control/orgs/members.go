package orgs

import (
	"context"
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// MemberStore is what the member routes need from storage.
type MemberStore interface {
	Members(ctx context.Context, orgID int64) ([]storage.Member, error)
	Member(ctx context.Context, orgID, id int64) (storage.Member, error)
	RemoveMember(ctx context.Context, orgID, actorUserID, targetID int64) error
	SetRole(ctx context.Context, orgID, actorUserID, targetID int64, role storage.Role) (storage.Member, error)
	TransferOwnership(ctx context.Context, orgID, actorUserID, targetID int64) error
	Leave(ctx context.Context, orgID, userID int64) error
}

type memberHandlers struct {
	store MemberStore
	creds Credentials
}

// MemberRoutes returns the /v1/members and /v1/leave routes.
func MemberRoutes(store MemberStore, creds Credentials) []api.Route {
	h := &memberHandlers{store: store, creds: creds}
	return []api.Route{
		{Method: "GET", Path: "/v1/members", Summary: "List members, oldest first", Tag: "members", Auth: api.AuthOrg, ResSchema: "Member", ResList: true, Handler: h.listMembers},
		{Method: "DELETE", Path: "/v1/members/:member_id", Summary: "Remove a member (admin+; admins cannot remove admins)", Tag: "members", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResStatus: 204, Errors: []int{400, 403, 404}, Handler: h.removeMember},
		{Method: "PATCH", Path: "/v1/members/:member_id/role", Summary: "Change a member's role (owner)", Tag: "members", Auth: api.AuthOrg, MinRole: storage.RoleOwner, ReqSchema: "RoleInput", ResSchema: "Member", Errors: []int{400, 403, 404}, Handler: h.setRole},
		{Method: "POST", Path: "/v1/members/:member_id/transfer-ownership", Summary: "Transfer ownership (owner); the caller becomes admin", Tag: "members", Auth: api.AuthOrg, MinRole: storage.RoleOwner, ResSchema: "Detail", Errors: []int{400, 403, 404}, Handler: h.transferOwnership},
		{Method: "POST", Path: "/v1/leave", Summary: "Leave the organization", Tag: "members", Auth: api.AuthOrg, ResStatus: 204, Errors: []int{403, 404}, Handler: h.leave},
	}
}

func (h *memberHandlers) listMembers(c fiber.Ctx, p *storage.Principal) error {
	ms, err := h.store.Members(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]memberView, len(ms))
	for i, m := range ms {
		out[i] = viewMember(m)
	}
	return c.JSON(out)
}

func (h *memberHandlers) removeMember(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "member_id")
	if err != nil {
		return err
	}
	err = h.store.RemoveMember(c.Context(), p.OrgID, p.UserID, id)
	switch {
	case errors.Is(err, storage.ErrSelf):
		return api.Err(http.StatusBadRequest, "You cannot remove yourself; use /v1/leave.")
	case errors.Is(err, storage.ErrTargetOwner):
		return api.Err(http.StatusForbidden, "The owner cannot be removed.")
	case errors.Is(err, storage.ErrTargetAdmin):
		return api.Err(http.StatusForbidden, "Admins cannot remove other admins.")
	case err != nil:
		return api.StoreErr(err)
	}
	h.creds.ForgetAll()
	return c.SendStatus(http.StatusNoContent)
}

type roleInput struct {
	Role *string `json:"role"`
}

func (h *memberHandlers) setRole(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "member_id")
	if err != nil {
		return err
	}
	var in roleInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	if in.Role == nil {
		return api.FieldErr("role", "This field is required.")
	}
	role := storage.Role(*in.Role)
	if role != storage.RoleAdmin && role != storage.RoleMember {
		return api.FieldErr("role", `"`+*in.Role+`" is not a valid choice; use "admin" or "member".`)
	}
	m, err := h.store.SetRole(c.Context(), p.OrgID, p.UserID, id, role)
	switch {
	case errors.Is(err, storage.ErrTargetOwner):
		return api.Err(http.StatusBadRequest, "The owner's role changes only by transferring ownership.")
	case err != nil:
		return api.StoreErr(err)
	}
	h.creds.ForgetAll()
	return c.JSON(viewMember(m))
}

func (h *memberHandlers) transferOwnership(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "member_id")
	if err != nil {
		return err
	}
	ctx := c.Context()
	err = h.store.TransferOwnership(ctx, p.OrgID, p.UserID, id)
	switch {
	case errors.Is(err, storage.ErrTargetOwner):
		return api.Err(http.StatusBadRequest, "That member is already the owner.")
	case err != nil:
		return api.StoreErr(err)
	}
	h.creds.ForgetAll()
	m, err := h.store.Member(ctx, p.OrgID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(fiber.Map{"detail": "Ownership transferred to " + m.Email + "; you are now an admin."})
}

func (h *memberHandlers) leave(c fiber.Ctx, p *storage.Principal) error {
	err := h.store.Leave(c.Context(), p.OrgID, p.UserID)
	switch {
	case errors.Is(err, storage.ErrIsOwner):
		return api.Err(http.StatusForbidden, "The owner cannot leave; transfer ownership first.")
	case errors.Is(err, storage.ErrOnlyOrg):
		return api.Err(http.StatusForbidden, "You cannot leave your only organization.")
	case err != nil:
		return api.StoreErr(err)
	}
	h.creds.ForgetAll()
	return c.SendStatus(http.StatusNoContent)
}

type memberView struct {
	ID         int64  `json:"id"`
	Email      string `json:"email"`
	FirstName  string `json:"first_name"`
	LastName   string `json:"last_name"`
	Role       string `json:"role"`
	HasPasskey bool   `json:"has_passkey"`
	CreatedAt  string `json:"created_at"`
}

func viewMember(m storage.Member) memberView {
	return memberView{ID: m.ID, Email: m.Email, FirstName: m.FirstName, LastName: m.LastName, Role: string(m.Role), HasPasskey: m.HasPasskey, CreatedAt: api.TS(m.CreatedAt)}
}
