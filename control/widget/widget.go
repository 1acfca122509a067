package widget

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/web"
)

// Widget signalling (the spec leaves it out; docs/decisions.md, "Browser
// calls"): the page's widget POSTs its publishable key and a complete SDP
// offer to /v1/widget/calls; the server checks the Origin against the
// key's allowed domains, resolves the agent, admits and bills the call as
// web, and answers with the SDP answer in the same response.

// widgetCallRate bounds call starts per key and client address: the
// endpoint is public, and every admitted call costs the key's organization
// money.
var widgetCallRate = coord.Rate{N: 20, Per: time.Minute}

// MaxOfferBytes bounds an SDP offer (a browser's is 2-6 KB).
const MaxOfferBytes = 64 << 10

// KeyByValue finds the publishable key a widget request carries.
type KeyByValue interface {
	PublishableKeyByValue(ctx context.Context, key string) (storage.PublishableKey, error)
}

// Limiter counts widget requests per key and client address
// (coord.Limiter).
type Limiter interface {
	Allow(ctx context.Context, key string, r coord.Rate) (coord.Decision, error)
}

// CallRequest is a widget call that passed the key's checks.
type CallRequest struct {
	OrgID, AgentID int64
	// Host is the page's host ("" without an Origin); Origin is the raw
	// header.
	Host, Origin string
	// Incoming is the answer of the incoming exchange in webhook mode
	// (prompt, first message, voice, variables and metadata overrides);
	// zero in agent mode.
	Incoming webhook.IncomingResponse
	// Offer is the browser's SDP offer.
	Offer string
}

// Call is a started widget call.
type Call struct {
	ID, AgentID int64
	// Answer is the SDP answer.
	Answer string
	// MaxDuration is how long the balance lets the call run; 0 means no
	// limit.
	MaxDuration time.Duration
}

// Calls is the call side the widget hands admitted requests to: it admits
// and bills the call and answers the offer with browser media, and hands
// out the ICE servers the browser's peer connection uses.
type Calls interface {
	Start(ctx context.Context, r CallRequest) (Call, error)
	ICEServers(keyPrefix string) fiber.Map
}

// handlers holds the widget routes' collaborators.
type handlers struct {
	log     *slog.Logger
	keys    KeyByValue
	limiter Limiter
	ex      *webhook.Exchanger
	calls   Calls
}

// Routes returns the widget's public routes: call signalling, ICE servers,
// the script and the mic test page. ex runs webhook-mode keys' incoming
// exchanges (see HookStore).
func Routes(log *slog.Logger, keys KeyByValue, limiter Limiter, ex *webhook.Exchanger, calls Calls) []api.Route {
	h := &handlers{log: log, keys: keys, limiter: limiter, ex: ex, calls: calls}
	return []api.Route{
		{Method: "OPTIONS", Path: "/v1/widget/calls", Summary: "CORS preflight of widget calls", Tag: "widget", ResStatus: 204, Raw: h.preflight},
		{Method: "POST", Path: "/v1/widget/calls", Summary: "Start a widget call: publishable key and SDP offer in, SDP answer out (Origin must be an allowed domain; 20 per minute per key and address)", Tag: "widget", ReqSchema: "WidgetCallInput", ResSchema: "WidgetCall", ResStatus: 201, Errors: []int{400, 401, 402, 403, 404, 429, 502, 503}, Handler: h.call},
		{Method: "GET", Path: "/v1/widget/ice-servers", Summary: "The STUN/TURN servers (with credentials) the widget's peer connection uses; query publishable_key (the call's checks, 60 per minute per key and address)", Tag: "widget", ResSchema: "WidgetICEServers", Errors: []int{401, 403, 429}, Handler: h.iceServers},
		{Method: "GET", Path: "/widget.js", Summary: "The embeddable widget script (<script src=\".../widget.js\" data-key=\"pk_live_...\">)", Tag: "widget", Raw: h.script},
		{Method: "GET", Path: "/mic", Summary: "Mic-session test page: talk to any agent of the organization from this browser", Tag: "widget", Raw: h.micPage},
	}
}

// cors sets the CORS headers that let a page on origin read the answer.
// Any origin may read it: the POST is where the key's allowed domains are
// enforced, it carries no credentials, and a refused page should be able
// to show why.
func cors(c fiber.Ctx, origin string) {
	c.Set("Vary", "Origin")
	if origin != "" {
		c.Set("Access-Control-Allow-Origin", origin)
	}
}

func (h *handlers) preflight(c fiber.Ctx) error {
	cors(c, c.Get("Origin"))
	c.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	c.Set("Access-Control-Allow-Headers", "Content-Type")
	c.Set("Access-Control-Max-Age", "600")
	return c.SendStatus(http.StatusNoContent)
}

func (h *handlers) script(c fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	c.Set("Access-Control-Allow-Origin", "*")
	return c.Send(web.WidgetJS())
}

func (h *handlers) micPage(c fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; media-src blob: mediastream:; connect-src 'self'")
	return c.Send(web.MicPage())
}

type widgetCallInput struct {
	PublishableKey *string `json:"publishable_key"`
	SDP            *string `json:"sdp"`
}

var (
	errWidgetKey    = api.Err(http.StatusUnauthorized, "The publishable key is not valid.")
	errWidgetOrigin = api.Err(http.StatusForbidden, "This site is not allowed to use this publishable key; add its domain to the key's allowed domains.")
)

func (h *handlers) call(c fiber.Ctx, _ *storage.Principal) error {
	origin := c.Get("Origin")
	ctx := c.Context()
	// Every answer is readable by the page, refusals included, so the
	// widget can say why; the refusals themselves are the gate.
	cors(c, origin)
	var in widgetCallInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	if in.PublishableKey == nil || strings.TrimSpace(*in.PublishableKey) == "" {
		f.Add("publishable_key", "This field is required.")
	}
	if in.SDP == nil || strings.TrimSpace(*in.SDP) == "" {
		f.Add("sdp", "This field is required: the browser's SDP offer.")
	} else if len(*in.SDP) > MaxOfferBytes {
		f.Add("sdp", "The SDP offer is too large.")
	}
	if err := f.Err(); err != nil {
		return err
	}
	k, err := h.key(c, *in.PublishableKey, "widget-call", widgetCallRate)
	if err != nil {
		return err
	}
	host := originHost(origin)
	agentID, x, err := h.resolveAgent(ctx, k, host)
	if err != nil {
		return err
	}
	call, err := h.calls.Start(ctx, CallRequest{OrgID: k.OrgID, AgentID: agentID, Host: host, Origin: origin, Incoming: x, Offer: *in.SDP})
	if err != nil {
		return err
	}
	out := fiber.Map{"call_id": call.ID, "type": "answer", "sdp": call.Answer, "agent_id": call.AgentID}
	if call.MaxDuration > 0 {
		out["max_duration_seconds"] = int64(call.MaxDuration / time.Second)
	}
	return c.Status(http.StatusCreated).JSON(out)
}

// key checks a widget request's publishable key, in order: it exists and
// is active (401), the page's Origin is allowed (403), the client address
// is within rate for this kind of request (429), the key is enabled (403).
func (h *handlers) key(c fiber.Ctx, raw, kind string, rate coord.Rate) (storage.PublishableKey, error) {
	ctx := c.Context()
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, storage.PublishableKeyPrefix) {
		return storage.PublishableKey{}, errWidgetKey
	}
	k, err := h.keys.PublishableKeyByValue(ctx, raw)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && !k.IsActive) {
		return storage.PublishableKey{}, errWidgetKey
	}
	if err != nil {
		return storage.PublishableKey{}, err
	}
	if !originAllowed(c.Get("Origin"), k.AllowedDomains) {
		return storage.PublishableKey{}, errWidgetOrigin
	}
	d, err := h.limiter.Allow(ctx, kind+":"+strconv.FormatInt(k.ID, 10)+":"+c.IP(), rate)
	if err != nil {
		return storage.PublishableKey{}, err
	}
	if !d.Allowed {
		return storage.PublishableKey{}, api.Err(http.StatusTooManyRequests, "Too many calls started from this address; try again in a minute.")
	}
	if !k.IsEnabled {
		return storage.PublishableKey{}, api.Err(http.StatusForbidden, "This widget is turned off.")
	}
	return k, nil
}

// widgetICERate bounds ICE server requests per key and client address
// (each hands out TURN credentials; a call makes one).
var widgetICERate = coord.Rate{N: 60, Per: time.Minute}

// iceServers answers GET /v1/widget/ice-servers: the STUN and TURN servers
// the widget's RTCPeerConnection uses, with credentials for this key (the
// TURN username names the key's prefix), fetched before the offer is
// made. The checks are the call's, with their own rate.
func (h *handlers) iceServers(c fiber.Ctx, _ *storage.Principal) error {
	cors(c, c.Get("Origin"))
	c.Set(fiber.HeaderCacheControl, "no-store")
	k, err := h.key(c, c.Query("publishable_key"), "widget-ice", widgetICERate)
	if err != nil {
		return err
	}
	return c.JSON(h.calls.ICEServers(k.KeyPrefix))
}

// resolveAgent names the agent of a widget call: the key's own in agent
// mode; in webhook mode the answer of the incoming exchange with the key's
// webhook URL (or, without one, the org's legacy URL), falling back to the
// key's agent when the webhook names none or does not answer.
func (h *handlers) resolveAgent(ctx context.Context, k storage.PublishableKey, host string) (int64, webhook.IncomingResponse, error) {
	var none webhook.IncomingResponse
	if k.Mode == storage.PublishableModeAgent {
		if k.AgentID == nil {
			return 0, none, api.Err(http.StatusNotFound, "This widget has no agent; assign one to its publishable key.")
		}
		return *k.AgentID, none, nil
	}
	xctx := ctx
	if k.WebhookURL != nil {
		xctx = context.WithValue(ctx, keyHookURL{}, *k.WebhookURL)
	}
	ans, err := h.ex.Incoming(xctx, k.OrgID, webhook.IncomingRequest{Channel: webhook.Web, AgentID: k.AgentID,
		Direction: storage.DirectionWeb, FromNumber: "web:" + host, ToNumber: "widget:" + k.KeyPrefix})
	switch {
	case err == nil && ans.Reject:
		return 0, none, api.Err(http.StatusForbidden, "The site declined the call.")
	case err == nil && ans.AgentID != nil:
		return *ans.AgentID, ans, nil
	case err == nil && k.AgentID != nil:
		return *k.AgentID, ans, nil
	case err == nil:
		return 0, none, api.Err(http.StatusBadGateway, "The widget's webhook did not name an agent.")
	case k.AgentID != nil:
		if h.log != nil {
			h.log.Warn("widget webhook failed; using the key's agent", "key_id", k.ID, "err", err)
		}
		return *k.AgentID, none, nil
	}
	if h.log != nil {
		h.log.Warn("widget webhook failed", "key_id", k.ID, "err", err)
	}
	return 0, none, api.Err(http.StatusBadGateway, "The widget's webhook did not answer.")
}

// keyHookURL is the context key of a webhook-mode key's own URL.
type keyHookURL struct{}

// HookStore is the widget Exchanger's view of where an organization's
// incoming exchange goes: a webhook-mode key's URL when the request
// carries one (signed with the org's legacy secret when it has one), else
// the org's legacy webhook.
type HookStore struct{ Legacy webhook.LegacyStore }

// GetWebhook implements webhook.LegacyStore.
func (h HookStore) GetWebhook(ctx context.Context, orgID int64) (storage.Webhook, error) {
	legacy, err := h.Legacy.GetWebhook(ctx, orgID)
	u, ok := ctx.Value(keyHookURL{}).(string)
	if !ok {
		return legacy, err
	}
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return storage.Webhook{}, err
	}
	return storage.Webhook{OrgID: orgID, URL: u, Secret: legacy.Secret}, nil
}
