package control

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
)

// EndpointEventTypes are the values an endpoint may subscribe to (spec
// section 6.1). webhook.test is synthetic and cannot be subscribed.
var EndpointEventTypes = []string{"telephony.incoming", "telephony.complete", "telephony.tool", "web.incoming", "web.complete", "web.tool",
	"call.graded", "issue.reported", "test-call.completed", "alert.triggered"}

// hooksAPI holds the webhook endpoint routes' collaborators: first is the
// worker that makes a test event's first attempt in the request.
type hooksAPI struct {
	s     *Server
	first *webhook.Worker
}

func (s *Server) registerWebhookRoutes() {
	// webhook.New fails only without a store, and New has checked it.
	w, _ := webhook.New(s.cfg.Webhooks, s.log, s.store)
	h := &hooksAPI{s: s, first: w}
	s.add(route{method: "GET", path: "/v1/developer/webhook-endpoints", summary: "List webhook endpoints, oldest first (admin+)", tag: "webhooks", auth: authOrg, minRole: storage.RoleAdmin, resSchema: "WebhookEndpoint", resList: true, errors: []int{403}, handler: h.list})
	s.add(route{method: "POST", path: "/v1/developer/webhook-endpoints", summary: "Register a webhook endpoint; its secret is shown once (admin+)", tag: "webhooks", auth: authOrg, minRole: storage.RoleAdmin, reqSchema: "WebhookEndpointInput", resSchema: "WebhookEndpointCreated", resStatus: 201, errors: []int{400, 403}, handler: h.create})
	s.add(route{method: "PATCH", path: "/v1/developer/webhook-endpoints/:endpoint_id", summary: "Change a webhook endpoint; status active resumes a failing one (admin+)", tag: "webhooks", auth: authOrg, minRole: storage.RoleAdmin, reqSchema: "WebhookEndpointPatch", resSchema: "WebhookEndpoint", errors: []int{400, 403, 404}, handler: h.patch})
	s.add(route{method: "DELETE", path: "/v1/developer/webhook-endpoints/:endpoint_id", summary: "Delete a webhook endpoint; its pending deliveries are abandoned (admin+)", tag: "webhooks", auth: authOrg, minRole: storage.RoleAdmin, resStatus: 204, errors: []int{403, 404}, handler: h.delete})
	s.add(route{method: "POST", path: "/v1/developer/webhook-endpoints/:endpoint_id/test", summary: "Send a webhook.test event, ignoring the filter; answers after the first attempt (admin+)", tag: "webhooks", auth: authOrg, minRole: storage.RoleAdmin, resSchema: "WebhookTestResult", errors: []int{403, 404}, handler: h.test})
}

type endpointView struct {
	ID         string   `json:"id"`
	Label      string   `json:"label"`
	URL        string   `json:"url"`
	Events     []string `json:"events"`
	Status     string   `json:"status"`
	SecretHint string   `json:"secret_hint"`
	CreatedAt  string   `json:"created_at"`
	UpdatedAt  string   `json:"updated_at"`
	Secret     string   `json:"secret,omitempty"`
}

func viewEndpoint(e storage.WebhookEndpoint) endpointView {
	ev := e.Events
	if ev == nil {
		ev = []string{}
	}
	return endpointView{ID: e.ID, Label: e.Label, URL: e.URL, Events: ev, Status: string(e.Status), SecretHint: e.SecretHint,
		CreatedAt: ts(e.CreatedAt), UpdatedAt: ts(e.UpdatedAt)}
}

type endpointInput struct {
	Label  *string   `json:"label"`
	URL    *string   `json:"url"`
	Events *[]string `json:"events"`
	Status *string   `json:"status"`
}

// checkEvents validates an events list and removes duplicates, keeping
// the first occurrence's order.
func checkEvents(f fields, in []string) []string {
	out := []string{}
	for _, e := range in {
		if !slices.Contains(EndpointEventTypes, e) {
			f.add("events", fmt.Sprintf("%q is not a valid event type.", e))
			continue
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

func (h *hooksAPI) list(c fiber.Ctx, p *storage.Principal) error {
	es, err := h.s.store.WebhookEndpoints(c.Context(), p.OrgID)
	if err != nil {
		return storeErr(err)
	}
	out := make([]endpointView, 0, len(es))
	for _, e := range es {
		out = append(out, viewEndpoint(e))
	}
	return c.JSON(out)
}

func (h *hooksAPI) create(c fiber.Ctx, p *storage.Principal) error {
	var in endpointInput
	if err := decode(c, &in); err != nil {
		return err
	}
	f := fields{}
	label := f.name("label", in.Label, true, 120)
	var u string
	if in.URL == nil {
		f.add("url", "This field is required.")
	} else if v, msg := webhook.CheckURL(*in.URL); msg != "" {
		f.add("url", msg)
	} else {
		u = v
	}
	var events []string
	if in.Events != nil {
		events = checkEvents(f, *in.Events)
	}
	if err := f.err(); err != nil {
		return err
	}
	e, err := h.s.store.CreateWebhookEndpoint(c.Context(), p.OrgID, label, u, events)
	if err != nil {
		return storeErr(err)
	}
	v := viewEndpoint(e)
	v.Secret = e.Secret
	return c.Status(http.StatusCreated).JSON(v)
}

func (h *hooksAPI) patch(c fiber.Ctx, p *storage.Principal) error {
	var in endpointInput
	if err := decode(c, &in); err != nil {
		return err
	}
	f := fields{}
	var patch storage.EndpointPatch
	if in.Label != nil {
		l := f.name("label", in.Label, true, 120)
		patch.Label = &l
	}
	if in.URL != nil {
		if v, msg := webhook.CheckURL(*in.URL); msg != "" {
			f.add("url", msg)
		} else {
			patch.URL = &v
		}
	}
	if in.Events != nil {
		ev := checkEvents(f, *in.Events)
		patch.Events = &ev
	}
	if in.Status != nil {
		switch st := storage.EndpointStatus(*in.Status); st {
		case storage.EndpointActive, storage.EndpointDisabled:
			patch.Status = &st
		default:
			f.add("status", `Must be "active" or "disabled".`)
		}
	}
	if err := f.err(); err != nil {
		return err
	}
	e, err := h.s.store.UpdateWebhookEndpoint(c.Context(), p.OrgID, c.Params("endpoint_id"), patch)
	if err != nil {
		return storeErr(err)
	}
	return c.JSON(viewEndpoint(e))
}

func (h *hooksAPI) delete(c fiber.Ctx, p *storage.Principal) error {
	if err := h.s.store.DeleteWebhookEndpoint(c.Context(), p.OrgID, c.Params("endpoint_id")); err != nil {
		return storeErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

type webhookTestResult struct {
	Success      bool    `json:"success"`
	EventID      string  `json:"event_id"`
	EventType    string  `json:"event_type"`
	Status       string  `json:"status"`
	ResponseCode *int    `json:"response_code"`
	Error        *string `json:"error"`
}

// test emits a webhook.test event to one endpoint and makes its first
// attempt here, so the answer says how it went. A failed first attempt
// stays on the schedule like any delivery (retried by the worker while the
// endpoint is active).
func (h *hooksAPI) test(c fiber.Ctx, p *storage.Principal) error {
	ctx := c.Context()
	id := c.Params("endpoint_id")
	ev, d, err := h.s.store.EmitTest(ctx, p.OrgID, id, map[string]any{
		"message": "This is a test event from voiced.", "endpoint_id": id, "sent_at": ts(time.Now()),
	})
	if err != nil {
		return storeErr(err)
	}
	res := webhookTestResult{EventID: ev.ID, EventType: ev.Type, Status: string(storage.DeliveryPending)}
	o, err := h.s.store.ClaimDelivery(ctx, d.ID, time.Now(), time.Minute)
	if errors.Is(err, storage.ErrNotFound) {
		return c.JSON(res) // the running worker got to it first
	}
	if err != nil {
		return err
	}
	rd, a, err := h.first.Attempt(ctx, o)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	res.Success = a.Delivered
	if err == nil {
		res.Status = string(rd.Status)
	}
	if a.StatusCode != 0 {
		code := a.StatusCode
		res.ResponseCode = &code
	}
	if a.Err != "" {
		msg := a.Err
		res.Error = &msg
	}
	return c.JSON(res)
}
