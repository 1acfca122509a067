package cluster

import (
	"bytes"
	"context"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/storage/coord"
)

// whisperCmd is a whisper command's payload, sealed like a dial's.
type whisperCmd struct {
	OrgID int64  `json:"org_id"`
	Text  string `json:"text"`
}

// Live reaches the calls on the media nodes (calls.Live). The control
// plane does not track which node holds a call: a whisper goes as a
// sealed coord command to every live node and the one holding the call
// applies it (the others ignore it). That is one small stream entry per
// node, no state to keep consistent, and no window where a new call is
// not yet known. The call record says whether the call is still in
// progress (the API's 409); a node that dies mid-call has its calls
// ended by the loss handling within seconds.
//
// Listen must name the one node that holds the call (its URL goes to the
// listener), so it asks every live node at once over the node API
// (media/listenable, the cluster secret) and takes the one that says yes.
type Live struct {
	reg    coord.Registry
	cmds   coord.Commander
	aead   cipher.AEAD
	secret string
	scheme string
	hc     *http.Client
}

// NewLive returns the live calls of the nodes in reg, reached through
// cmds, sealing with secret; nodes are reached over https (their listen
// sockets over wss) when the control plane's publicURL is https.
func NewLive(reg coord.Registry, cmds coord.Commander, secret, publicURL string) *Live {
	return &Live{reg: reg, cmds: cmds, aead: commandAEAD(secret), secret: secret, scheme: httpScheme(publicURL),
		hc: &http.Client{Timeout: 3 * time.Second, CheckRedirect: noRedirects}}
}

type listenableReq struct {
	CallID int64 `json:"call_id"`
}

type listenableRes struct {
	Listenable bool `json:"listenable"`
}

// Listen implements calls.Live: the WebSocket base (ws://host:port, or
// wss://) of the node that holds call callID with audio to listen to;
// calls.ErrNotLive when none answers yes within 3 s.
func (l *Live) Listen(ctx context.Context, orgID, callID int64) (string, error) {
	nodes, err := l.reg.Nodes(ctx)
	if err != nil {
		return "", fmt.Errorf("list nodes: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	found := make(chan string, len(nodes))
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() {
			var res listenableRes
			if err := l.post(ctx, n.Addr, pathListenable, listenableReq{CallID: callID}, &res); err == nil && res.Listenable {
				found <- n.Addr
			}
		})
	}
	go func() {
		wg.Wait()
		close(found)
	}()
	addr, ok := <-found
	if !ok {
		return "", calls.ErrNotLive
	}
	ws := "ws://"
	if l.scheme == "https" {
		ws = "wss://"
	}
	return ws + addr, nil
}

func (l *Live) post(ctx context.Context, addr, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.scheme+"://"+addr+Prefix+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+l.secret)
	res, err := l.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("media node %s: HTTP %d", addr, res.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(res.Body, 1<<16)).Decode(out)
}

// Whisper implements calls.Live; calls.ErrNotLive when no node is live.
func (l *Live) Whisper(ctx context.Context, orgID, callID int64, text string) error {
	nodes, err := l.reg.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	data, err := seal(l.aead, whisperCmd{OrgID: orgID, Text: text})
	if err != nil {
		return err
	}
	cmd := coord.Command{ID: coord.NewToken(), CallID: strconv.FormatInt(callID, 10), Type: coord.CommandWhisper, Data: data}
	sent := 0
	for _, n := range nodes {
		if _, err := l.cmds.Send(ctx, n.ID, cmd); err == nil {
			sent++
		} else if !errors.Is(err, coord.ErrUnknownNode) {
			return fmt.Errorf("send whisper to node %s: %w", n.ID, err)
		}
	}
	if sent == 0 {
		return calls.ErrNotLive
	}
	return nil
}

// FollowWhispers subscribes node nodeID to whisper commands until ctx
// ends and hands each to whisper, which ignores calls the node does not
// hold. Commands that do not open with secret are dropped and logged.
func FollowWhispers(ctx context.Context, cmds coord.Commander, nodeID, secret string, whisper func(callID int64, text string) error, log *slog.Logger) error {
	sub, err := cmds.Commands(ctx, nodeID)
	if err != nil {
		return err
	}
	aead := commandAEAD(secret)
	go func() {
		defer sub.Close()
		for cmd := range sub.C() {
			if cmd.Type != coord.CommandWhisper {
				continue
			}
			id, err := strconv.ParseInt(cmd.CallID, 10, 64)
			if err != nil {
				continue
			}
			var w whisperCmd
			if err := open(aead, cmd.Data, &w); err != nil {
				log.Warn("whisper not delivered", "call_id", id, "err", err)
				continue
			}
			if err := whisper(id, w.Text); err == nil {
				log.Info("whisper delivered", "call_id", id)
			}
		}
	}()
	return nil
}
