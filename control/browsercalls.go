package control

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/calllog"
)

// BrowserMedia is the WebRTC side that browser calls (the widget and mic
// sessions) are handed to once admitted: call.Browser (media/webrtc), wired
// by cmd/voiced. It owns each call from the answer on and reports its end
// through the CallLog (Finish, or Fail when the media never connected).
type BrowserMedia interface {
	// Check reports whether a new browser call could start now; an error
	// wrapping ErrMediaUnavailable when not (no capacity, shutting down).
	Check(ctx context.Context) error
	// Answer starts the media of admitted call c for the browser's SDP
	// offer and returns the SDP answer, complete with ICE candidates. An
	// unusable offer gives an error wrapping ErrBadOffer.
	Answer(ctx context.Context, c BrowserCall, offer string) (string, error)
}

// BrowserCall is an admitted browser call as the media side needs it.
// Admission.Agent already carries any per-call overrides (the widget
// webhook's prompt, first message, voice and variables).
type BrowserCall struct {
	Admission
	// Direction is web (the widget) or test (a mic session).
	Direction string
	// Origin is the page's origin for widget calls.
	Origin string
	// Metadata is what the widget webhook asked to keep with the call.
	Metadata map[string]any
}

// BrowserICE is implemented by a BrowserMedia whose node has STUN or TURN
// servers for browsers: the iceServers a browser's RTCPeerConnection
// should use, with credentials tied to id (time-limited TURN REST
// credentials, or static ones), and when they expire (zero if never).
type BrowserICE interface {
	ICEServers(id string) ([]ICEServer, time.Time)
}

// ICEServer is an RTCIceServer as browsers take it.
type ICEServer struct {
	URLs       []string `json:"urls"`
	Username   string   `json:"username,omitempty"`
	Credential string   `json:"credential,omitempty"`
}

// iceServers returns the browser ICE servers for id and the API's view of
// their expiry: always a list (empty without servers), expires_at null
// when the credentials do not expire.
func (s *Server) iceServers(id string) fiber.Map {
	out := fiber.Map{"ice_servers": []ICEServer{}, "ice_servers_expire_at": nil}
	bi, ok := s.res.browser.(BrowserICE)
	if !ok {
		return out
	}
	servers, exp := bi.ICEServers(id)
	if servers != nil {
		out["ice_servers"] = servers
	}
	if !exp.IsZero() {
		out["ice_servers_expire_at"] = ts(exp)
	}
	return out
}

// WithBrowserMedia hands browser calls to m. Without it the widget and
// mic-session endpoints answer 503 and 502.
func WithBrowserMedia(m BrowserMedia) Option { return func(r *resources) { r.browser = m } }

// applyOverrides puts the incoming exchange's per-call answers into cfg:
// prompt, first message and voice replace the agent's, and variables fill
// {{name}} placeholders of the prompt and first message.
func applyOverrides(cfg *AgentConfig, prompt, first, voice string, vars map[string]string) {
	if prompt != "" {
		cfg.Prompt = prompt
	}
	if first != "" {
		cfg.FirstMessage = &first
	}
	if voice != "" {
		cfg.Voice = voice
	}
	if len(vars) == 0 {
		return
	}
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{{"+k+"}}", v, "{{ "+k+" }}", v)
	}
	r := strings.NewReplacer(pairs...)
	cfg.Prompt = r.Replace(cfg.Prompt)
	if cfg.FirstMessage != nil {
		fm := r.Replace(*cfg.FirstMessage)
		cfg.FirstMessage = &fm
	}
}

// browserMedia returns the media side if it can take a call now; status
// is the HTTP status of the refusal (the widget says 503, mic sessions 502
// as the spec has it).
func (s *Server) browserMedia(ctx context.Context, status int) (BrowserMedia, error) {
	m := s.res.browser
	if m == nil {
		return nil, apiErr(status, "Browser calls are not available on this server.")
	}
	if err := m.Check(ctx); err != nil {
		return nil, apiErr(status, "No capacity for a browser call right now; try again shortly.")
	}
	return m, nil
}

// startBrowserMedia hands admitted call bc to m with the browser's offer
// and returns the answer. When the media cannot start, the call is failed
// without a charge.
func (s *Server) startBrowserMedia(ctx context.Context, m BrowserMedia, bc BrowserCall, offer string) (string, error) {
	answer, err := m.Answer(ctx, bc, offer)
	if err == nil {
		return answer, nil
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if ferr := s.calls.Fail(fctx, bc.CallID, "media_failed", err.Error()); ferr != nil && s.log != nil {
		s.log.Error("fail browser call", "call_id", bc.CallID, "err", ferr)
	}
	switch {
	case errors.Is(err, ErrBadOffer):
		return "", fieldErr("sdp", "The SDP offer cannot be used: it must offer Opus audio with ICE credentials and a DTLS fingerprint.")
	case errors.Is(err, ErrMediaUnavailable):
		return "", apiErr(http.StatusServiceUnavailable, "No capacity for a browser call right now; try again shortly.")
	}
	return "", fmt.Errorf("browser call %d: %w", bc.CallID, err)
}

// admitErr maps CallLog.Admit's refusals to the API's errors.
func admitErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, calllog.ErrUnknownAgent):
		return apiErr(http.StatusNotFound, "Agent not found.")
	case errors.Is(err, calllog.ErrInsufficientBalance):
		return apiErr(http.StatusPaymentRequired, "Insufficient balance: top up to place calls.")
	}
	return err
}
