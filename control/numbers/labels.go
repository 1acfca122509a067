package numbers

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
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
	return labelView{ID: l.ID, PhoneNumber: l.PhoneNumber, Label: l.Label, CreatedAt: api.TS(l.CreatedAt), UpdatedAt: api.TS(l.UpdatedAt)}
}

func (h *Service) listLabels(c fiber.Ctx, p *storage.Principal) error {
	ls, err := h.stores.Labels.NumberLabels(c.Context(), p.OrgID)
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

func (h *Service) upsertLabel(c fiber.Ctx, p *storage.Principal) error {
	var in labelInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	var number string
	switch {
	case in.PhoneNumber == nil:
		f.Add("phone_number", "This field is required.")
	case !ValidE164(strings.TrimSpace(*in.PhoneNumber)):
		f.Add("phone_number", "Must be an E.164 number like +14155550100.")
	default:
		number = strings.TrimSpace(*in.PhoneNumber)
	}
	label := f.Name("label", in.Label, true, 100)
	if err := f.Err(); err != nil {
		return err
	}
	l, err := h.stores.Labels.UpsertNumberLabel(c.Context(), p.OrgID, number, label)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.Status(http.StatusOK).JSON(viewLabel(l))
}

func (h *Service) deleteLabel(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "label_id")
	if err != nil {
		return err
	}
	if err := h.stores.Labels.DeleteNumberLabel(c.Context(), p.OrgID, id); err != nil {
		return api.StoreErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}
