package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/widget"
	"github.com/voiced/voiced/storage"
)

// Admitter admits browser calls and fails those whose media never
// connected (calllog.Log).
type Admitter[C any] interface {
	Admit(ctx context.Context, r calllog.AdmitRequest) (calllog.Admission[C], error)
	Readmit(ctx context.Context, cl storage.Call) (calllog.Admission[C], error)
	Fail(ctx context.Context, callID int64, reason, detail string) error
}

// CallStore reads a call and claims a mic session's room on it.
type CallStore interface {
	CallByID(ctx context.Context, id int64) (storage.Call, error)
	UpdateCall(ctx context.Context, id int64, fn func(c *storage.Call) error) (before, after storage.Call, err error)
}

// Overrider puts the widget webhook's per-call answers into an agent
// configuration: prompt, first message and voice replace the agent's,
// variables fill {{name}} placeholders.
type Overrider[C any] interface {
	Override(c *C, prompt, first, voice string, vars map[string]string)
}

// Config holds the browser calls' settings.
type Config struct {
	// PublicURL is the base of a mic session's server_url.
	PublicURL string
	// SigningKey signs mic-session tokens (the URL-signing key), so any
	// replica sharing it accepts them.
	SigningKey []byte
}

// Calls starts browser calls. Safe for concurrent use.
type Calls[C any] struct {
	cfg    Config
	log    *slog.Logger
	media  Media[C]
	calls  Admitter[C]
	store  CallStore
	agents Overrider[C]
}

// New returns the browser calls over media; nil media answers the widget
// with 503 and mic sessions with 502.
func New[C any](cfg Config, log *slog.Logger, media Media[C], calls Admitter[C], store CallStore, agents Overrider[C]) *Calls[C] {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Calls[C]{cfg: cfg, log: log, media: media, calls: calls, store: store, agents: agents}
}

var _ widget.Calls = (*Calls[struct{}])(nil)

// ICEServers returns the browser ICE servers for id and the API's view of
// their expiry: always a list (empty without servers), expires_at null
// when the credentials do not expire. It is the body of GET
// /v1/widget/ice-servers.
func (b *Calls[C]) ICEServers(id string) fiber.Map {
	out := fiber.Map{"ice_servers": []ICEServer{}, "ice_servers_expire_at": nil}
	bi, ok := b.media.(ICE)
	if !ok {
		return out
	}
	servers, exp := bi.ICEServers(id)
	if servers != nil {
		out["ice_servers"] = servers
	}
	if !exp.IsZero() {
		out["ice_servers_expire_at"] = api.TS(exp)
	}
	return out
}

// Start admits and bills a widget's web call and answers the offer; with
// no browser media on this server it is a 503.
func (b *Calls[C]) Start(ctx context.Context, r widget.CallRequest) (widget.Call, error) {
	m, err := b.available(ctx, http.StatusServiceUnavailable)
	if err != nil {
		return widget.Call{}, err
	}
	adm, err := b.calls.Admit(ctx, calllog.AdmitRequest{Direction: storage.DirectionWeb, OrgID: r.OrgID, AgentID: r.AgentID,
		From: "web:" + r.Host, MediaRoomName: "widget-" + storage.NewUUID()})
	if err := admitErr(err); err != nil {
		return widget.Call{}, err
	}
	x := r.Incoming
	b.agents.Override(&adm.Agent, x.Prompt, x.FirstMessage, x.Voice, x.Variables)
	answer, err := b.start(ctx, m, Call[C]{Admission: adm, Direction: storage.DirectionWeb, Origin: r.Origin, Metadata: x.Metadata}, r.Offer)
	if err != nil {
		return widget.Call{}, err
	}
	c := widget.Call{ID: adm.CallID, AgentID: adm.AgentID, Answer: answer}
	if adm.MaxDuration != calllog.NoLimit {
		c.MaxDuration = adm.MaxDuration
	}
	return c, nil
}

// available returns the media side if it can take a call now; status is
// the HTTP status of the refusal (the widget says 503, mic sessions 502
// as the spec has it).
func (b *Calls[C]) available(ctx context.Context, status int) (Media[C], error) {
	m := b.media
	if m == nil {
		return nil, api.Err(status, "Browser calls are not available on this server.")
	}
	if err := m.Check(ctx); err != nil {
		return nil, api.Err(status, "No capacity for a browser call right now; try again shortly.")
	}
	return m, nil
}

// start hands admitted call bc to m with the browser's offer and returns
// the answer. When the media cannot start, the call is failed without a
// charge.
func (b *Calls[C]) start(ctx context.Context, m Media[C], bc Call[C], offer string) (string, error) {
	answer, err := m.Answer(ctx, bc, offer)
	if err == nil {
		return answer, nil
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if ferr := b.calls.Fail(fctx, bc.CallID, "media_failed", err.Error()); ferr != nil {
		b.log.Error("fail browser call", "call_id", bc.CallID, "err", ferr)
	}
	switch {
	case errors.Is(err, ErrBadOffer):
		return "", api.FieldErr("sdp", "The SDP offer cannot be used: it must offer Opus audio with ICE credentials and a DTLS fingerprint.")
	case errors.Is(err, ErrMediaUnavailable):
		return "", api.Err(http.StatusServiceUnavailable, "No capacity for a browser call right now; try again shortly.")
	}
	return "", fmt.Errorf("browser call %d: %w", bc.CallID, err)
}

// admitErr maps the call log's refusals to the API's errors.
func admitErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, calllog.ErrUnknownAgent):
		return api.Err(http.StatusNotFound, "Agent not found.")
	case errors.Is(err, calllog.ErrInsufficientBalance):
		return api.Err(http.StatusPaymentRequired, "Insufficient balance: top up to place calls.")
	}
	return err
}
