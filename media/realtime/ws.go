package realtime

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gobwas/ws"
)

// wsReader reads WebSocket messages (RFC 6455) from a client connection:
// it reassembles fragments, unmasks, answers nothing itself (control
// frames are returned to the caller) and refuses messages longer than max
// before reading their payload. Its buffer is reused: a message is valid
// until the next read.
type wsReader struct {
	nc      net.Conn
	br      *bufio.Reader
	max     int
	timeout time.Duration
	buf     []byte
	// extended is when the read deadline was last pushed back: it moves
	// at most once a second, not per frame (each move is a timer update).
	extended time.Time
	// closing stops the extensions once the server closes: the deadline
	// its close set then stands.
	closing *atomic.Bool
}

// message is one read: a data message (text or binary) or a control
// frame (ping, pong, close).
type message struct {
	op      ws.OpCode
	payload []byte
}

// errTooLarge reports a message over the size limit.
var errTooLarge = errors.New("message too large")

// read returns the next message. Reading extends the read deadline to
// timeout (within a second): a client that sends nothing (not even the
// pong of our pings) for that long is gone.
func (r *wsReader) read() (message, error) {
	r.buf = r.buf[:0]
	var op ws.OpCode
	for {
		if r.timeout > 0 && (r.closing == nil || !r.closing.Load()) {
			if now := time.Now(); now.Sub(r.extended) > time.Second {
				r.extended = now
				_ = r.nc.SetReadDeadline(now.Add(r.timeout))
			}
		}
		h, err := ws.ReadHeader(r.br)
		if err != nil {
			return message{}, err
		}
		if !h.Masked {
			return message{}, fmt.Errorf("%w: unmasked client frame", ws.ErrProtocolMaskRequired)
		}
		if h.Rsv != 0 {
			return message{}, ws.ErrProtocolNonZeroRsv
		}
		if h.OpCode.IsControl() {
			if h.Length > 125 || !h.Fin {
				return message{}, ws.ErrProtocolControlPayloadOverflow
			}
			p := make([]byte, h.Length)
			if _, err := io.ReadFull(r.br, p); err != nil {
				return message{}, err
			}
			ws.Cipher(p, h.Mask, 0)
			return message{op: h.OpCode, payload: p}, nil
		}
		switch {
		case h.OpCode == ws.OpContinuation && op == 0:
			return message{}, ws.ErrProtocolContinuationUnexpected
		case h.OpCode != ws.OpContinuation && op != 0:
			return message{}, ws.ErrProtocolContinuationExpected
		case h.OpCode != ws.OpContinuation:
			if !h.OpCode.IsData() {
				return message{}, ws.ErrProtocolOpCodeReserved
			}
			op = h.OpCode
		}
		if h.Length > int64(r.max-len(r.buf)) {
			return message{}, errTooLarge
		}
		n := len(r.buf)
		r.buf = slices.Grow(r.buf, int(h.Length))[:n+int(h.Length)]
		if _, err := io.ReadFull(r.br, r.buf[n:]); err != nil {
			return message{}, err
		}
		ws.Cipher(r.buf[n:], h.Mask, 0)
		if h.Fin {
			if op == ws.OpText && !utf8.Valid(r.buf) {
				return message{}, ws.ErrProtocolInvalidUTF8
			}
			return message{op: op, payload: r.buf}, nil
		}
	}
}

// closeBody is the payload of a close frame with code and reason (at most
// 123 bytes of reason).
func closeBody(code ws.StatusCode, reason string) []byte {
	if len(reason) > 123 {
		reason = reason[:123]
	}
	return ws.NewCloseFrameBody(code, reason)
}
