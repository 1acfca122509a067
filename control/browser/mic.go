package browser

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/widget"
	"github.com/voiced/voiced/storage"
)

// Mic sessions (spec 4.14): POST /v1/mic-session admits a test call of an
// agent and returns a room for it: room_name, a token and server_url,
// where the browser then POSTs {token, sdp} and gets the SDP answer.

// micTokenTTL is how long a mic-session token may be used to connect. A
// session that never connects is failed, without a charge, soon after.
const micTokenTTL = 5 * time.Minute

// MicRoutes returns the mic-session routes. Their tokens are signed with
// the URL-signing key, so any replica sharing the key accepts them.
func (b *Calls[C]) MicRoutes() []api.Route {
	return []api.Route{
		{Method: "POST", Path: "/v1/mic-session", Summary: "Start a mic session: a test call of the agent, billed at its product tier, with a room to connect a browser to", Tag: "calls", Auth: api.AuthOrg, ReqSchema: "MicSessionInput", ResSchema: "MicSession", Errors: []int{400, 402, 404, 502}, Handler: b.createMic},
		{Method: "POST", Path: "/v1/mic-session/connect", Summary: "Connect a browser to a mic session's room: token and SDP offer in, SDP answer out (the token is the credential; single use)", Tag: "calls", ReqSchema: "MicConnectInput", ResSchema: "MicConnect", Errors: []int{400, 401, 409, 503}, Handler: b.connectMic},
	}
}

type micSessionInput struct {
	AgentID *int64 `json:"agent_id"`
}

func (b *Calls[C]) createMic(c fiber.Ctx, p *storage.Principal) error {
	var in micSessionInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	if in.AgentID == nil || *in.AgentID <= 0 {
		return api.FieldErr("agent_id", "This field is required.")
	}
	ctx := c.Context()
	// The room is the media side's: without capacity there is none (502).
	if _, err := b.available(ctx, http.StatusBadGateway); err != nil {
		return err
	}
	room := "mic-" + storage.NewUUID()
	adm, err := b.calls.Admit(ctx, calllog.AdmitRequest{Direction: storage.DirectionTest, OrgID: p.OrgID, AgentID: *in.AgentID,
		From: "mic:" + strconv.FormatInt(p.MemberID, 10), MediaRoomName: room})
	if err := admitErr(err); err != nil {
		return err
	}
	exp := time.Now().Add(micTokenTTL)
	// A room nobody connects to ends as a failed call, not charged. The
	// timer belongs to this process: if it dies first the call stays in
	// progress (docs/decisions.md, "Mic sessions").
	time.AfterFunc(micTokenTTL+10*time.Second, func() {
		fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cl, err := b.store.CallByID(fctx, adm.CallID)
		if err != nil || cl.MediaRoomSID != nil {
			return
		}
		if err := b.calls.Fail(fctx, adm.CallID, "no_media", "the mic session was never connected"); err != nil {
			b.log.Warn("fail unconnected mic session", "call_id", adm.CallID, "err", err)
		}
	})
	out := b.ICEServers("call-" + strconv.FormatInt(adm.CallID, 10))
	out["call_id"], out["token"], out["room_name"] = adm.CallID, b.micToken(adm.CallID, exp), room
	out["server_url"], out["expires_at"] = b.cfg.PublicURL+"/v1/mic-session/connect", api.TS(exp)
	return c.JSON(out)
}

// token signs (call id, expiry) with the URL-signing key, so any
// replica sharing the key accepts it: mic_<call id>.<unix expiry>.<hmac>.
func (b *Calls[C]) micToken(callID int64, exp time.Time) string {
	body := strconv.FormatInt(callID, 10) + "." + strconv.FormatInt(exp.Unix(), 10)
	return "mic_" + body + "." + b.micSig(body)
}

func (b *Calls[C]) micSig(body string) string {
	h := hmac.New(sha256.New, b.cfg.SigningKey)
	h.Write([]byte("mic-session\n" + body))
	return hex.EncodeToString(h.Sum(nil))
}

// parseToken returns the call id of a valid, unexpired token.
func (b *Calls[C]) parseMicToken(tok string, now time.Time) (int64, bool) {
	rest, ok := strings.CutPrefix(tok, "mic_")
	if !ok {
		return 0, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return 0, false
	}
	body := parts[0] + "." + parts[1]
	if !hmac.Equal([]byte(b.micSig(body)), []byte(parts[2])) {
		return 0, false
	}
	id, err1 := strconv.ParseInt(parts[0], 10, 64)
	exp, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || now.Unix() > exp {
		return 0, false
	}
	return id, true
}

type micConnectInput struct {
	Token *string `json:"token"`
	SDP   *string `json:"sdp"`
}

var errMicToken = api.Err(http.StatusUnauthorized, "The mic session token is invalid or expired.")

// errRoomUsed is returned inside UpdateCall when the room was connected.
var errRoomUsed = errors.New("mic session room already connected")

func (b *Calls[C]) connectMic(c fiber.Ctx, _ *storage.Principal) error {
	var in micConnectInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	if in.Token == nil || *in.Token == "" {
		f.Add("token", "This field is required.")
	}
	if in.SDP == nil || strings.TrimSpace(*in.SDP) == "" {
		f.Add("sdp", "This field is required: the browser's SDP offer.")
	} else if len(*in.SDP) > widget.MaxOfferBytes {
		f.Add("sdp", "The SDP offer is too large.")
	}
	if err := f.Err(); err != nil {
		return err
	}
	callID, ok := b.parseMicToken(*in.Token, time.Now())
	if !ok {
		return errMicToken
	}
	ctx := c.Context()
	media, err := b.available(ctx, http.StatusServiceUnavailable)
	if err != nil {
		return err
	}
	// The token is single use: the first connect takes the room.
	sid := "pc-" + storage.NewUUID()
	_, cl, err := b.store.UpdateCall(ctx, callID, func(cl *storage.Call) error {
		switch {
		case cl.Direction != storage.DirectionTest:
			return errRoomUsed
		case cl.MediaRoomSID != nil || cl.Status != storage.CallInProgress:
			return errRoomUsed
		}
		cl.MediaRoomSID = &sid
		return nil
	})
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return errMicToken
	case errors.Is(err, errRoomUsed):
		return api.Err(http.StatusConflict, "This mic session was already connected or has ended; start a new one.")
	case err != nil:
		return err
	}
	adm, err := b.calls.Readmit(ctx, cl)
	if err := admitErr(err); err != nil {
		return err
	}
	answer, err := b.start(ctx, media, Call[C]{Admission: adm, Direction: storage.DirectionTest}, *in.SDP)
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"call_id": callID, "type": "answer", "sdp": answer})
}
