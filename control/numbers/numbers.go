package numbers

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// numberView is the phone number object (spec 2.7) with its timestamps.
type numberView struct {
	storage.NumberSnapshot
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func viewNumber(n storage.PhoneNumber) numberView {
	return numberView{NumberSnapshot: n.Snapshot(), CreatedAt: api.TS(n.CreatedAt), UpdatedAt: api.TS(n.UpdatedAt)}
}

func (h *Service) listNumbers(c fiber.Ctx, p *storage.Principal) error {
	ns, err := h.stores.Numbers.PhoneNumbers(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]numberView, len(ns))
	for i, n := range ns {
		out[i] = viewNumber(n)
	}
	return c.JSON(out)
}

type numberInput struct {
	AreaCode         *string `json:"area_code"`
	City             *string `json:"city"`
	State            *string `json:"state"`
	Source           *string `json:"source"`
	Number           *string `json:"number"`
	VoIPConnectionID *int64  `json:"voip_connection_id"`
	Label            *string `json:"label"`
}

func (h *Service) createNumber(c fiber.Ctx, p *storage.Principal) error {
	var in numberInput
	if len(c.Body()) > 0 {
		if err := api.Decode(c, &in); err != nil {
			return err
		}
	}
	f := api.Fields{}
	label := numberLabel(f, in.Label)
	source := storage.SourceDemo
	if in.Source != nil {
		source = *in.Source
	}
	switch source {
	case storage.SourceDemo:
		return h.createDemoNumber(c, p, in, label, f)
	case storage.SourceVoIP:
		if err := f.Err(); err != nil {
			return err
		}
		if !p.Role.AtLeast(storage.RoleAdmin) {
			return api.ErrForbidden
		}
		n, err := h.importVoIPNumber(c, p, in.VoIPConnectionID, in.Number, label)
		if err != nil {
			return err
		}
		return c.Status(http.StatusCreated).JSON(viewNumber(n))
	}
	f.Add("source", api.OneOf(source, []string{storage.SourceDemo, storage.SourceVoIP}))
	return f.Err()
}

func numberLabel(f api.Fields, v *string) string {
	if v == nil {
		return ""
	}
	l := strings.TrimSpace(*v)
	if m := api.TooLong(l, 100); m != "" {
		f.Add("label", m)
	}
	return l
}

func (h *Service) createDemoNumber(c fiber.Ctx, p *storage.Principal, in numberInput, label string, f api.Fields) error {
	var filter poolFilter
	if in.AreaCode != nil && *in.AreaCode != "" {
		if filter.AreaCode = strings.TrimSpace(*in.AreaCode); !areaCodeRe.MatchString(filter.AreaCode) {
			f.Add("area_code", "Must be 3 digits.")
		}
	}
	if in.City != nil {
		filter.City = strings.TrimSpace(*in.City)
		if m := api.TooLong(filter.City, 100); m != "" {
			f.Add("city", m)
		}
	}
	if in.State != nil && *in.State != "" {
		if filter.State = strings.ToUpper(strings.TrimSpace(*in.State)); !stateRe.MatchString(filter.State) {
			f.Add("state", "Must be a 2-letter state code such as CA.")
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	ctx := c.Context()
	matching := h.pool.matching(filter)
	numbers := make([]string, len(matching))
	for i, d := range matching {
		numbers[i] = d.Number
	}
	held, err := h.stores.Demo.HeldNumbers(ctx, numbers)
	if err != nil {
		return err
	}
	var candidates []storage.PhoneNumber
	for _, d := range matching {
		if !held[d.Number] && len(candidates) < 20 {
			candidates = append(candidates, storage.PhoneNumber{Number: d.Number, Label: label, AreaCode: d.AreaCode, City: d.City, State: d.State})
		}
	}
	actor := p.MemberID
	n, err := h.stores.Demo.CreateDemoNumber(ctx, p.OrgID, &actor, candidates)
	if errors.Is(err, storage.ErrNoneAvailable) {
		return h.poolExhausted(filter)
	}
	if err != nil {
		return api.StoreErr(err)
	}
	return c.Status(http.StatusCreated).JSON(viewNumber(n))
}

// poolExhausted is the 409 answered when no demo number is free: the pool
// is state the operator controls, and the request may succeed later (a
// number is deleted) or with other filters.
func (h *Service) poolExhausted(f poolFilter) error {
	total := len(h.pool.dids)
	switch {
	case total == 0:
		return api.Err(http.StatusConflict, "No demo numbers are available: this server has no demo number pool configured (--did-pool). Import a number from your own SIP trunk instead (source voip).")
	case f.empty():
		return api.Err(http.StatusConflict, "No demo numbers are available: all of the pool's numbers are in use. Try again after a number is deleted, or import a number from your own SIP trunk (source voip).")
	}
	return api.Err(http.StatusConflict, "No demo number is available for "+f.describe()+". Try other filters or none.")
}

func (h *Service) getNumber(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "phone_number_id")
	if err != nil {
		return err
	}
	n, err := h.stores.Numbers.PhoneNumber(c.Context(), p.OrgID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewNumber(n))
}

func (h *Service) updateNumber(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "phone_number_id")
	if err != nil {
		return err
	}
	var body map[string]json.RawMessage
	if err := api.Decode(c, &body); err != nil {
		return err
	}
	f := api.Fields{}
	setIn, inID := api.OptID(body, "inbound_agent_id", f)
	setOut, outID := api.OptID(body, "outbound_agent_id", f)
	var label, status *string
	for name, dst := range map[string]**string{"label": &label, "status": &status} {
		if raw, ok := body[name]; ok {
			if err := json.Unmarshal(raw, dst); err != nil || *dst == nil {
				f.Add(name, "Must be a string.")
			}
		}
	}
	if label != nil {
		l := numberLabel(f, label)
		label = &l
	}
	if status != nil && *status != storage.NumberActive && *status != storage.NumberReleased {
		f.Add("status", `Only "active" and "released" can be set.`)
	}
	ctx := c.Context()
	for _, a := range []struct {
		name string
		id   *int64
	}{{"inbound_agent_id", inID}, {"outbound_agent_id", outID}} {
		if a.id == nil {
			continue
		}
		if _, err := h.stores.Agents.Agent(ctx, p.OrgID, *a.id); errors.Is(err, storage.ErrNotFound) {
			f.Add(a.name, "Agent not found in this organization.")
		} else if err != nil {
			return err
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	actor := p.MemberID
	n, err := h.stores.Numbers.UpdatePhoneNumber(ctx, p.OrgID, id, &actor, func(n *storage.PhoneNumber) error {
		if status != nil && *status != n.Status {
			switch n.Status {
			case storage.NumberProvisioning:
				return api.Err(http.StatusConflict, "The number is still provisioning; it becomes active by itself (VoIP numbers: when verify-voip succeeds).")
			case storage.NumberFailed:
				return api.Err(http.StatusConflict, "The number failed to provision; delete it and request another.")
			}
			n.Status = *status
			if n.Status == storage.NumberReleased {
				n.InboundAgentID, n.OutboundAgentID = nil, nil
			}
		}
		if setIn {
			n.InboundAgentID = inID
		}
		if setOut {
			if outID != nil && n.Source == storage.SourceDemo {
				return api.FieldErr("outbound_agent_id", "Demo numbers are inbound only; an outbound agent needs a VoIP number.")
			}
			n.OutboundAgentID = outID
		}
		if n.Status == storage.NumberReleased && ((setIn && inID != nil) || (setOut && outID != nil)) {
			return api.Err(http.StatusConflict, "A released number cannot be assigned to an agent; set its status to active first.")
		}
		if label != nil {
			n.Label = *label
		}
		return nil
	})
	if errors.Is(err, storage.ErrAgentNotInOrg) {
		return api.Err(http.StatusBadRequest, "Agent not found in this organization.")
	}
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewNumber(n))
}

func (h *Service) deleteNumber(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "phone_number_id")
	if err != nil {
		return err
	}
	if err := h.stores.Numbers.DeletePhoneNumber(c.Context(), p.OrgID, id); err != nil {
		return api.StoreErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

type transferInput struct {
	TargetOrgID *int64 `json:"target_org_id"`
}

func (h *Service) transferNumber(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "phone_number_id")
	if err != nil {
		return err
	}
	var in transferInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	if in.TargetOrgID == nil || *in.TargetOrgID <= 0 {
		return api.FieldErr("target_org_id", "This field is required: the id of the organization to move the number to.")
	}
	n, cleared, err := h.stores.Transfers.TransferPhoneNumber(c.Context(), p.OrgID, *in.TargetOrgID, id, p.UserID)
	switch {
	case errors.Is(err, storage.ErrSameOrg):
		return api.FieldErr("target_org_id", "The number already belongs to this organization.")
	case errors.Is(err, storage.ErrNotMember), errors.Is(err, storage.ErrRole):
		return api.Err(http.StatusForbidden, "Transferring a number needs the admin or owner role in both organizations.")
	case errors.Is(err, storage.ErrVoIPNumber):
		return api.Err(http.StatusBadRequest, "VoIP numbers stay with their SIP trunk; delete the number here and import it on a connection of the other organization.")
	case err != nil:
		return api.StoreErr(err)
	}
	return c.JSON(fiber.Map{"source_org_id": p.OrgID, "target_org_id": *in.TargetOrgID, "cleared_agent_assignments": cleared, "phone_number": viewNumber(n)})
}

func (h *Service) numberVersions(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "phone_number_id")
	if err != nil {
		return err
	}
	limit, err := api.QueryLimit(c, 20, 100)
	if err != nil {
		return err
	}
	n, vs, err := h.stores.Numbers.PhoneNumberVersions(c.Context(), p.OrgID, id, limit)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(api.ViewVersions(n, vs))
}
