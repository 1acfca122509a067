package control

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/storage"
)

type labelView struct {
	ID          int64  `json:"id"`
	PhoneNumber string `json:"phone_number"`
	Label       string `json:"label"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

func viewLabel(l storage.NumberLabel) labelView {
	return labelView{ID: l.ID, PhoneNumber: l.PhoneNumber, Label: l.Label, CreatedAt: ts(l.CreatedAt), UpdatedAt: ts(l.UpdatedAt)}
}

func (s *Server) listLabels(c fiber.Ctx, p *storage.Principal) error {
	ls, err := s.store.NumberLabels(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]labelView, len(ls))
	for i, l := range ls {
		out[i] = viewLabel(l)
	}
	return c.JSON(out)
}

type labelInput struct {
	PhoneNumber *string `json:"phone_number"`
	Label       *string `json:"label"`
}

func (s *Server) upsertLabel(c fiber.Ctx, p *storage.Principal) error {
	var in labelInput
	if err := decode(c, &in); err != nil {
		return err
	}
	f := fields{}
	var number string
	switch {
	case in.PhoneNumber == nil:
		f.add("phone_number", "This field is required.")
	case !validE164(strings.TrimSpace(*in.PhoneNumber)):
		f.add("phone_number", "Must be an E.164 number like +14155550100.")
	default:
		number = strings.TrimSpace(*in.PhoneNumber)
	}
	label := f.name("label", in.Label, true, 100)
	if err := f.err(); err != nil {
		return err
	}
	l, err := s.store.UpsertNumberLabel(c.Context(), p.OrgID, number, label)
	if err != nil {
		return storeErr(err)
	}
	return c.Status(http.StatusOK).JSON(viewLabel(l))
}

func (s *Server) deleteLabel(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "label_id")
	if err != nil {
		return err
	}
	if err := s.store.DeleteNumberLabel(c.Context(), p.OrgID, id); err != nil {
		return storeErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}
