package calls

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
)

// EventWhisper records a whisper given to a live call's agent; it is no
// transcript turn, so the caller-visible transcript never shows it.
const EventWhisper = "whisper"

// MaxWhisperRunes bounds a whisper's text: guidance, not a document (it
// rides in every later model request of the call).
const MaxWhisperRunes = 2000

// ErrNotLive is returned by Live for a call no node holds.
var ErrNotLive = errors.New("call is not live")

// liveWait is how long a call in progress may take to be live on a node:
// its row is in progress from its admission, a few milliseconds (more on
// a loaded node) before its media opens on the node that answers it.
const liveWait = 2 * time.Second

// untilLive runs try until it returns anything but ErrNotLive, for up to
// liveWait: a call admitted a moment ago is not refused as not live.
func untilLive(ctx context.Context, try func() error) error {
	deadline := time.Now().Add(liveWait)
	for {
		err := try()
		if !errors.Is(err, ErrNotLive) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Live reaches the live calls wherever they run: the node itself in
// serve, the media nodes through the coord commands in control.
type Live interface {
	// Whisper hands text to the agent of live call callID (orgID's).
	Whisper(ctx context.Context, orgID, callID int64, text string) error
	// Listen finds the node that holds live call callID (orgID's) with
	// audio to listen to and returns the base of its listen socket's URL
	// (ws://host:port or wss://...); ErrNotLive when no node does.
	Listen(ctx context.Context, orgID, callID int64) (string, error)
}

// ListenSocket is where GET /v1/calls/{id}/listen is served: the node's
// handler once mounted (serve), else a 503 that points at the URL the
// POST returns (voiced control, whose URLs name the media nodes).
type ListenSocket struct{ h atomic.Pointer[fiber.Handler] }

// Mount serves the listen socket with h (call.Node's handler).
func (s *ListenSocket) Mount(h http.Handler) {
	fh := adaptor.HTTPHandler(h)
	s.h.Store(&fh)
}

// Events appends a call's events.
type Events interface {
	AppendCallEvents(ctx context.Context, id int64, events []storage.CallEventRow) (int, error)
}

type liveHandlers struct {
	Store
	events    Events
	live      Live
	listenKey []byte
	socket    *ListenSocket
}

// LiveRoutes returns the live call routes (spec 4.14): whisper, listen
// (tokens signed with listenKey) and the listen socket (served by
// socket once mounted). Without live (no node runs calls) they answer
// 503.
func LiveRoutes(store Store, events Events, live Live, listenKey []byte, socket *ListenSocket) []api.Route {
	h := &liveHandlers{Store: store, events: events, live: live, listenKey: listenKey, socket: socket}
	return []api.Route{
		{Method: "POST", Path: "/v1/calls/:call_id/whisper", Summary: "Private text guidance ({text}, 1-2000 characters) the agent of a live call takes into its context from its next turn; never spoken, never in the transcript", Tag: "calls", Auth: api.AuthOrg, ResStatus: 202, ReqSchema: "WhisperInput", ResSchema: "Whisper", Errors: []int{400, 404, 409, 503}, Handler: h.whisper},
		{Method: "POST", Path: "/v1/calls/:call_id/listen", Summary: "A listen-only token for a live phone, browser or realtime call and the WebSocket url to open with it (valid one minute; the socket then lasts until the call ends). " +
			"format (body or query): pcm16 (default: 16-bit little-endian PCM, 16 kHz, 640-byte frames), g711_ulaw or g711_alaw (8 kHz, 160-byte frames); mono, one binary message per 20 ms of both parties mixed. " +
			"The socket closes with 1000 when the call ends and 1008 when the listener falls a second behind", Tag: "calls", Auth: api.AuthOrg, ReqSchema: "ListenInput", ResSchema: "Listen", Errors: []int{400, 404, 409, 503}, Handler: h.listen},
		{Method: "GET", Path: "/v1/calls/:call_id/listen", Summary: "The listen WebSocket (the url POST /v1/calls/{call_id}/listen returns; ?token= or Authorization: Bearer <token>). Refusals before the upgrade: 401 bad or expired token, 409 the call is not live here, 426 not a WebSocket request, 503 not served here", Tag: "calls", ResStatus: http.StatusSwitchingProtocols, Errors: []int{401, 409, 426, 503}, Raw: h.listenSocket},
	}
}

// liveCall is the org's call of the path, 409 once it has ended.
func (h *liveHandlers) liveCall(c fiber.Ctx, p *storage.Principal) (storage.Call, error) {
	id, err := api.PathID(c, "call_id")
	if err != nil {
		return storage.Call{}, err
	}
	cl, err := h.Call(c.Context(), p.OrgID, id)
	if err != nil {
		return cl, api.StoreErr(err)
	}
	if cl.Status != storage.CallInProgress {
		return cl, api.Err(http.StatusConflict, "The call has ended.")
	}
	return cl, nil
}

func (h *liveHandlers) whisper(c fiber.Ctx, p *storage.Principal) error {
	cl, err := h.liveCall(c, p)
	if err != nil {
		return err
	}
	var in struct {
		Text *string `json:"text"`
	}
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	switch {
	case in.Text == nil:
		return api.FieldErr("text", "This field is required.")
	case strings.TrimSpace(*in.Text) == "":
		return api.FieldErr("text", "This field may not be blank.")
	case utf8.RuneCountInString(*in.Text) > MaxWhisperRunes:
		return api.FieldErr("text", "Ensure this field has no more than 2000 characters.")
	}
	text := strings.TrimSpace(*in.Text)
	if h.live == nil {
		return api.Err(http.StatusServiceUnavailable, "No node runs calls here.")
	}
	if err := untilLive(c.Context(), func() error { return h.live.Whisper(c.Context(), p.OrgID, cl.ID, text) }); err != nil {
		if errors.Is(err, ErrNotLive) {
			return api.Err(http.StatusConflict, "The call is not live on any node.")
		}
		return err
	}
	at := time.Now()
	data, _ := json.Marshal(EventData{Text: text})
	id := "whisper-" + coord.NewToken()
	if _, err := h.events.AppendCallEvents(c.Context(), cl.ID, []storage.CallEventRow{{EventID: id, Kind: EventWhisper, At: at, Data: data}}); err != nil {
		return err
	}
	c.Status(http.StatusAccepted)
	return c.JSON(map[string]any{"call_id": cl.ID, "whisper_id": id, "delivered_at": api.TS(at)})
}
