package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/browser"
	"github.com/voiced/voiced/storage/coord"
)

// pathAnswer is the media node's browser-call API (under Prefix, on the
// node's --http-addr): the control plane hands it an admitted call and
// the browser's SDP offer and gets the answer.
const pathAnswer = "media/answer"

type answerReq struct {
	Call  browser.Call[control.AgentConfig] `json:"call"`
	Offer string                            `json:"offer"`
}

type answerRes struct {
	SDP string `json:"sdp"`
}

// Codes of the browser-call refusals.
const (
	codeBadOffer    = "bad_offer"
	codeUnavailable = "media_unavailable"
)

// BrowserMedia is the control plane's browser media (control.BrowserMedia)
// on media nodes: the coord placement picks a node for each widget or
// mic call and the node answers the offer; the call's WebRTC media then
// runs between the browser and that node.
type BrowserMedia struct {
	placer coord.Placer
	secret string
	hc     *http.Client
}

// NewBrowserMedia returns the browser media over p, authenticating to
// the nodes with secret.
func NewBrowserMedia(p coord.Placer, secret string) *BrowserMedia {
	return &BrowserMedia{placer: p, secret: secret, hc: &http.Client{Timeout: 20 * time.Second, CheckRedirect: noRedirects}}
}

// Check implements browser.Media: some live node can take a call.
func (b *BrowserMedia) Check(ctx context.Context) error {
	if _, err := b.placer.Pick(ctx); err != nil {
		return fmt.Errorf("%w: %v", browser.ErrMediaUnavailable, err)
	}
	return nil
}

// Answer implements browser.Media on the node the placement picks.
func (b *BrowserMedia) Answer(ctx context.Context, c browser.Call[control.AgentConfig], offer string) (string, error) {
	n, err := b.placer.Pick(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: %v", browser.ErrMediaUnavailable, err)
	}
	body, err := json.Marshal(answerReq{Call: c, Offer: offer})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+n.Addr+Prefix+pathAnswer, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.secret)
	res, err := b.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: media node %s: %v", browser.ErrMediaUnavailable, n.ID, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode == http.StatusOK {
		var a answerRes
		if err := json.Unmarshal(data, &a); err != nil {
			return "", fmt.Errorf("media node %s: bad answer: %w", n.ID, err)
		}
		return a.SDP, nil
	}
	var we wireError
	_ = json.Unmarshal(data, &we)
	switch we.Code {
	case codeBadOffer:
		return "", fmt.Errorf("%w: %s", browser.ErrBadOffer, we.Detail)
	case codeUnavailable:
		return "", fmt.Errorf("%w: %s", browser.ErrMediaUnavailable, we.Detail)
	}
	return "", fmt.Errorf("media node %s: HTTP %d: %.200s", n.ID, res.StatusCode, data)
}

// mediaAPI is a media node's side: the browser-call answer, behind the
// cluster secret.
func mediaAPI(secret string, m browser.Media[control.AgentConfig], log *slog.Logger) http.Handler {
	s := &server{cfg: ServerConfig{Secret: secret}, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+Prefix+pathAnswer, func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		req, err := decode[answerReq](r)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, wireError{Code: codeBadRequest, Detail: err.Error()})
			return
		}
		sdp, err := m.Answer(r.Context(), req.Call, req.Offer)
		switch {
		case errors.Is(err, browser.ErrBadOffer):
			writeJSON(w, http.StatusBadRequest, wireError{Code: codeBadOffer, Detail: err.Error()})
		case errors.Is(err, browser.ErrMediaUnavailable):
			writeJSON(w, http.StatusServiceUnavailable, wireError{Code: codeUnavailable, Detail: err.Error()})
		case err != nil:
			log.Error("browser call not answered", "call_id", req.Call.CallID, "err", err)
			writeJSON(w, http.StatusInternalServerError, wireError{Code: codeInternal, Detail: err.Error()})
		default:
			writeJSON(w, http.StatusOK, answerRes{SDP: sdp})
		}
	})
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, wireError{Code: codeNotFound, Detail: "no internal API at " + r.Method + " " + r.URL.Path})
	})
	return s.auth(mux)
}
