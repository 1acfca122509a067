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
	"strings"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/browser"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/storage/coord"
)

// A media node's own API (under Prefix, on the node's --http-addr, the
// same bearer secret): what the control plane asks of a node rather than
// of the call log. media/answer takes an admitted browser call and the
// browser's SDP offer and returns the answer; media/verify-voip checks a
// trunk with SIP OPTIONS from the node.
const (
	pathAnswer = "media/answer"
	pathVerify = "media/verify-voip"
	pathICE    = "media/ice-servers"
	// pathListenable answers whether the node holds a call to listen to
	// (Live.Listen).
	pathListenable = "media/listenable"
)

type iceReq struct {
	ID string `json:"id"`
}

type iceRes struct {
	Servers []browser.ICEServer `json:"servers"`
	Expires time.Time           `json:"expires"`
}

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

// Nodes is what the control plane asks of media nodes, each time of one
// the coord placement picks: browser calls (control.BrowserMedia: the
// node answers the offer and the WebRTC media runs between the browser
// and it) and trunk checks (numbers.VoIPVerifier).
type Nodes struct {
	placer coord.Placer
	secret string
	scheme string
	hc     *http.Client
	owners Owners
}

// SetOwners has each browser call recorded as its node's before the
// node answers it; call it before the first Answer.
func (b *Nodes) SetOwners(o Owners) { b.owners = o }

// NewNodes returns the media nodes over p, authenticating with secret;
// they are reached over https when the control plane's publicURL is
// https (nodes then sit behind TLS too, as MediaURL assumes).
func NewNodes(p coord.Placer, secret, publicURL string) *Nodes {
	return &Nodes{placer: p, secret: secret, scheme: httpScheme(publicURL), hc: &http.Client{Timeout: 20 * time.Second, CheckRedirect: noRedirects}}
}

// httpScheme is the scheme nodes are reached with: https when the
// control plane's public URL is.
func httpScheme(publicURL string) string {
	if strings.HasPrefix(publicURL, "https://") {
		return "https"
	}
	return "http"
}

// Check implements browser.Media: some live node can take a call.
func (b *Nodes) Check(ctx context.Context) error {
	if _, err := b.placer.Pick(ctx); err != nil {
		return fmt.Errorf("%w: %v", browser.ErrMediaUnavailable, err)
	}
	return nil
}

// Answer implements browser.Media on the node the placement picks.
func (b *Nodes) Answer(ctx context.Context, c browser.Call[control.AgentConfig], offer string) (string, error) {
	var a answerRes
	err := b.post(ctx, c.CallID, pathAnswer, answerReq{Call: c, Offer: offer}, &a)
	return a.SDP, err
}

// VerifyVoIP implements numbers.VoIPVerifier from a node.
func (b *Nodes) VerifyVoIP(ctx context.Context, check numbers.VoIPCheck) (numbers.VoIPResult, error) {
	var r numbers.VoIPResult
	err := b.post(ctx, 0, pathVerify, check, &r)
	return r, err
}

// ICEServers implements browser.ICE from a node; none when no node
// answers within 3 s (the browser then goes without TURN).
func (b *Nodes) ICEServers(id string) ([]browser.ICEServer, time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var r iceRes
	if err := b.post(ctx, 0, pathICE, iceReq{ID: id}, &r); err != nil {
		return nil, time.Time{}
	}
	return r.Servers, r.Expires
}

// post asks a node the placement picks; callID, when not 0, is the call
// the node will hold, recorded as its own first.
func (b *Nodes) post(ctx context.Context, callID int64, path string, in, out any) error {
	n, err := b.placer.Pick(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", browser.ErrMediaUnavailable, err)
	}
	if callID != 0 && b.owners != nil {
		if err := b.owners.AssignNode(ctx, callID, n.ID); err != nil {
			return err
		}
	}
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.scheme+"://"+n.Addr+Prefix+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.secret)
	res, err := b.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: media node %s: %v", browser.ErrMediaUnavailable, n.ID, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("media node %s: bad answer: %w", n.ID, err)
		}
		return nil
	}
	var we wireError
	_ = json.Unmarshal(data, &we)
	switch we.Code {
	case codeBadOffer:
		return fmt.Errorf("%w: %s", browser.ErrBadOffer, we.Detail)
	case codeUnavailable:
		return fmt.Errorf("%w: %s", browser.ErrMediaUnavailable, we.Detail)
	}
	return fmt.Errorf("media node %s: HTTP %d: %.200s", n.ID, res.StatusCode, data)
}

// nodeAPI is a media node's side, behind the cluster secret: browser
// answers from m, trunk checks from v, whether it holds a call to listen
// to from listenable (any nil: not offered).
func nodeAPI(secret string, m browser.Media[control.AgentConfig], v numbers.VoIPVerifier, listenable func(callID int64) bool, log *slog.Logger) http.Handler {
	s := &server{cfg: ServerConfig{Secret: secret}, log: log}
	mux := http.NewServeMux()
	if listenable != nil {
		mux.Handle("POST "+Prefix+pathListenable, s.call(func(r *http.Request) (any, error) {
			req, err := decode[listenableReq](r)
			if err != nil {
				return nil, err
			}
			return listenableRes{Listenable: listenable(req.CallID)}, nil
		}))
	}
	if m != nil {
		mux.Handle("POST "+Prefix+pathAnswer, s.call(func(r *http.Request) (any, error) {
			req, err := decode[answerReq](r)
			if err != nil {
				return nil, err
			}
			sdp, err := m.Answer(r.Context(), req.Call, req.Offer)
			return answerRes{SDP: sdp}, err
		}))
	}
	if ice, ok := m.(browser.ICE); ok {
		mux.Handle("POST "+Prefix+pathICE, s.call(func(r *http.Request) (any, error) {
			req, err := decode[iceReq](r)
			if err != nil {
				return nil, err
			}
			servers, exp := ice.ICEServers(req.ID)
			return iceRes{Servers: servers, Expires: exp}, nil
		}))
	}
	if v != nil {
		mux.Handle("POST "+Prefix+pathVerify, s.call(func(r *http.Request) (any, error) {
			req, err := decode[numbers.VoIPCheck](r)
			if err != nil {
				return nil, err
			}
			return v.VerifyVoIP(r.Context(), req)
		}))
	}
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, wireError{Code: codeNotFound, Detail: "no internal API at " + r.Method + " " + r.URL.Path})
	})
	return s.auth(mux)
}

// nodeErr is a node-side failure as the node API answers it.
func nodeErr(err error) (int, wireError) {
	switch {
	case errors.Is(err, browser.ErrBadOffer):
		return http.StatusBadRequest, wireError{Code: codeBadOffer, Detail: err.Error()}
	case errors.Is(err, browser.ErrMediaUnavailable):
		return http.StatusServiceUnavailable, wireError{Code: codeUnavailable, Detail: err.Error()}
	}
	return encodeErr(err)
}
