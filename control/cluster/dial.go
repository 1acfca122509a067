package cluster

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/storage/coord"
)

// CommandDial is the node command that places an outbound call; its Data
// is the sealed control.OutboundCall.
const CommandDial = "dial"

// Dialer places the control plane's outbound calls (POST /v1/call) on
// media nodes (control.Dialer): the coord placement picks a node and the
// call goes to it as a dial command. The command carries the trunk's
// credentials, so it is sealed (AES-256-GCM) with a key derived from the
// cluster secret: Redis never holds them in the clear.
type Dialer struct {
	placer coord.Placer
	cmds   coord.Commander
	aead   cipher.AEAD
	owners Owners
}

// Owners records the media node that holds a call (calllog.Log's
// AssignNode), so the call is ended if the node is lost.
type Owners interface {
	AssignNode(ctx context.Context, callID int64, node string) error
}

// SetOwners has each call recorded as its node's before it is sent
// there; call it before the first Dial.
func (d *Dialer) SetOwners(o Owners) { d.owners = o }

// NewDialer returns the dialer over p and c, sealing with secret.
func NewDialer(p coord.Placer, c coord.Commander, secret string) *Dialer {
	return &Dialer{placer: p, cmds: c, aead: commandAEAD(secret)}
}

// Dial implements control.Dialer. It returns once the node has the
// command; how the call goes (including a failure to dial it) reaches
// the call's record from the node.
func (d *Dialer) Dial(ctx context.Context, o control.OutboundCall) error {
	n, err := d.placer.Pick(ctx)
	if err != nil {
		return fmt.Errorf("place outbound call: %w", err)
	}
	data, err := seal(d.aead, o)
	if err != nil {
		return err
	}
	if d.owners != nil {
		if err := d.owners.AssignNode(ctx, o.CallID, n.ID); err != nil {
			return fmt.Errorf("place outbound call: %w", err)
		}
	}
	_, err = d.cmds.Send(ctx, n.ID, coord.Command{CallID: strconv.FormatInt(o.CallID, 10), Type: CommandDial, Data: data})
	return err
}

func commandAEAD(secret string) cipher.AEAD {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("voiced cluster commands v1"))
	block, _ := aes.NewCipher(m.Sum(nil)) // 32 bytes: never fails
	aead, _ := cipher.NewGCM(block)
	return aead
}

// seal is v as JSON, encrypted and authenticated with aead (nonce first):
// a command's payload.
func seal(aead cipher.AEAD, v any) ([]byte, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	return aead.Seal(nonce, nonce, plain, nil), nil
}

// open decodes into v a payload made by seal with the same secret.
func open(aead cipher.AEAD, data []byte, v any) error {
	n := aead.NonceSize()
	if len(data) < n {
		return errors.New("command too short")
	}
	plain, err := aead.Open(nil, data[:n], data[n:], nil)
	if err != nil {
		return errors.New("command does not open with this node's cluster secret")
	}
	return json.Unmarshal(plain, v)
}

// Finisher ends a call's record (call.Finisher; the Client).
type Finisher interface {
	Finish(ctx context.Context, callID int64, end calllog.CallEnd) error
}

// FollowDials subscribes node nodeID to its dial commands and places
// each with dial until ctx ends; a call that cannot be dialed (or whose
// command does not open with secret) is finished as failed, dial_failed.
// Subscribe before the node registers: commands sent earlier are not
// seen.
func FollowDials(ctx context.Context, cmds coord.Commander, nodeID, secret string, dial func(context.Context, control.OutboundCall) error,
	fin Finisher, log *slog.Logger) error {
	sub, err := cmds.Commands(ctx, nodeID)
	if err != nil {
		return err
	}
	aead := commandAEAD(secret)
	go func() {
		defer sub.Close()
		for cmd := range sub.C() {
			if cmd.Type == CommandDial {
				// Each dial on its own: a slow trunk (REGISTER first)
				// holds up no other call.
				go placeDial(ctx, aead, cmd, dial, fin, log)
			}
		}
	}()
	return nil
}

// placeDial dials one command's call, as POST /v1/call would in serve
// (30 s to start it); a call it cannot start ends failed.
func placeDial(ctx context.Context, aead cipher.AEAD, cmd coord.Command, dial func(context.Context, control.OutboundCall) error, fin Finisher, log *slog.Logger) {
	o, err := openDial(aead, cmd.Data)
	if err == nil {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = dial(dctx, o)
		cancel()
	}
	if err == nil {
		return
	}
	log.Warn("outbound call not placed", "call_id", cmd.CallID, "err", err)
	id, perr := strconv.ParseInt(cmd.CallID, 10, 64)
	if perr != nil {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if ferr := fin.Finish(fctx, id, calllog.CallEnd{Status: "failed", Reason: "dial_failed", Detail: err.Error(), At: time.Now()}); ferr != nil {
		log.Error("failed outbound call not recorded", "call_id", id, "err", ferr)
	}
}

func openDial(aead cipher.AEAD, data []byte) (control.OutboundCall, error) {
	var o control.OutboundCall
	if err := open(aead, data, &o); err != nil {
		return o, fmt.Errorf("dial %w", err)
	}
	return o, nil
}
