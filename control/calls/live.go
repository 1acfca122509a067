package calls

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v3"

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

// Live reaches the live calls wherever they run: the node itself in
// serve, the media nodes through the coord commands in control.
type Live interface {
	// Whisper hands text to the agent of live call callID (orgID's).
	Whisper(ctx context.Context, orgID, callID int64, text string) error
}

// Events appends a call's events.
type Events interface {
	AppendCallEvents(ctx context.Context, id int64, events []storage.CallEventRow) (int, error)
}

type liveHandlers struct {
	Store
	events Events
	live   Live
}

// LiveRoutes returns the live call routes (spec 4.14): whisper. Without
// live (no node runs calls) they answer 503.
func LiveRoutes(store Store, events Events, live Live) []api.Route {
	h := &liveHandlers{Store: store, events: events, live: live}
	return []api.Route{
		{Method: "POST", Path: "/v1/calls/:call_id/whisper", Summary: "Private text guidance ({text}, 1-2000 characters) the agent of a live call takes into its context from its next turn; never spoken, never in the transcript", Tag: "calls", Auth: api.AuthOrg, ResStatus: 202, Errors: []int{400, 404, 409, 503}, Handler: h.whisper},
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
	if err := h.live.Whisper(c.Context(), p.OrgID, cl.ID, text); err != nil {
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
