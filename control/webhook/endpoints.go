package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// EventTypes are the values an endpoint may subscribe to (spec section
// 6.1). webhook.test is synthetic and cannot be subscribed.
var EventTypes = []string{"telephony.incoming", "telephony.complete", "telephony.tool", "web.incoming", "web.complete", "web.tool",
	"call.graded", "issue.reported", "test-call.completed", "alert.triggered"}

// EndpointStore is what the endpoint routes need from storage.
type EndpointStore interface {
	WebhookEndpoints(ctx context.Context, orgID int64) ([]storage.WebhookEndpoint, error)
	CreateWebhookEndpoint(ctx context.Context, orgID int64, label, url string, events []string) (storage.WebhookEndpoint, error)
	UpdateWebhookEndpoint(ctx context.Context, orgID int64, id string, p storage.EndpointPatch) (storage.WebhookEndpoint, error)
	DeleteWebhookEndpoint(ctx context.Context, orgID int64, id string) error
}

// TestOutbox emits a webhook.test event and claims its delivery, so the
// test route can make the first attempt itself.
type TestOutbox interface {
	EmitTest(ctx context.Context, orgID int64, endpointID string, data any) (storage.Event, storage.Delivery, error)
	ClaimDelivery(ctx context.Context, id int64, now time.Time, lease time.Duration) (storage.Outgoing, error)
}

// endpointHandlers holds the endpoint routes' collaborators: first is the
// worker that makes a test event's first attempt in the request.
type endpointHandlers struct {
	store  EndpointStore
	outbox TestOutbox
	first  *Worker
}

// EndpointRoutes returns the /v1/developer/webhook-endpoints routes; first
// makes a test event's first attempt (its own Worker, apart from the
// delivery loop).
func EndpointRoutes(store EndpointStore, outbox TestOutbox, first *Worker) []api.Route {
	h := &endpointHandlers{store: store, outbox: outbox, first: first}
	return []api.Route{
		{Method: "GET", Path: "/v1/developer/webhook-endpoints", Summary: "List webhook endpoints, oldest first (admin+)", Tag: "webhooks", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResSchema: "WebhookEndpoint", ResList: true, Errors: []int{403}, Handler: h.list},
		{Method: "POST", Path: "/v1/developer/webhook-endpoints", Summary: "Register a webhook endpoint; its secret is shown once (admin+)", Tag: "webhooks", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "WebhookEndpointInput", ResSchema: "WebhookEndpointCreated", ResStatus: 201, Errors: []int{400, 403}, Handler: h.create},
		{Method: "PATCH", Path: "/v1/developer/webhook-endpoints/:endpoint_id", Summary: "Change a webhook endpoint; status active resumes a failing one (admin+)", Tag: "webhooks", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "WebhookEndpointPatch", ResSchema: "WebhookEndpoint", Errors: []int{400, 403, 404}, Handler: h.patch},
		{Method: "DELETE", Path: "/v1/developer/webhook-endpoints/:endpoint_id", Summary: "Delete a webhook endpoint; its pending deliveries are abandoned (admin+)", Tag: "webhooks", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResStatus: 204, Errors: []int{403, 404}, Handler: h.delete},
		{Method: "POST", Path: "/v1/developer/webhook-endpoints/:endpoint_id/test", Summary: "Send a webhook.test event, ignoring the filter; answers after the first attempt (admin+)", Tag: "webhooks", Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResSchema: "WebhookTestResult", Errors: []int{403, 404}, Handler: h.test},
	}
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
		CreatedAt: api.TS(e.CreatedAt), UpdatedAt: api.TS(e.UpdatedAt)}
}

type endpointInput struct {
	Label  *string   `json:"label"`
	URL    *string   `json:"url"`
	Events *[]string `json:"events"`
	Status *string   `json:"status"`
}

// checkEvents validates an events list and removes duplicates, keeping
// the first occurrence's order.
func checkEvents(f api.Fields, in []string) []string {
	out := []string{}
	for _, e := range in {
		if !slices.Contains(EventTypes, e) {
			f.Add("events", fmt.Sprintf("%q is not a valid event type.", e))
			continue
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

func (h *endpointHandlers) list(c fiber.Ctx, p *storage.Principal) error {
	es, err := h.store.WebhookEndpoints(c.Context(), p.OrgID)
	if err != nil {
		return api.StoreErr(err)
	}
	out := make([]endpointView, 0, len(es))
	for _, e := range es {
		out = append(out, viewEndpoint(e))
	}
	return c.JSON(out)
}

func (h *endpointHandlers) create(c fiber.Ctx, p *storage.Principal) error {
	var in endpointInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	label := f.Name("label", in.Label, true, 120)
	var u string
	if in.URL == nil {
		f.Add("url", "This field is required.")
	} else if v, msg := CheckURL(*in.URL); msg != "" {
		f.Add("url", msg)
	} else {
		u = v
	}
	var events []string
	if in.Events != nil {
		events = checkEvents(f, *in.Events)
	}
	if err := f.Err(); err != nil {
		return err
	}
	e, err := h.store.CreateWebhookEndpoint(c.Context(), p.OrgID, label, u, events)
	if err != nil {
		return api.StoreErr(err)
	}
	v := viewEndpoint(e)
	v.Secret = e.Secret
	return c.Status(http.StatusCreated).JSON(v)
}

func (h *endpointHandlers) patch(c fiber.Ctx, p *storage.Principal) error {
	var in endpointInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	var patch storage.EndpointPatch
	if in.Label != nil {
		l := f.Name("label", in.Label, true, 120)
		patch.Label = &l
	}
	if in.URL != nil {
		if v, msg := CheckURL(*in.URL); msg != "" {
			f.Add("url", msg)
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
			f.Add("status", `Must be "active" or "disabled".`)
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	e, err := h.store.UpdateWebhookEndpoint(c.Context(), p.OrgID, c.Params("endpoint_id"), patch)
	if err != nil {
		return api.StoreErr(err)
	}
	return c.JSON(viewEndpoint(e))
}

func (h *endpointHandlers) delete(c fiber.Ctx, p *storage.Principal) error {
	if err := h.store.DeleteWebhookEndpoint(c.Context(), p.OrgID, c.Params("endpoint_id")); err != nil {
		return api.StoreErr(err)
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
func (h *endpointHandlers) test(c fiber.Ctx, p *storage.Principal) error {
	ctx := c.Context()
	id := c.Params("endpoint_id")
	ev, d, err := h.outbox.EmitTest(ctx, p.OrgID, id, map[string]any{
		"message": "This is a test event from voiced.", "endpoint_id": id, "sent_at": api.TS(time.Now()),
	})
	if err != nil {
		return api.StoreErr(err)
	}
	res := webhookTestResult{EventID: ev.ID, EventType: ev.Type, Status: string(storage.DeliveryPending)}
	o, err := h.outbox.ClaimDelivery(ctx, d.ID, time.Now(), time.Minute)
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
