package calls

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Signed recording URLs: GET /v1/calls/{id}/recording?expires=E&sig=S
// where E is the expiry in Unix seconds and S is the lowercase hex
// HMAC-SHA256, keyed with the server's signing key, of
// "recording\n<call id>\n<E>". Anyone holding the URL may fetch the
// recording until E; changing any part of it invalidates S.

// signRecording returns the signature of call id's recording URL expiring
// at exp (Unix seconds).
func (h *handlers) signRecording(id, exp int64) string {
	m := hmac.New(sha256.New, h.cfg.SignKey)
	m.Write([]byte("recording\n" + strconv.FormatInt(id, 10) + "\n" + strconv.FormatInt(exp, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// RecordingURL is a signed link to call id's recording valid for
// cfg.AudioURLTTL from now (what GET /v1/calls/{id}/audio hands out).
func RecordingURL(cfg Config, id int64) string {
	h := &handlers{cfg: cfg}
	exp := time.Now().Add(cfg.AudioURLTTL).Unix()
	q := url.Values{"expires": {strconv.FormatInt(exp, 10)}, "sig": {h.signRecording(id, exp)}}
	return cfg.PublicURL + "/v1/calls/" + strconv.FormatInt(id, 10) + "/recording?" + q.Encode()
}

var errBadSignature = api.Err(http.StatusUnauthorized, "This recording link is invalid or has expired; request a new one from /v1/calls/{call_id}/audio.")

func (h *handlers) callAudio(c fiber.Ctx, p *storage.Principal) error {
	cl, err := h.orgCall(c, p)
	if err != nil {
		return err
	}
	if cl.RecordingKey == "" {
		return api.Err(http.StatusNotFound, "This call has no recording.")
	}
	exp := time.Now().Add(h.cfg.AudioURLTTL).Unix()
	q := url.Values{"expires": {strconv.FormatInt(exp, 10)}, "sig": {h.signRecording(cl.ID, exp)}}
	u := h.cfg.PublicURL + "/v1/calls/" + strconv.FormatInt(cl.ID, 10) + "/recording?" + q.Encode()
	return c.JSON(fiber.Map{"call_id": cl.ID, "url": u, "expires_at": api.TS(time.Unix(exp, 0)), "content_type": contentType(cl.RecordingKey)})
}

func contentType(key string) string {
	switch path.Ext(key) {
	case ".wav":
		return "audio/wav"
	case ".mp3":
		return "audio/mpeg"
	case ".ogg", ".opus":
		return "audio/ogg"
	}
	return "application/octet-stream"
}

// serveRecording streams a recording to whoever holds a valid signed URL;
// no credential is needed. Expired, tampered or unsigned links are 401.
func (h *handlers) serveRecording(c fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("call_id"), 10, 64)
	if err != nil || id <= 0 {
		return errBadSignature
	}
	exp, err := strconv.ParseInt(c.Query("expires"), 10, 64)
	if err != nil {
		return errBadSignature
	}
	want := h.signRecording(id, exp)
	if !hmac.Equal([]byte(want), []byte(c.Query("sig"))) || time.Now().Unix() > exp {
		return errBadSignature
	}
	cl, err := h.recs.CallByID(c.Context(), id)
	if err != nil {
		return api.StoreErr(err)
	}
	if cl.RecordingKey == "" || !ValidBlobKey(cl.RecordingKey) {
		return api.Err(http.StatusNotFound, "This call has no recording.")
	}
	if _, err := os.Stat(filepath.Join(h.cfg.BlobDir, filepath.FromSlash(cl.RecordingKey))); err != nil {
		return api.Err(http.StatusNotFound, "The recording is not available.")
	}
	c.Set(fiber.HeaderContentType, contentType(cl.RecordingKey))
	c.Set(fiber.HeaderCacheControl, "private, no-store")
	return c.SendFile(cl.RecordingKey, fiber.SendFile{FS: os.DirFS(h.cfg.BlobDir), ByteRange: true})
}
