package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/storage"
)

// The realtime front door's control-plane side: POST /v1/realtime/sessions
// (admits a web call and mints a short-lived token), the WebSocket route
// GET /v1/realtime (served by the media side's handler, mounted with
// Sessions.Mount), and what that handler needs from here: API key
// authentication, token redemption and inline-config admission.

// Refusals of the realtime helpers.
var (
	// ErrInvalidCredential means an API key or session token is unknown,
	// revoked, forged, expired or already used.
	ErrInvalidCredential = errors.New("control: invalid or expired credential")
)

// Grant is what a session token grants: an admitted web call and
// whether it runs an inline configuration (no automatic behaviours).
type Grant[C any] struct {
	calllog.Admission[C]
	Inline bool
}

// Admitter admits the calls of realtime sessions and closes those no
// socket joined (calllog.Log).
type Admitter[C any] interface {
	Admit(ctx context.Context, r calllog.AdmitRequest) (calllog.Admission[C], error)
	AdmitConfig(ctx context.Context, orgID int64, cfg C, room string) (calllog.Admission[C], error)
	Finish(ctx context.Context, callID int64, end calllog.CallEnd) error
}

// Inliner validates an inline configuration; messages are keyed
// prefix+field.
type Inliner[C any] interface {
	Inline(raw json.RawMessage, prefix string) (C, api.Fields)
}

// KeyStore resolves a secret API key by its hash.
type KeyStore interface {
	AuthAPIKey(ctx context.Context, hash string) (storage.Principal, error)
}

// Config holds the sessions' settings.
type Config struct {
	// PublicURL is the base of a session's media_url.
	PublicURL string
	// SigningKey signs session tokens (the URL-signing key).
	SigningKey []byte
	// Touch records that API key keyID was used (the router's
	// last-used flusher); nil does nothing.
	Touch func(keyID string, at time.Time)
}

// Sessions is the control plane's side of realtime sessions: POST
// /v1/realtime/sessions, the WebSocket route GET /v1/realtime (served by
// the handler Mount attaches) and what that handler asks of the control
// plane (call.Credentials: AuthenticateAPIKey, ClaimRealtimeToken). The
// tokens waiting for their sockets are in the database
// (storage.RealtimeSessionToken), where every control replica can redeem
// them. Safe for concurrent use.
type Sessions[C any] struct {
	cfg    Config
	log    *slog.Logger
	calls  Admitter[C]
	schema Inliner[C]
	keys   KeyStore
	tokens *Tokens
	// handler is the mounted WebSocket handler; nil answers 503.
	handler atomic.Pointer[fiber.Handler]
	// placer, when set, picks the media node of each session.
	placer atomic.Pointer[Placer]
}

// Placer picks the media node a new session runs on: the base of its
// WebSocket URL (ws://host:port or wss://...), or an error when no node
// can take it.
type Placer func(ctx context.Context) (string, error)

// PlaceOn makes sessions run on the media nodes p picks (voiced control,
// which serves no socket itself): a session's media_url is its node's.
func (r *Sessions[C]) PlaceOn(p Placer) { r.placer.Store(&p) }

// NewSessions returns the realtime sessions; tokens are stored in store
// and swept when they expire unused.
func NewSessions[C any](cfg Config, log *slog.Logger, calls Admitter[C], schema Inliner[C], keys KeyStore, store Store) (*Sessions[C], error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Sessions[C]{cfg: cfg, log: log, calls: calls, schema: schema, keys: keys}
	var err error
	if r.tokens, err = NewTokens(store, cfg.SigningKey, log, func(id int64) {
		r.closeUnjoined(id, "the realtime session token expired unused")
	}); err != nil {
		return nil, err
	}
	return r, nil
}

// Routes returns the realtime routes.
func (r *Sessions[C]) Routes() []api.Route {
	return []api.Route{{Method: "GET", Path: "/v1/realtime", Tag: "realtime", ResStatus: http.StatusSwitchingProtocols,
		Summary: "Realtime WebSocket (OpenAI Realtime event model): one connection = one call. Credential: Authorization: Bearer <API key or session token>, " +
			"or ?api_key=; ?agent_id= starts a saved agent at once, else the first session.update starts an inline call; optional input_audio_format, " +
			"output_audio_format (audio/pcmu, audio/pcma, g711_ulaw, g711_alaw, pcm16), input_rate, output_rate. Refusals before the upgrade: " +
			"400, 401, 402 (balance), 404 (agent), 426 (not a WebSocket request), 429 (concurrent sessions), 503",
		Errors: []int{400, 401, 402, 404, 426, 429, 503}, Raw: r.serve},
		{Method: "POST", Path: "/v1/realtime/sessions", Tag: "realtime", Auth: api.AuthOrg, ResStatus: http.StatusCreated,
			Summary: "Start a realtime session: body agent_id (a saved agent) or config (an inline configuration: prompt required; voice, product, tools, " +
				"primary_language, additional_languages, background_track, telephony, placeholders, outbound, call_events), not both (400). " +
				"Returns call_id, room_name, media_url and a token for the socket, valid one minute, once",
			ReqSchema: "RealtimeSessionInput", ResSchema: "RealtimeSession",
			Errors: []int{400, 402, 404, 503}, Handler: r.createSession}}
}

// Mount attaches the realtime WebSocket handler (the media side's
// server, call.Node's, wired by cmd/voiced) to GET /v1/realtime. Until then the route
// answers 503.
func (r *Sessions[C]) Mount(h http.Handler) {
	fh := adaptor.HTTPHandler(h)
	r.handler.Store(&fh)
}

func (r *Sessions[C]) serve(c fiber.Ctx) error {
	h := r.handler.Load()
	if h == nil {
		return api.Err(http.StatusServiceUnavailable, "Realtime sessions are not available on this server.")
	}
	return (*h)(c)
}

// AuthenticateAPIKey resolves a secret API key (sk_live_) to its
// organization, for credentials that do not come through the router (the
// realtime socket's api_key parameter).
func (r *Sessions[C]) AuthenticateAPIKey(ctx context.Context, key string) (int64, error) {
	if !strings.HasPrefix(key, storage.APIKeyPrefix) {
		return 0, ErrInvalidCredential
	}
	p, err := r.keys.AuthAPIKey(ctx, storage.HashToken(key))
	if errors.Is(err, storage.ErrNotFound) {
		return 0, ErrInvalidCredential
	}
	if err != nil {
		return 0, err
	}
	if r.cfg.Touch != nil {
		r.cfg.Touch(p.KeyID, time.Now())
	}
	return p.OrgID, nil
}

// createSession is POST /v1/realtime/sessions.
func (r *Sessions[C]) createSession(c fiber.Ctx, p *storage.Principal) error {
	var body map[string]json.RawMessage
	if err := api.Decode(c, &body); err != nil {
		return err
	}
	present := func(k string) bool { v, ok := body[k]; return ok && string(v) != "null" }
	hasAgent, hasConfig := present("agent_id"), present("config")
	switch {
	case hasAgent && hasConfig:
		msg := "Send agent_id (a saved agent) or config (an inline configuration), not both."
		return &api.Error{Status: http.StatusBadRequest, Detail: "invalid parameters", Fields: map[string][]string{"agent_id": {msg}, "config": {msg}}}
	case !hasAgent && !hasConfig:
		return api.FieldErr("agent_id", "Send agent_id (a saved agent) or config (an inline configuration).")
	}
	var agentID int64
	var cfg C
	if hasAgent {
		if err := json.Unmarshal(body["agent_id"], &agentID); err != nil || agentID <= 0 {
			return api.FieldErr("agent_id", "Must be an agent's id (an integer).")
		}
	} else {
		var f api.Fields
		if cfg, f = r.schema.Inline(body["config"], "config."); len(f) > 0 {
			return f.Err()
		}
	}
	u := api.WebSocketURL(r.cfg.PublicURL)
	if p := r.placer.Load(); p != nil {
		// Placed before admission: no call is admitted for want of a node.
		var err error
		if u, err = (*p)(c.Context()); err != nil {
			r.log.Warn("realtime session not placed", "err", err)
			return api.Err(http.StatusServiceUnavailable, "No media node can take the session now; try again shortly.")
		}
	} else if r.handler.Load() == nil {
		return api.Err(http.StatusServiceUnavailable, "Realtime sessions are not available on this server.")
	}
	room := "realtime-" + RandHex(8)
	var adm calllog.Admission[C]
	var err error
	if hasAgent {
		adm, err = r.calls.Admit(c.Context(), calllog.AdmitRequest{Direction: storage.DirectionWeb, OrgID: p.OrgID, AgentID: agentID, MediaRoomName: room})
	} else {
		adm, err = r.calls.AdmitConfig(c.Context(), p.OrgID, cfg, room)
	}
	switch {
	case errors.Is(err, calllog.ErrUnknownAgent):
		return api.Err(http.StatusNotFound, "Agent not found.")
	case errors.Is(err, calllog.ErrInsufficientBalance):
		return api.Err(http.StatusPaymentRequired, "Insufficient balance: add credit to start calls.")
	case err != nil:
		return err
	}
	var token string
	var exp time.Time
	grant, err := json.Marshal(Grant[C]{Admission: adm, Inline: !hasAgent})
	if err == nil {
		token, exp, err = r.tokens.Issue(c.Context(), adm.CallID, adm.OrgID, grant)
	}
	if err != nil {
		r.closeUnjoined(adm.CallID, "the realtime session token could not be stored")
		return err
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"call_id": adm.CallID, "room_name": room, "media_url": u + "/v1/realtime",
		"token": token, "expires_at": api.TS(exp)})
}

// AgentToken admits a call of a saved agent for an in-process client
// (the simulated caller) and issues its session token, as POST
// /v1/realtime/sessions does; simulation marks the call is_simulation.
// It returns the token, the realtime URL to connect to and the call id.
func (r *Sessions[C]) AgentToken(ctx context.Context, orgID, agentID int64, simulation bool) (token, mediaURL string, callID int64, err error) {
	u := api.WebSocketURL(r.cfg.PublicURL)
	if p := r.placer.Load(); p != nil {
		if u, err = (*p)(ctx); err != nil {
			return "", "", 0, err
		}
	} else if r.handler.Load() == nil {
		return "", "", 0, errors.New("realtime sessions are not available on this server")
	}
	adm, err := r.calls.Admit(ctx, calllog.AdmitRequest{Direction: storage.DirectionWeb, OrgID: orgID, AgentID: agentID,
		MediaRoomName: "realtime-" + RandHex(8), IsSimulation: simulation})
	if err != nil {
		return "", "", 0, err
	}
	grant, err := json.Marshal(Grant[C]{Admission: adm})
	if err == nil {
		token, _, err = r.tokens.Issue(ctx, adm.CallID, adm.OrgID, grant)
	}
	if err != nil {
		r.closeUnjoined(adm.CallID, "the realtime session token could not be stored")
		return "", "", 0, err
	}
	return token, u + "/v1/realtime", adm.CallID, nil
}

// closeUnjoined ends an admitted realtime call that no socket joined.
func (r *Sessions[C]) closeUnjoined(id int64, detail string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.calls.Finish(ctx, id, calllog.CallEnd{Status: storage.CallFailed, Reason: "not_joined", Detail: detail}); err != nil {
		r.log.Warn("unjoined realtime call not closed", "call_id", id, "err", err)
	}
}

// ClaimRealtimeToken redeems a session token once, before it expires, and
// returns the call it admitted; anything else is ErrInvalidCredential.
// Any replica sharing the database may redeem a token another issued.
func (r *Sessions[C]) ClaimRealtimeToken(ctx context.Context, token string) (Grant[C], error) {
	grant, err := r.tokens.Claim(ctx, token)
	if errors.Is(err, ErrInvalidToken) {
		return Grant[C]{}, ErrInvalidCredential
	}
	if err != nil {
		return Grant[C]{}, err
	}
	var g Grant[C]
	if err := json.Unmarshal(grant, &g); err != nil {
		return Grant[C]{}, err
	}
	return g, nil
}
