package control

import (
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/storage"
)

func (s *Server) listMembers(c fiber.Ctx, p *storage.Principal) error {
	ms, err := s.store.Members(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]memberView, len(ms))
	for i, m := range ms {
		out[i] = viewMember(m)
	}
	return c.JSON(out)
}

func (s *Server) removeMember(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "member_id")
	if err != nil {
		return err
	}
	err = s.store.RemoveMember(c.Context(), p.OrgID, p.UserID, id)
	switch {
	case errors.Is(err, storage.ErrSelf):
		return apiErr(http.StatusBadRequest, "You cannot remove yourself; use /v1/leave.")
	case errors.Is(err, storage.ErrTargetOwner):
		return apiErr(http.StatusForbidden, "The owner cannot be removed.")
	case errors.Is(err, storage.ErrTargetAdmin):
		return apiErr(http.StatusForbidden, "Admins cannot remove other admins.")
	case err != nil:
		return storeErr(err)
	}
	s.auth.ForgetAll()
	return c.SendStatus(http.StatusNoContent)
}

type roleInput struct {
	Role *string `json:"role"`
}

func (s *Server) setRole(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "member_id")
	if err != nil {
		return err
	}
	var in roleInput
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Role == nil {
		return fieldErr("role", "This field is required.")
	}
	role := storage.Role(*in.Role)
	if role != storage.RoleAdmin && role != storage.RoleMember {
		return fieldErr("role", `"`+*in.Role+`" is not a valid choice; use "admin" or "member".`)
	}
	m, err := s.store.SetRole(c.Context(), p.OrgID, p.UserID, id, role)
	switch {
	case errors.Is(err, storage.ErrTargetOwner):
		return apiErr(http.StatusBadRequest, "The owner's role changes only by transferring ownership.")
	case err != nil:
		return storeErr(err)
	}
	s.auth.ForgetAll()
	return c.JSON(viewMember(m))
}

func (s *Server) transferOwnership(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "member_id")
	if err != nil {
		return err
	}
	ctx := c.Context()
	err = s.store.TransferOwnership(ctx, p.OrgID, p.UserID, id)
	switch {
	case errors.Is(err, storage.ErrTargetOwner):
		return apiErr(http.StatusBadRequest, "That member is already the owner.")
	case err != nil:
		return storeErr(err)
	}
	s.auth.ForgetAll()
	m, err := s.store.Member(ctx, p.OrgID, id)
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"detail": "Ownership transferred to " + m.Email + "; you are now an admin."})
}

func (s *Server) leave(c fiber.Ctx, p *storage.Principal) error {
	err := s.store.Leave(c.Context(), p.OrgID, p.UserID)
	switch {
	case errors.Is(err, storage.ErrIsOwner):
		return apiErr(http.StatusForbidden, "The owner cannot leave; transfer ownership first.")
	case errors.Is(err, storage.ErrOnlyOrg):
		return apiErr(http.StatusForbidden, "You cannot leave your only organization.")
	case err != nil:
		return storeErr(err)
	}
	s.auth.ForgetAll()
	return c.SendStatus(http.StatusNoContent)
}
