package control

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

func (s *Server) registerNumberRoutes() {
	s.add(route{method: "GET", path: "/v1/phone-numbers", summary: "List phone numbers, newest first", tag: "numbers", auth: authOrg, resSchema: "PhoneNumber", resList: true, handler: s.listNumbers})
	s.add(route{method: "POST", path: "/v1/phone-numbers", summary: "Get a demo number from the pool (area_code, city, state filters), or import a VoIP number (source voip, admin+); 409 when the pool has none", tag: "numbers", auth: authOrg, reqSchema: "PhoneNumberInput", resSchema: "PhoneNumber", resStatus: 201, errors: []int{400, 403, 409}, handler: s.createNumber})
	s.add(route{method: "GET", path: "/v1/phone-numbers/:phone_number_id", summary: "Get a phone number", tag: "numbers", auth: authOrg, resSchema: "PhoneNumber", errors: []int{404}, handler: s.getNumber})
	for _, m := range []string{"PUT", "PATCH"} {
		s.add(route{method: m, path: "/v1/phone-numbers/:phone_number_id", summary: "Assign agents, label, or set status active/released (release clears both assignments)", tag: "numbers", auth: authOrg, reqSchema: "PhoneNumberUpdate", resSchema: "PhoneNumber", errors: []int{400, 404, 409}, handler: s.updateNumber})
	}
	s.add(route{method: "DELETE", path: "/v1/phone-numbers/:phone_number_id", summary: "Delete a number: demo numbers return to the pool, VoIP numbers detach", tag: "numbers", auth: authOrg, resStatus: 204, errors: []int{404}, handler: s.deleteNumber})
	s.add(route{method: "POST", path: "/v1/phone-numbers/:phone_number_id/transfer", summary: "Move a demo number to another organization (admin+ in both); assignments are cleared", tag: "numbers", auth: authOrg, minRole: storage.RoleAdmin, reqSchema: "TransferInput", resSchema: "NumberTransfer", errors: []int{400, 403, 404}, handler: s.transferNumber})
	s.add(route{method: "GET", path: "/v1/phone-numbers/:phone_number_id/versions", summary: "Versions of a number, newest first (query limit, default 20, max 100)", tag: "numbers", auth: authOrg, resSchema: "VersionList", errors: []int{400, 404}, handler: s.numberVersions})
	s.add(route{method: "POST", path: "/v1/phone-numbers/:phone_number_id/verify-voip", summary: "Check a VoIP number's trunk (SIP OPTIONS); failure moves an active number to provisioning", tag: "numbers", auth: authOrg, resSchema: "VoIPVerification", errors: []int{400, 404, 502, 503}, handler: s.verifyVoIP})
	s.add(route{method: "GET", path: "/v1/phone-number-labels", summary: "List number labels by phone number", tag: "numbers", auth: authOrg, resSchema: "NumberLabel", resList: true, handler: s.listLabels})
	s.add(route{method: "POST", path: "/v1/phone-number-labels", summary: "Set the label of an E.164 number (upsert; 200 for insert and update)", tag: "numbers", auth: authOrg, reqSchema: "NumberLabelInput", resSchema: "NumberLabel", errors: []int{400}, handler: s.upsertLabel})
	s.add(route{method: "DELETE", path: "/v1/phone-number-labels/:label_id", summary: "Delete a number label", tag: "numbers", auth: authOrg, resStatus: 204, errors: []int{404}, handler: s.deleteLabel})
}

// numberView is the phone number object (spec 2.7) with its timestamps.
type numberView struct {
	storage.NumberSnapshot
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func viewNumber(n storage.PhoneNumber) numberView {
	return numberView{NumberSnapshot: n.Snapshot(), CreatedAt: ts(n.CreatedAt), UpdatedAt: ts(n.UpdatedAt)}
}

func (s *Server) listNumbers(c fiber.Ctx, p *storage.Principal) error {
	ns, err := s.store.PhoneNumbers(c.Context(), p.OrgID)
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

func (s *Server) createNumber(c fiber.Ctx, p *storage.Principal) error {
	var in numberInput
	if len(c.Body()) > 0 {
		if err := decode(c, &in); err != nil {
			return err
		}
	}
	f := fields{}
	label := numberLabel(f, in.Label)
	source := storage.SourceDemo
	if in.Source != nil {
		source = *in.Source
	}
	switch source {
	case storage.SourceDemo:
		return s.createDemoNumber(c, p, in, label, f)
	case storage.SourceVoIP:
		if err := f.err(); err != nil {
			return err
		}
		if !p.Role.AtLeast(storage.RoleAdmin) {
			return errForbidden
		}
		n, err := s.importVoIPNumber(c, p, in.VoIPConnectionID, in.Number, label)
		if err != nil {
			return err
		}
		return c.Status(http.StatusCreated).JSON(viewNumber(n))
	}
	f.add("source", oneOf(source, []string{storage.SourceDemo, storage.SourceVoIP}))
	return f.err()
}

func numberLabel(f fields, v *string) string {
	if v == nil {
		return ""
	}
	l := strings.TrimSpace(*v)
	if m := tooLong(l, 100); m != "" {
		f.add("label", m)
	}
	return l
}

func (s *Server) createDemoNumber(c fiber.Ctx, p *storage.Principal, in numberInput, label string, f fields) error {
	var filter poolFilter
	if in.AreaCode != nil && *in.AreaCode != "" {
		if filter.AreaCode = strings.TrimSpace(*in.AreaCode); !areaCodeRe.MatchString(filter.AreaCode) {
			f.add("area_code", "Must be 3 digits.")
		}
	}
	if in.City != nil {
		filter.City = strings.TrimSpace(*in.City)
		if m := tooLong(filter.City, 100); m != "" {
			f.add("city", m)
		}
	}
	if in.State != nil && *in.State != "" {
		if filter.State = strings.ToUpper(strings.TrimSpace(*in.State)); !stateRe.MatchString(filter.State) {
			f.add("state", "Must be a 2-letter state code such as CA.")
		}
	}
	if err := f.err(); err != nil {
		return err
	}
	ctx := c.Context()
	matching := s.res.pool.matching(filter)
	numbers := make([]string, len(matching))
	for i, d := range matching {
		numbers[i] = d.Number
	}
	held, err := s.store.HeldNumbers(ctx, numbers)
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
	n, err := s.store.CreateDemoNumber(ctx, p.OrgID, &actor, candidates)
	if errors.Is(err, storage.ErrNoneAvailable) {
		return s.poolExhausted(filter)
	}
	if err != nil {
		return storeErr(err)
	}
	return c.Status(http.StatusCreated).JSON(viewNumber(n))
}

// poolExhausted is the 409 answered when no demo number is free: the pool
// is state the operator controls, and the request may succeed later (a
// number is deleted) or with other filters.
func (s *Server) poolExhausted(f poolFilter) error {
	total := len(s.res.pool.dids)
	switch {
	case total == 0:
		return apiErr(http.StatusConflict, "No demo numbers are available: this server has no demo number pool configured (--did-pool). Import a number from your own SIP trunk instead (source voip).")
	case f.empty():
		return apiErr(http.StatusConflict, "No demo numbers are available: all of the pool's numbers are in use. Try again after a number is deleted, or import a number from your own SIP trunk (source voip).")
	}
	return apiErr(http.StatusConflict, "No demo number is available for "+f.describe()+". Try other filters or none.")
}

func (s *Server) getNumber(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "phone_number_id")
	if err != nil {
		return err
	}
	n, err := s.store.PhoneNumber(c.Context(), p.OrgID, id)
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewNumber(n))
}

// optID reads an "integer or null" agent id field (api.OptID).
func optID(body map[string]json.RawMessage, name string, f fields) (set bool, id *int64) {
	return api.OptID(body, name, api.Fields(f))
}

func (s *Server) updateNumber(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "phone_number_id")
	if err != nil {
		return err
	}
	var body map[string]json.RawMessage
	if err := decode(c, &body); err != nil {
		return err
	}
	f := fields{}
	setIn, inID := optID(body, "inbound_agent_id", f)
	setOut, outID := optID(body, "outbound_agent_id", f)
	var label, status *string
	for name, dst := range map[string]**string{"label": &label, "status": &status} {
		if raw, ok := body[name]; ok {
			if err := json.Unmarshal(raw, dst); err != nil || *dst == nil {
				f.add(name, "Must be a string.")
			}
		}
	}
	if label != nil {
		l := numberLabel(f, label)
		label = &l
	}
	if status != nil && *status != storage.NumberActive && *status != storage.NumberReleased {
		f.add("status", `Only "active" and "released" can be set.`)
	}
	ctx := c.Context()
	for _, a := range []struct {
		name string
		id   *int64
	}{{"inbound_agent_id", inID}, {"outbound_agent_id", outID}} {
		if a.id == nil {
			continue
		}
		if _, err := s.store.Agent(ctx, p.OrgID, *a.id); errors.Is(err, storage.ErrNotFound) {
			f.add(a.name, "Agent not found in this organization.")
		} else if err != nil {
			return err
		}
	}
	if err := f.err(); err != nil {
		return err
	}
	actor := p.MemberID
	n, err := s.store.UpdatePhoneNumber(ctx, p.OrgID, id, &actor, func(n *storage.PhoneNumber) error {
		if status != nil && *status != n.Status {
			switch n.Status {
			case storage.NumberProvisioning:
				return apiErr(http.StatusConflict, "The number is still provisioning; it becomes active by itself (VoIP numbers: when verify-voip succeeds).")
			case storage.NumberFailed:
				return apiErr(http.StatusConflict, "The number failed to provision; delete it and request another.")
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
				return fieldErr("outbound_agent_id", "Demo numbers are inbound only; an outbound agent needs a VoIP number.")
			}
			n.OutboundAgentID = outID
		}
		if n.Status == storage.NumberReleased && ((setIn && inID != nil) || (setOut && outID != nil)) {
			return apiErr(http.StatusConflict, "A released number cannot be assigned to an agent; set its status to active first.")
		}
		if label != nil {
			n.Label = *label
		}
		return nil
	})
	if errors.Is(err, storage.ErrAgentNotInOrg) {
		return apiErr(http.StatusBadRequest, "Agent not found in this organization.")
	}
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewNumber(n))
}

func (s *Server) deleteNumber(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "phone_number_id")
	if err != nil {
		return err
	}
	if err := s.store.DeletePhoneNumber(c.Context(), p.OrgID, id); err != nil {
		return storeErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

type transferInput struct {
	TargetOrgID *int64 `json:"target_org_id"`
}

func (s *Server) transferNumber(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "phone_number_id")
	if err != nil {
		return err
	}
	var in transferInput
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.TargetOrgID == nil || *in.TargetOrgID <= 0 {
		return fieldErr("target_org_id", "This field is required: the id of the organization to move the number to.")
	}
	n, cleared, err := s.store.TransferPhoneNumber(c.Context(), p.OrgID, *in.TargetOrgID, id, p.UserID)
	switch {
	case errors.Is(err, storage.ErrSameOrg):
		return fieldErr("target_org_id", "The number already belongs to this organization.")
	case errors.Is(err, storage.ErrNotMember), errors.Is(err, storage.ErrRole):
		return apiErr(http.StatusForbidden, "Transferring a number needs the admin or owner role in both organizations.")
	case errors.Is(err, storage.ErrVoIPNumber):
		return apiErr(http.StatusBadRequest, "VoIP numbers stay with their SIP trunk; delete the number here and import it on a connection of the other organization.")
	case err != nil:
		return storeErr(err)
	}
	return c.JSON(fiber.Map{"source_org_id": p.OrgID, "target_org_id": *in.TargetOrgID, "cleared_agent_assignments": cleared, "phone_number": viewNumber(n)})
}

func (s *Server) numberVersions(c fiber.Ctx, p *storage.Principal) error {
	id, err := pathID(c, "phone_number_id")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, 20, 100)
	if err != nil {
		return err
	}
	n, vs, err := s.store.PhoneNumberVersions(c.Context(), p.OrgID, id, limit)
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewVersions(n, vs))
}
