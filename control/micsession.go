package control

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

	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/storage"
)

// Mic sessions (spec 4.14): POST /v1/mic-session admits a test call of an
// agent and returns a room for it: room_name, a token and server_url,
// where the browser then POSTs {token, sdp} and gets the SDP answer.

// micTokenTTL is how long a mic-session token may be used to connect. A
// session that never connects is failed, without a charge, soon after.
const micTokenTTL = 5 * time.Minute

// micSessions serves the mic-session routes. Its tokens are signed with
// the URL-signing key, so any replica sharing the key accepts them.
type micSessions struct{ s *Server }

func (m *micSessions) register() {
	m.s.add(route{method: "POST", path: "/v1/mic-session", summary: "Start a mic session: a test call of the agent, billed at its product tier, with a room to connect a browser to", tag: "calls", auth: authOrg, reqSchema: "MicSessionInput", resSchema: "MicSession", errors: []int{400, 402, 404, 502}, handler: m.create})
	m.s.add(route{method: "POST", path: "/v1/mic-session/connect", summary: "Connect a browser to a mic session's room: token and SDP offer in, SDP answer out (the token is the credential; single use)", tag: "calls", reqSchema: "MicConnectInput", resSchema: "MicConnect", errors: []int{400, 401, 409, 503}, handler: m.connect})
}

type micSessionInput struct {
	AgentID *int64 `json:"agent_id"`
}

func (m *micSessions) create(c fiber.Ctx, p *storage.Principal) error {
	var in micSessionInput
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.AgentID == nil || *in.AgentID <= 0 {
		return fieldErr("agent_id", "This field is required.")
	}
	ctx := c.Context()
	// The room is the media side's: without capacity there is none (502).
	if _, err := m.s.browserMedia(ctx, http.StatusBadGateway); err != nil {
		return err
	}
	room := "mic-" + storage.NewUUID()
	adm, err := m.s.calls.Admit(ctx, calllog.AdmitRequest{Direction: storage.DirectionTest, OrgID: p.OrgID, AgentID: *in.AgentID,
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
		cl, err := m.s.store.Calls.CallByID(fctx, adm.CallID)
		if err != nil || cl.MediaRoomSID != nil {
			return
		}
		if err := m.s.calls.Fail(fctx, adm.CallID, "no_media", "the mic session was never connected"); err != nil && m.s.log != nil {
			m.s.log.Warn("fail unconnected mic session", "call_id", adm.CallID, "err", err)
		}
	})
	out := m.s.iceServers("call-" + strconv.FormatInt(adm.CallID, 10))
	out["call_id"], out["token"], out["room_name"] = adm.CallID, m.token(adm.CallID, exp), room
	out["server_url"], out["expires_at"] = m.s.cfg.PublicURL+"/v1/mic-session/connect", ts(exp)
	return c.JSON(out)
}

// token signs (call id, expiry) with the URL-signing key, so any
// replica sharing the key accepts it: mic_<call id>.<unix expiry>.<hmac>.
func (m *micSessions) token(callID int64, exp time.Time) string {
	body := strconv.FormatInt(callID, 10) + "." + strconv.FormatInt(exp.Unix(), 10)
	return "mic_" + body + "." + m.sig(body)
}

func (m *micSessions) sig(body string) string {
	h := hmac.New(sha256.New, m.s.res.signKey)
	h.Write([]byte("mic-session\n" + body))
	return hex.EncodeToString(h.Sum(nil))
}

// parseToken returns the call id of a valid, unexpired token.
func (m *micSessions) parseToken(tok string, now time.Time) (int64, bool) {
	rest, ok := strings.CutPrefix(tok, "mic_")
	if !ok {
		return 0, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return 0, false
	}
	body := parts[0] + "." + parts[1]
	if !hmac.Equal([]byte(m.sig(body)), []byte(parts[2])) {
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

var errMicToken = apiErr(http.StatusUnauthorized, "The mic session token is invalid or expired.")

// errRoomUsed is returned inside UpdateCall when the room was connected.
var errRoomUsed = errors.New("mic session room already connected")

func (m *micSessions) connect(c fiber.Ctx, _ *storage.Principal) error {
	var in micConnectInput
	if err := decode(c, &in); err != nil {
		return err
	}
	f := fields{}
	if in.Token == nil || *in.Token == "" {
		f.add("token", "This field is required.")
	}
	if in.SDP == nil || strings.TrimSpace(*in.SDP) == "" {
		f.add("sdp", "This field is required: the browser's SDP offer.")
	} else if len(*in.SDP) > maxOfferBytes {
		f.add("sdp", "The SDP offer is too large.")
	}
	if err := f.err(); err != nil {
		return err
	}
	callID, ok := m.parseToken(*in.Token, time.Now())
	if !ok {
		return errMicToken
	}
	ctx := c.Context()
	media, err := m.s.browserMedia(ctx, http.StatusServiceUnavailable)
	if err != nil {
		return err
	}
	// The token is single use: the first connect takes the room.
	sid := "pc-" + storage.NewUUID()
	_, cl, err := m.s.store.Calls.UpdateCall(ctx, callID, func(cl *storage.Call) error {
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
		return apiErr(http.StatusConflict, "This mic session was already connected or has ended; start a new one.")
	case err != nil:
		return err
	}
	adm, err := m.s.calls.Readmit(ctx, cl)
	if err := admitErr(err); err != nil {
		return err
	}
	answer, err := m.s.startBrowserMedia(ctx, media, BrowserCall{Admission: adm, Direction: storage.DirectionTest}, *in.SDP)
	if err != nil {
		return err
	}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"call_id": callID, "type": "answer", "sdp": answer})
}
