package control

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"

	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/realtime"
	"github.com/voiced/voiced/storage"
)

// The realtime front door's control-plane side: POST /v1/realtime/sessions
// (admits a web call and mints a short-lived token), the WebSocket route
// GET /v1/realtime (served by the media side's handler, mounted with
// Realtime.Mount), and what that handler needs from here: API key
// authentication, token redemption and inline-config admission.

// Refusals of the realtime helpers.
var (
	// ErrInvalidCredential means an API key or session token is unknown,
	// revoked, forged, expired or already used.
	ErrInvalidCredential = errors.New("control: invalid or expired credential")
)

// RealtimeTokenTTL is how long a session token of POST
// /v1/realtime/sessions may wait for its socket; the call is closed as
// failed (end_reason not_joined) when it expires unused.
const RealtimeTokenTTL = realtime.TokenTTL

// RealtimeGrant is what a session token grants: an admitted web call and
// whether it runs an inline configuration (no automatic behaviours).
type RealtimeGrant struct {
	Admission
	Inline bool
}

// Realtime is the control plane's side of realtime sessions: POST
// /v1/realtime/sessions, the WebSocket route GET /v1/realtime (served by
// the handler Mount attaches) and what that handler asks of the control
// plane (call.Credentials: AuthenticateAPIKey, ClaimRealtimeToken). The
// tokens waiting for their sockets are in the database
// (storage.RealtimeSessionToken), where every control replica can redeem
// them. Safe for concurrent use.
type Realtime struct {
	s      *Server
	tokens *realtime.Tokens
	// handler is the mounted WebSocket handler; nil answers 503.
	handler atomic.Pointer[fiber.Handler]
}

// Realtime returns the server's realtime sessions.
func (s *Server) Realtime() *Realtime { return s.rt }

// register adds the realtime routes.
func (r *Realtime) register() {
	r.s.add(route{method: "GET", path: "/v1/realtime", tag: "realtime", resStatus: http.StatusSwitchingProtocols,
		summary: "Realtime WebSocket (OpenAI Realtime event model): one connection = one call. Credential: Authorization: Bearer <API key or session token>, " +
			"or ?api_key=; ?agent_id= starts a saved agent at once, else the first session.update starts an inline call; optional input_audio_format, " +
			"output_audio_format (audio/pcmu, audio/pcma, g711_ulaw, g711_alaw, pcm16), input_rate, output_rate. Refusals before the upgrade: " +
			"400, 401, 402 (balance), 404 (agent), 426 (not a WebSocket request), 429 (concurrent sessions), 503",
		errors: []int{400, 401, 402, 404, 426, 429, 503}, raw: r.serve})
	r.s.add(route{method: "POST", path: "/v1/realtime/sessions", tag: "realtime", auth: authOrg, resStatus: http.StatusCreated,
		summary: "Start a realtime session: body agent_id (a saved agent) or config (an inline configuration: prompt required; voice, product, tools, " +
			"primary_language, additional_languages, background_track, telephony, placeholders, outbound, call_events), not both (400). " +
			"Returns call_id, room_name, media_url and a token for the socket, valid one minute, once",
		reqSchema: "RealtimeSessionInput", resSchema: "RealtimeSession",
		errors: []int{400, 402, 404, 503}, handler: r.createSession})
}

// realtimeSchemas are the OpenAPI components of POST /v1/realtime/sessions.
var realtimeSchemas = map[string]any{
	"RealtimeSessionInput": map[string]any{"type": "object", "properties": map[string]any{
		"agent_id": i64,
		"config":   map[string]any{"type": "object", "description": "inline agent configuration; prompt required; unknown keys are 400 config.<key>"},
	}},
	"RealtimeSession": obj(map[string]any{"call_id": i64, "room_name": str, "media_url": str,
		"token": map[string]any{"type": "string", "description": "bearer credential for GET /v1/realtime, valid one minute, once"}},
		"call_id", "room_name", "media_url", "token"),
}

// Mount attaches the realtime WebSocket handler (the media side's
// server, call.Node's, wired by cmd/voiced) to GET /v1/realtime. Until then the route
// answers 503.
func (r *Realtime) Mount(h http.Handler) {
	fh := adaptor.HTTPHandler(h)
	r.handler.Store(&fh)
}

func (r *Realtime) serve(c fiber.Ctx) error {
	h := r.handler.Load()
	if h == nil {
		return apiErr(http.StatusServiceUnavailable, "Realtime sessions are not available on this server.")
	}
	return (*h)(c)
}

// AuthenticateAPIKey resolves a secret API key (sk_live_) to its
// organization, for credentials that do not come through the router (the
// realtime socket's api_key parameter).
func (r *Realtime) AuthenticateAPIKey(ctx context.Context, key string) (int64, error) {
	if !strings.HasPrefix(key, storage.APIKeyPrefix) {
		return 0, ErrInvalidCredential
	}
	p, err := r.s.store.Keys.AuthAPIKey(ctx, storage.HashToken(key))
	if errors.Is(err, storage.ErrNotFound) {
		return 0, ErrInvalidCredential
	}
	if err != nil {
		return 0, err
	}
	r.s.auth.touch(p.KeyID, time.Now())
	return p.OrgID, nil
}

// createRealtimeSession is POST /v1/realtime/sessions.
func (r *Realtime) createSession(c fiber.Ctx, p *storage.Principal) error {
	var body map[string]json.RawMessage
	if err := decode(c, &body); err != nil {
		return err
	}
	present := func(k string) bool { v, ok := body[k]; return ok && string(v) != "null" }
	hasAgent, hasConfig := present("agent_id"), present("config")
	switch {
	case hasAgent && hasConfig:
		msg := "Send agent_id (a saved agent) or config (an inline configuration), not both."
		return &APIError{Status: http.StatusBadRequest, Detail: "invalid parameters", Fields: map[string][]string{"agent_id": {msg}, "config": {msg}}}
	case !hasAgent && !hasConfig:
		return fieldErr("agent_id", "Send agent_id (a saved agent) or config (an inline configuration).")
	}
	var agentID int64
	var cfg AgentConfig
	if hasAgent {
		if err := json.Unmarshal(body["agent_id"], &agentID); err != nil || agentID <= 0 {
			return fieldErr("agent_id", "Must be an agent's id (an integer).")
		}
	} else {
		var f fields
		if cfg, f = r.s.res.inlineConfig(body["config"], "config."); len(f) > 0 {
			return f.err()
		}
	}
	if r.handler.Load() == nil {
		return apiErr(http.StatusServiceUnavailable, "Realtime sessions are not available on this server.")
	}
	room := "realtime-" + realtime.RandHex(8)
	var adm Admission
	var err error
	if hasAgent {
		adm, err = r.s.calls.Admit(c.Context(), calllog.AdmitRequest{Direction: storage.DirectionWeb, OrgID: p.OrgID, AgentID: agentID, MediaRoomName: room})
	} else {
		adm, err = r.s.calls.AdmitConfig(c.Context(), p.OrgID, cfg, room)
	}
	switch {
	case errors.Is(err, calllog.ErrUnknownAgent):
		return apiErr(http.StatusNotFound, "Agent not found.")
	case errors.Is(err, calllog.ErrInsufficientBalance):
		return apiErr(http.StatusPaymentRequired, "Insufficient balance: add credit to start calls.")
	case err != nil:
		return err
	}
	var token string
	var exp time.Time
	grant, err := json.Marshal(RealtimeGrant{Admission: adm, Inline: !hasAgent})
	if err == nil {
		token, exp, err = r.tokens.Issue(c.Context(), adm.CallID, adm.OrgID, grant)
	}
	if err != nil {
		r.closeUnjoined(adm.CallID, "the realtime session token could not be stored")
		return err
	}
	u := r.s.cfg.PublicURL
	switch {
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + strings.TrimPrefix(u, "http://")
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"call_id": adm.CallID, "room_name": room, "media_url": u + "/v1/realtime",
		"token": token, "expires_at": ts(exp)})
}

// closeUnjoined ends an admitted realtime call that no socket joined.
func (r *Realtime) closeUnjoined(id int64, detail string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.s.calls.Finish(ctx, id, calllog.CallEnd{Status: storage.CallFailed, Reason: "not_joined", Detail: detail}); err != nil && r.s.log != nil {
		r.s.log.Warn("unjoined realtime call not closed", "call_id", id, "err", err)
	}
}

// ClaimRealtimeToken redeems a session token once, before it expires, and
// returns the call it admitted; anything else is ErrInvalidCredential.
// Any replica sharing the database may redeem a token another issued.
func (r *Realtime) ClaimRealtimeToken(ctx context.Context, token string) (RealtimeGrant, error) {
	grant, err := r.tokens.Claim(ctx, token)
	if errors.Is(err, realtime.ErrInvalidToken) {
		return RealtimeGrant{}, ErrInvalidCredential
	}
	if err != nil {
		return RealtimeGrant{}, err
	}
	var g RealtimeGrant
	if err := json.Unmarshal(grant, &g); err != nil {
		return RealtimeGrant{}, err
	}
	return g, nil
}
