package calls

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Live listen (spec 4.14): POST /v1/calls/{id}/listen hands out a signed
// token and the WebSocket URL of the node that holds the call; the node
// checks the token (the same key on both sides: the URL-signing key in
// serve, one derived from the cluster secret in a cluster) and streams
// the call's mixed audio. docs/decisions.md "Live listen".

// ListenTokenTTL is how long a listen token may be used to connect. Once
// connected, the socket lasts until the call ends.
const ListenTokenTTL = time.Minute

// ListenFrameMs is the length of one binary frame of the listen socket.
const ListenFrameMs = 20

// Listen socket formats: mono, 20 ms per binary WebSocket frame.
const (
	// ListenPCM16 is signed 16-bit little-endian PCM at 16 kHz (640 bytes
	// a frame), the default.
	ListenPCM16 = "pcm16"
	// ListenULaw and ListenALaw are G.711 at 8 kHz (160 bytes a frame).
	ListenULaw = "g711_ulaw"
	ListenALaw = "g711_alaw"
)

// listenFormats maps the accepted names (the realtime socket's, spec
// 4.14) to the canonical ones.
var listenFormats = map[string]string{
	"pcm16": ListenPCM16, "audio/pcm": ListenPCM16,
	"g711_ulaw": ListenULaw, "audio/pcmu": ListenULaw,
	"g711_alaw": ListenALaw, "audio/pcma": ListenALaw,
}

// ListenFormat returns the canonical name of a listen format ("" is the
// default, pcm16) and whether it is one.
func ListenFormat(name string) (string, bool) {
	if name == "" {
		return ListenPCM16, true
	}
	f, ok := listenFormats[strings.ToLower(name)]
	return f, ok
}

// ListenRate is the sample rate of a canonical listen format.
func ListenRate(format string) int {
	if format == ListenPCM16 {
		return 16000
	}
	return 8000
}

// ListenKey derives the listen tokens' key from a secret (the cluster
// secret, or the URL-signing key in serve), so the key is never the
// secret itself nor shared with another use of it.
func ListenKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("voiced listen tokens v1"))
	return m.Sum(nil)
}

// ListenGrant is what a listen token allows: listening to one call of one
// org in one format until Expires.
type ListenGrant struct {
	CallID, OrgID int64
	Format        string
	Expires       time.Time
}

const listenTokenPrefix = "lsn_"

// ListenToken signs g with key: lsn_<call>.<org>.<format>.<unix
// expiry>.<hex HMAC-SHA256>.
func ListenToken(key []byte, g ListenGrant) string {
	body := fmt.Sprintf("%d.%d.%s.%d", g.CallID, g.OrgID, g.Format, g.Expires.Unix())
	return listenTokenPrefix + body + "." + listenSig(key, body)
}

func listenSig(key []byte, body string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("listen\n" + body))
	return hex.EncodeToString(h.Sum(nil))
}

// ErrListenToken is a listen token that is malformed, forged or expired.
var ErrListenToken = errors.New("invalid or expired listen token")

// ParseListenToken checks tok against key at now.
func ParseListenToken(key []byte, tok string, now time.Time) (ListenGrant, error) {
	rest, ok := strings.CutPrefix(tok, listenTokenPrefix)
	if !ok {
		return ListenGrant{}, ErrListenToken
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 || !hmac.Equal([]byte(listenSig(key, rest[:i])), []byte(rest[i+1:])) {
		return ListenGrant{}, ErrListenToken
	}
	parts := strings.Split(rest[:i], ".")
	if len(parts) != 4 {
		return ListenGrant{}, ErrListenToken
	}
	callID, err1 := strconv.ParseInt(parts[0], 10, 64)
	orgID, err2 := strconv.ParseInt(parts[1], 10, 64)
	exp, err3 := strconv.ParseInt(parts[3], 10, 64)
	f, okf := ListenFormat(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || !okf || f != parts[2] || now.Unix() > exp {
		return ListenGrant{}, ErrListenToken
	}
	return ListenGrant{CallID: callID, OrgID: orgID, Format: f, Expires: time.Unix(exp, 0)}, nil
}

// ListenPath is the listen socket's path for call id, on the node.
func ListenPath(callID int64) string { return "/v1/calls/" + strconv.FormatInt(callID, 10) + "/listen" }

// listen is POST /v1/calls/{id}/listen: format from the body's "format"
// or the query's (the body wins); 404 unknown or another org's call, 400
// a bad format, 409 an ended call or one no node can be listened to on
// (after liveWait: a call admitted a moment ago gets its media's node).
func (h *liveHandlers) listen(c fiber.Ctx, p *storage.Principal) error {
	id, err := api.PathID(c, "call_id")
	if err != nil {
		return err
	}
	cl, err := h.Call(c.Context(), p.OrgID, id)
	if err != nil {
		return api.StoreErr(err)
	}
	var in struct {
		Format *string `json:"format"`
	}
	if len(strings.TrimSpace(string(c.Body()))) > 0 {
		if err := api.Decode(c, &in); err != nil {
			return err
		}
	}
	name := c.Query("format")
	if in.Format != nil {
		name = *in.Format
	}
	format, ok := ListenFormat(name)
	if !ok || (in.Format != nil && *in.Format == "") {
		return api.FieldErr("format", "Must be one of pcm16 (16 kHz), g711_ulaw or g711_alaw (8 kHz); audio/pcm, audio/pcmu and audio/pcma are accepted too.")
	}
	if cl.Status != storage.CallInProgress {
		return api.Err(http.StatusConflict, "The call has ended.")
	}
	if h.live == nil || len(h.listenKey) == 0 {
		return api.Err(http.StatusServiceUnavailable, "No node runs calls here.")
	}
	var base string
	err = untilLive(c.Context(), func() (err error) {
		base, err = h.live.Listen(c.Context(), p.OrgID, cl.ID)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotLive) {
			return api.Err(http.StatusConflict, "The call is not live on any node that can be listened to.")
		}
		return err
	}
	exp := time.Now().Add(ListenTokenTTL)
	tok := ListenToken(h.listenKey, ListenGrant{CallID: cl.ID, OrgID: p.OrgID, Format: format, Expires: exp})
	return c.JSON(map[string]any{"call_id": cl.ID, "token": tok, "url": strings.TrimRight(base, "/") + ListenPath(cl.ID) + "?token=" + url.QueryEscape(tok),
		"expires_in": int(ListenTokenTTL / time.Second), "expires_at": api.TS(exp), "format": format, "sample_rate": ListenRate(format),
		"channels": 1, "frame_ms": ListenFrameMs})
}

// listenSocket is GET /v1/calls/{id}/listen on a server that does not
// serve the socket itself (voiced control: the URL names the media node).
func (h *liveHandlers) listenSocket(c fiber.Ctx) error {
	if fh := h.socket.h.Load(); fh != nil {
		return (*fh)(c)
	}
	return api.Err(http.StatusServiceUnavailable, "This server does not serve listen sockets: connect to the url POST /v1/calls/{call_id}/listen returns.")
}
