package cluster

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

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
type Live struct {
	reg  coord.Registry
	cmds coord.Commander
	aead cipher.AEAD
}

// NewLive returns the live calls of the nodes in reg, reached through
// cmds, sealing with secret.
func NewLive(reg coord.Registry, cmds coord.Commander, secret string) *Live {
	return &Live{reg: reg, cmds: cmds, aead: commandAEAD(secret)}
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
