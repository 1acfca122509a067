package orgs

import (
	"context"
	"errors"
	"net/http"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
)

// InviteConfig holds the invite routes' settings.
type InviteConfig struct {
	// PublicURL is the base of the invite URL a new invite returns.
	PublicURL string
	// InviteTTL is how long an invite stays valid.
	InviteTTL time.Duration
}

// InviteStore is what the invite routes need from storage for invites.
type InviteStore interface {
	Invites(ctx context.Context, orgID int64) ([]storage.Invite, error)
	CreateInvite(ctx context.Context, orgID, actorUserID int64, email string, role storage.Role, ttl time.Duration) (storage.Invite, string, error)
	RevokeInvite(ctx context.Context, orgID int64, id string) error
	InviteByToken(ctx context.Context, raw string) (storage.Invite, error)
	AcceptInvite(ctx context.Context, raw string, userID int64) (storage.Member, error)
}

// Users looks up the people an invite is sent to and accepted by.
type Users interface {
	UserByEmail(ctx context.Context, email string) (storage.User, error)
	UserByID(ctx context.Context, id int64) (storage.User, error)
	MemberByUser(ctx context.Context, orgID, userID int64) (storage.Member, error)
}

// Limiter counts invite access requests (coord.Limiter).
type Limiter interface {
	Allow(ctx context.Context, key string, r coord.Rate) (coord.Decision, error)
}

type inviteHandlers struct {
	cfg     InviteConfig
	store   InviteStore
	users   Users
	limiter Limiter
}

// InviteRoutes returns the /v1/invites and /v1/invitations routes.
func InviteRoutes(cfg InviteConfig, store InviteStore, users Users, limiter Limiter) []api.Route {
	h := &inviteHandlers{cfg: cfg, store: store, users: users, limiter: limiter}
	return []api.Route{
		{Method: "GET", Path: "/v1/invites", Summary: "List invites, newest first (admin+)", Tag: "invites", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResSchema: "Invite", ResList: true, Errors: []int{403}, Handler: h.listInvites},
		{Method: "POST", Path: "/v1/invites", Summary: "Invite an email address (admin+; only the owner invites admins)", Tag: "invites", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "InviteInput", ResSchema: "InviteCreated", ResStatus: 201, Errors: []int{400, 403}, Handler: h.createInvite},
		{Method: "DELETE", Path: "/v1/invites/:invite_id", Summary: "Revoke a pending invite (admin+)", Tag: "invites", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResStatus: 204, Errors: []int{403, 404, 410}, Handler: h.revokeInvite},
		{Method: "GET", Path: "/v1/invitations/:token", Summary: "Look at an invite by its token (3 invite access requests per hour per user)", Tag: "invites", Auth: api.AuthUser, ResSchema: "Invite", Errors: []int{403, 404, 410, 429}, Handler: h.viewInvitation},
		{Method: "POST", Path: "/v1/invitations/:token/accept", Summary: "Accept an invite (3 invite access requests per hour per user)", Tag: "invites", Auth: api.AuthUser, ResSchema: "Member", Errors: []int{403, 404, 409, 410, 429}, Handler: h.acceptInvitation},
	}
}

// inviteAccess limits how often one user may look at or accept invites by
// token (spec section 8: 3 invite access requests per hour per user), which
// also makes guessing tokens pointless.
var inviteAccess = coord.Rate{N: 3, Per: time.Hour}

type inviteInput struct {
	Email *string `json:"email"`
	Role  *string `json:"role"`
}

func (h *inviteHandlers) listInvites(c fiber.Ctx, p *storage.Principal) error {
	list, err := h.store.Invites(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	now := time.Now()
	out := make([]inviteView, len(list))
	for i, inv := range list {
		out[i] = viewInvite(inv, now)
	}
	return c.JSON(out)
}

func (h *inviteHandlers) createInvite(c fiber.Ctx, p *storage.Principal) error {
	var in inviteInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	var email string
	if in.Email == nil || strings.TrimSpace(*in.Email) == "" {
		f.Add("email", "This field is required.")
	} else if a, err := mail.ParseAddress(strings.TrimSpace(*in.Email)); err != nil || a.Address != strings.TrimSpace(*in.Email) || len(a.Address) > 254 {
		f.Add("email", "Enter a valid email address.")
	} else {
		email = a.Address
	}
	role := storage.RoleMember
	if in.Role != nil {
		role = storage.Role(*in.Role)
		if role != storage.RoleAdmin && role != storage.RoleMember {
			f.Add("role", `"`+*in.Role+`" is not a valid choice; use "admin" or "member".`)
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	ctx := c.Context()
	if u, err := h.users.UserByEmail(ctx, email); err == nil {
		if _, err := h.users.MemberByUser(ctx, p.OrgID, u.ID); err == nil {
			return api.FieldErr("email", "This person is already a member.")
		}
	}
	inv, token, err := h.store.CreateInvite(ctx, p.OrgID, p.UserID, email, role, h.cfg.InviteTTL)
	if errors.Is(err, storage.ErrTargetAdmin) {
		return api.Err(http.StatusForbidden, "Only the owner can invite admins.")
	}
	if err != nil {
		return api.StoreErr(err)
	}
	v := viewInvite(inv, time.Now())
	v.Token = token
	v.InviteURL = h.cfg.PublicURL + "/v1/invitations/" + token
	return c.Status(http.StatusCreated).JSON(v)
}

func (h *inviteHandlers) revokeInvite(c fiber.Ctx, p *storage.Principal) error {
	err := h.store.RevokeInvite(c.Context(), p.OrgID, c.Params("invite_id"))
	if errors.Is(err, storage.ErrGone) {
		return api.Err(http.StatusGone, "This invite was already used or revoked.")
	}
	if err != nil {
		return api.StoreErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

// inviteByToken counts an invite access request and loads the invite,
// answering 429 past the limit, 404 for unknown tokens, 410 for used,
// revoked or expired ones, and 403 when it was sent to another address.
func (h *inviteHandlers) inviteByToken(c fiber.Ctx, p *storage.Principal) (storage.Invite, error) {
	ctx := c.Context()
	d, err := h.limiter.Allow(ctx, "invite-access:user:"+strconv.FormatInt(p.UserID, 10), inviteAccess)
	if err != nil {
		return storage.Invite{}, err
	}
	if !d.Allowed {
		return storage.Invite{}, api.Err(http.StatusTooManyRequests, "Too many invite requests; at most 3 per hour.")
	}
	inv, err := h.store.InviteByToken(ctx, c.Params("token"))
	if err != nil {
		return storage.Invite{}, api.StoreErr(err)
	}
	if st := inv.Status(time.Now()); st != "pending" {
		return storage.Invite{}, api.Err(http.StatusGone, "This invite is "+st+".")
	}
	u, err := h.users.UserByID(ctx, p.UserID)
	if err != nil {
		return storage.Invite{}, api.StoreErr(err)
	}
	if !strings.EqualFold(u.Email, inv.Email) {
		return storage.Invite{}, api.Err(http.StatusForbidden, "This invite was sent to another email address.")
	}
	return inv, nil
}

func (h *inviteHandlers) viewInvitation(c fiber.Ctx, p *storage.Principal) error {
	inv, err := h.inviteByToken(c, p)
	if err != nil {
		return err
	}
	return c.JSON(viewInvite(inv, time.Now()))
}

func (h *inviteHandlers) acceptInvitation(c fiber.Ctx, p *storage.Principal) error {
	if _, err := h.inviteByToken(c, p); err != nil {
		return err
	}
	m, err := h.store.AcceptInvite(c.Context(), c.Params("token"), p.UserID)
	switch {
	case errors.Is(err, storage.ErrGone):
		return api.Err(http.StatusGone, "This invite was already used, revoked or has expired.")
	case errors.Is(err, storage.ErrConflict):
		return api.Err(http.StatusConflict, "You are already a member of this organization.")
	case err != nil:
		return api.StoreErr(err)
	}
	return c.JSON(viewMember(m))
}

type inviteView struct {
	ID         string  `json:"id"`
	OrgID      int64   `json:"org_id"`
	OrgName    string  `json:"org_name"`
	Email      string  `json:"email"`
	Role       string  `json:"role"`
	Status     string  `json:"status"`
	CreatedAt  string  `json:"created_at"`
	ExpiresAt  string  `json:"expires_at"`
	AcceptedAt *string `json:"accepted_at"`
	RevokedAt  *string `json:"revoked_at"`
	Token      string  `json:"token,omitempty"`
	InviteURL  string  `json:"invite_url,omitempty"`
}

func viewInvite(i storage.Invite, now time.Time) inviteView {
	return inviteView{ID: i.ID, OrgID: i.OrgID, OrgName: i.OrgName, Email: i.Email, Role: string(i.Role), Status: i.Status(now),
		CreatedAt: api.TS(i.CreatedAt), ExpiresAt: api.TS(i.ExpiresAt), AcceptedAt: api.TSPtr(i.AcceptedAt), RevokedAt: api.TSPtr(i.RevokedAt)}
}
