package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Header names of a signed request.
const (
	HeaderSignature   = "X-Service-Signature"
	HeaderWebhookID   = "webhook-id"
	HeaderWebhookTime = "webhook-timestamp"
	HeaderWebhookSig  = "webhook-signature"
)

// userAgent identifies voiced's outbound webhook requests.
const userAgent = "voiced-webhooks/1"

// Sign returns X-Service-Signature for body: the hex HMAC-SHA256 of the raw
// body keyed with the secret string's bytes.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// StandardKey is the Standard Webhooks signing key of secret: the secret
// after any "whsec_" prefix, decoded as base64. Our secrets are hex, which
// is valid base64, so the key is what any Standard Webhooks library derives
// from the same secret string; a secret that does not decode is used as
// raw bytes.
func StandardKey(secret string) []byte {
	s := strings.TrimPrefix(secret, "whsec_")
	if k, err := base64.StdEncoding.DecodeString(s); err == nil && len(k) > 0 {
		return k
	}
	return []byte(s)
}

// SignStandard returns the webhook-signature header value for (id,
// timestamp in Unix seconds, body) under key: "v1," + base64 of the
// HMAC-SHA256 of "id.timestamp.body".
func SignStandard(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// setSignatures sets both signature schemes on h.
func setSignatures(h http.Header, secret, id string, ts int64, body []byte) {
	h.Set(HeaderSignature, Sign(secret, body))
	h.Set(HeaderWebhookID, id)
	h.Set(HeaderWebhookTime, strconv.FormatInt(ts, 10))
	h.Set(HeaderWebhookSig, SignStandard(StandardKey(secret), id, ts, body))
}

// Envelope returns the delivery body: {"data":...,"event_id":...,"type":...}
// for endpoints, {"data":...,"type":...} for the legacy URL. data is
// embedded byte for byte, so what was stored is what is signed and sent.
func Envelope(eventID, typ string, data json.RawMessage, legacy bool) []byte {
	id, _ := json.Marshal(eventID)
	t, _ := json.Marshal(typ)
	b := make([]byte, 0, len(data)+len(id)+len(t)+40)
	b = append(b, `{"data":`...)
	b = append(b, data...)
	if !legacy {
		b = append(b, `,"event_id":`...)
		b = append(b, id...)
	}
	b = append(b, `,"type":`...)
	b = append(b, t...)
	return append(b, '}')
}
