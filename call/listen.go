package call

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/control/calls"
)

// The listen socket (spec 4.14, docs/decisions.md "Live listen"): GET
// /v1/calls/{call_id}/listen with a token from POST
// /v1/calls/{call_id}/listen streams the call's mixed audio, one binary
// message per 20 ms, until the call ends (close 1000) or the listener
// falls a second behind (close 1008).
const (
	// listenBuffer is how many 20 ms frames a listener may have queued on
	// the node: one second. Past it the tap drops its frames and the
	// socket is closed with 1008.
	listenBuffer = 50
	// listenSendBuffer caps the socket's kernel send buffer (Linux
	// doubles it: 16 KB, half a second of 16 kHz PCM), so a slow listener
	// shows as a full queue within about a second instead of hiding
	// minutes of audio in the kernel.
	listenSendBuffer = 8 << 10
	// listenWriteTimeout bounds one message's write: a listener that
	// takes no data for that long is cut without a close frame (it could
	// not take one).
	listenWriteTimeout = 2 * time.Second
)

// Close reasons of the listen socket.
const (
	listenEndedReason = "call ended"
	listenSlowReason  = "listener fell more than 1 s behind: audio dropped"
)

// ListenHandler serves the listen socket of this node's calls, checking
// tokens with key (calls.ListenKey of the secret the control plane signs
// them with). Refusals come before the upgrade: 401 a bad, expired or
// other call's token, 426 not a WebSocket request, 409 the call is not
// live here (it has ended).
func (n *Node) ListenHandler(key []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := r.URL.Query().Get("token")
		if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && tok == "" {
			tok = a
		}
		g, err := calls.ParseListenToken(key, tok, time.Now())
		if err != nil || r.URL.Path != calls.ListenPath(g.CallID) {
			listenError(w, http.StatusUnauthorized, "The listen token is invalid, expired or for another call: POST /v1/calls/{call_id}/listen gives a new one.")
			return
		}
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			listenError(w, http.StatusUpgradeRequired, "The listen socket is a WebSocket: send Upgrade: websocket.")
			return
		}
		l, t, err := n.Listen(g.CallID, listenBuffer)
		if err != nil {
			listenError(w, http.StatusConflict, "The call is not live on this node: it has ended.")
			return
		}
		up := ws.HTTPUpgrader{Timeout: 10 * time.Second}
		nc, rw, _, err := up.Upgrade(r, w)
		if err != nil {
			t.Stop(l)
			if nc != nil {
				nc.Close()
			}
			return
		}
		log := n.log.With("call_id", g.CallID, "format", g.Format)
		log.Info("listener connected")
		code, reason := serveListener(nc, rw.Reader, l, g.Format)
		t.Stop(l)
		log.Info("listener gone", "close", code, "reason", reason, "dropped_frames", l.Dropped())
	})
}

func listenError(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"detail": detail})
	_, _ = w.Write(b)
}

// serveListener streams l's frames to nc in format until the call ends,
// the listener falls behind or goes away, and says how the socket ended
// (0: the connection broke).
func serveListener(nc net.Conn, br *bufio.Reader, l *Listener, format string) (ws.StatusCode, string) {
	defer nc.Close()
	if c, ok := nc.(interface{ SetWriteBuffer(int) error }); ok {
		_ = c.SetWriteBuffer(listenSendBuffer)
	}
	var mu sync.Mutex // one writer at a time: frames, pongs, the close
	write := func(f ws.Frame) error {
		mu.Lock()
		defer mu.Unlock()
		_ = nc.SetWriteDeadline(time.Now().Add(listenWriteTimeout))
		return ws.WriteFrame(nc, f)
	}
	closeWith := func(code ws.StatusCode, reason string) (ws.StatusCode, string) {
		if write(ws.NewCloseFrame(ws.NewCloseFrameBody(code, reason))) != nil {
			return 0, reason
		}
		return code, reason
	}
	// The listener sends nothing but control frames; a close or a broken
	// connection ends the stream.
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		var r io.Reader = nc
		if br != nil {
			r = br
		}
		for {
			h, err := ws.ReadHeader(r)
			if err != nil || h.OpCode == ws.OpClose {
				return
			}
			payload := make([]byte, min(h.Length, 125))
			if h.OpCode == ws.OpPing && h.Length <= 125 {
				if _, err := io.ReadFull(r, payload); err != nil {
					return
				}
				ws.Cipher(payload, h.Mask, 0)
				if write(ws.NewPongFrame(payload)) != nil {
					return
				}
				continue
			}
			if _, err := io.CopyN(io.Discard, r, h.Length); err != nil {
				return
			}
		}
	}()
	enc := listenEncoder{format: format}
	for {
		select {
		case pcm, ok := <-l.C:
			if !ok {
				return closeWith(ws.StatusNormalClosure, listenEndedReason)
			}
			if l.Dropped() > 0 {
				return closeWith(ws.StatusPolicyViolation, listenSlowReason)
			}
			for _, msg := range enc.encode(pcm) {
				if write(ws.NewBinaryFrame(msg)) != nil {
					return 0, "write failed"
				}
			}
		case <-gone:
			_, _ = closeWith(ws.StatusNormalClosure, "")
			return ws.StatusNormalClosure, "listener closed"
		}
	}
}

// listenEncoder turns the tap's frames (8 or 16 kHz, by the call) into
// 20 ms messages of a listen format: resampled when the rates differ,
// then 16-bit little-endian PCM or G.711.
type listenEncoder struct {
	format string
	rs     *resample.Resampler
	// pending holds resampled samples short of a whole frame.
	pending []int16
	buf     []int16
}

func (e *listenEncoder) encode(pcm []int16) [][]byte {
	rate, out := len(pcm)*50, calls.ListenRate(e.format)
	samples := pcm
	if rate != out {
		if e.rs == nil || e.rs.InputRate() != rate {
			rs, err := resample.New(rate, out, resample.QualityLow)
			if err != nil {
				return nil
			}
			e.rs, e.pending = rs, e.pending[:0]
		}
		if m := e.rs.OutputLen(len(pcm)); cap(e.buf) < m {
			e.buf = make([]int16, m)
		}
		k, err := e.rs.ProcessTo(e.buf[:cap(e.buf)], pcm)
		if err != nil {
			return nil
		}
		e.pending = append(e.pending, e.buf[:k]...)
		samples = nil
	} else if len(e.pending) > 0 {
		e.pending = e.pending[:0]
	}
	n := out / 50
	var msgs [][]byte
	emit := func(f []int16) {
		switch e.format {
		case calls.ListenULaw:
			b := make([]byte, len(f))
			g711.EncodeULawTo(b, f)
			msgs = append(msgs, b)
		case calls.ListenALaw:
			b := make([]byte, len(f))
			g711.EncodeALawTo(b, f)
			msgs = append(msgs, b)
		default:
			b := make([]byte, 2*len(f))
			for i, s := range f {
				binary.LittleEndian.PutUint16(b[2*i:], uint16(s))
			}
			msgs = append(msgs, b)
		}
	}
	if samples != nil {
		emit(samples)
		return msgs
	}
	i := 0
	for ; len(e.pending)-i >= n; i += n {
		emit(e.pending[i : i+n])
	}
	e.pending = append(e.pending[:0], e.pending[i:]...) // the rest, short of a frame
	return msgs
}
