package control

import (
	"errors"
	"net/http"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
)

// inviteAccess limits how often one user may look at or accept invites by
// token (spec section 8: 3 invite access requests per hour per user), which
// also makes guessing tokens pointless.
var inviteAccess = coord.Rate{N: 3, Per: time.Hour}

type inviteInput struct {
	Email *string `json:"email"`
	Role  *string `json:"role"`
}

func (s *Server) listInvites(c fiber.Ctx, p *storage.Principal) error {
	list, err := s.store.Invites(c.Context(), p.OrgID)
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

func (s *Server) createInvite(c fiber.Ctx, p *storage.Principal) error {
	var in inviteInput
	if err := decode(c, &in); err != nil {
		return err
	}
	f := fields{}
	var email string
	if in.Email == nil || strings.TrimSpace(*in.Email) == "" {
		f.add("email", "This field is required.")
	} else if a, err := mail.ParseAddress(strings.TrimSpace(*in.Email)); err != nil || a.Address != strings.TrimSpace(*in.Email) || len(a.Address) > 254 {
		f.add("email", "Enter a valid email address.")
	} else {
		email = a.Address
	}
	role := storage.RoleMember
	if in.Role != nil {
		role = storage.Role(*in.Role)
		if role != storage.RoleAdmin && role != storage.RoleMember {
			f.add("role", `"`+*in.Role+`" is not a valid choice; use "admin" or "member".`)
		}
	}
	if err := f.err(); err != nil {
		return err
	}
	ctx := c.Context()
	if u, err := s.store.UserByEmail(ctx, email); err == nil {
		if _, err := s.store.MemberByUser(ctx, p.OrgID, u.ID); err == nil {
			return fieldErr("email", "This person is already a member.")
		}
	}
	inv, token, err := s.store.CreateInvite(ctx, p.OrgID, p.UserID, email, role, s.cfg.InviteTTL)
	if errors.Is(err, storage.ErrTargetAdmin) {
		return apiErr(http.StatusForbidden, "Only the owner can invite admins.")
	}
	if err != nil {
		return storeErr(err)
	}
	v := viewInvite(inv, time.Now())
	v.Token = token
	v.InviteURL = s.cfg.PublicURL + "/v1/invitations/" + token
	return c.Status(http.StatusCreated).JSON(v)
}

func (s *Server) revokeInvite(c fiber.Ctx, p *storage.Principal) error {
	err := s.store.RevokeInvite(c.Context(), p.OrgID, c.Params("invite_id"))
	if errors.Is(err, storage.ErrGone) {
		return apiErr(http.StatusGone, "This invite was already used or revoked.")
	}
	if err != nil {
		return storeErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

// inviteByToken counts an invite access request and loads the invite,
// answering 429 past the limit, 404 for unknown tokens, 410 for used,
// revoked or expired ones, and 403 when it was sent to another address.
func (s *Server) inviteByToken(c fiber.Ctx, p *storage.Principal) (storage.Invite, error) {
	ctx := c.Context()
	d, err := s.limiter.Allow(ctx, "invite-access:user:"+strconv.FormatInt(p.UserID, 10), inviteAccess)
	if err != nil {
		return storage.Invite{}, err
	}
	if !d.Allowed {
		return storage.Invite{}, apiErr(http.StatusTooManyRequests, "Too many invite requests; at most 3 per hour.")
	}
	inv, err := s.store.InviteByToken(ctx, c.Params("token"))
	if err != nil {
		return storage.Invite{}, storeErr(err)
	}
	if st := inv.Status(time.Now()); st != "pending" {
		return storage.Invite{}, apiErr(http.StatusGone, "This invite is "+st+".")
	}
	u, err := s.store.UserByID(ctx, p.UserID)
	if err != nil {
		return storage.Invite{}, storeErr(err)
	}
	if !strings.EqualFold(u.Email, inv.Email) {
		return storage.Invite{}, apiErr(http.StatusForbidden, "This invite was sent to another email address.")
	}
	return inv, nil
}

func (s *Server) viewInvitation(c fiber.Ctx, p *storage.Principal) error {
	inv, err := s.inviteByToken(c, p)
	if err != nil {
		return err
	}
	return c.JSON(viewInvite(inv, time.Now()))
}

func (s *Server) acceptInvitation(c fiber.Ctx, p *storage.Principal) error {
	if _, err := s.inviteByToken(c, p); err != nil {
		return err
	}
	m, err := s.store.AcceptInvite(c.Context(), c.Params("token"), p.UserID)
	switch {
	case errors.Is(err, storage.ErrGone):
		return apiErr(http.StatusGone, "This invite was already used, revoked or has expired.")
	case errors.Is(err, storage.ErrConflict):
		return apiErr(http.StatusConflict, "You are already a member of this organization.")
	case err != nil:
		return storeErr(err)
	}
	return c.JSON(viewMember(m))
}
