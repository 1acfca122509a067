package control

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/widget"
	"github.com/voiced/voiced/storage"
)

// widgetCalls is the widget's way into the call side (admission, browser
// media, ICE servers), which stays in control until it moves to call/.
type widgetCalls struct{ s *Server }

// Start admits and bills a web call and answers the offer; with no
// browser media on this server it is a 503.
func (w widgetCalls) Start(ctx context.Context, r widget.CallRequest) (widget.Call, error) {
	m, err := w.s.browserMedia(ctx, http.StatusServiceUnavailable)
	if err != nil {
		return widget.Call{}, err
	}
	adm, err := w.s.calls.Admit(ctx, calllog.AdmitRequest{Direction: storage.DirectionWeb, OrgID: r.OrgID, AgentID: r.AgentID,
		From: "web:" + r.Host, MediaRoomName: "widget-" + storage.NewUUID()})
	if err := admitErr(err); err != nil {
		return widget.Call{}, err
	}
	x := r.Incoming
	applyOverrides(&adm.Agent, x.Prompt, x.FirstMessage, x.Voice, x.Variables)
	answer, err := w.s.startBrowserMedia(ctx, m, BrowserCall{Admission: adm, Direction: storage.DirectionWeb, Origin: r.Origin, Metadata: x.Metadata}, r.Offer)
	if err != nil {
		return widget.Call{}, err
	}
	c := widget.Call{ID: adm.CallID, AgentID: adm.AgentID, Answer: answer}
	if adm.MaxDuration != calllog.NoLimit {
		c.MaxDuration = adm.MaxDuration
	}
	return c, nil
}

// ICEServers is the body of GET /v1/widget/ice-servers for a key.
func (w widgetCalls) ICEServers(keyPrefix string) fiber.Map { return w.s.iceServers(keyPrefix) }

// maxOfferBytes bounds an SDP offer (mic sessions share the widget's bound).
const maxOfferBytes = widget.MaxOfferBytes
