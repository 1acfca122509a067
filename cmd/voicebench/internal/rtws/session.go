package rtws

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtpstat"
	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/pcm"
)

// maxMessage bounds one server message.
const maxMessage = 4 << 20

// talkspurt is the silence between deltas after which the next delta
// starts a new talkspurt (its timestamp follows the wall clock).
const talkspurt = 200 * time.Millisecond

type session struct {
	t    *Target
	conn net.Conn
	br   *bufio.Reader
	wmu  sync.Mutex // one frame at a time on the socket
	bw   *bufio.Writer

	queue *load.FrameQueue // pacer to writer

	ctx    context.Context // the session's life; Hangup cancels it
	cancel context.CancelFunc
	ended  chan struct{} // closed when the server ends the session
	wg     sync.WaitGroup

	onsetSent [8]atomic.Int64
	onsets    atomic.Uint64

	mu     sync.Mutex // receive statistics
	stream rtpstat.Stream
	jitter rtpstat.Histogram // |D| since the last DrainJitter
	seq    uint16
	ts     uint32
	last   time.Time
	lastN  int
	onset  *audio.Onset
	pcm    []int16
	raw    []byte
	lags   []time.Duration
	first  time.Time
}

func dial(ctx context.Context, t *Target, h http.Header) (*session, error) {
	d := ws.Dialer{Header: ws.HandshakeHeaderHTTP(h)}
	conn, br, _, err := d.Dial(ctx, t.url)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if br == nil {
		br = bufio.NewReader(conn)
	}
	s := &session{t: t, conn: conn, br: br, bw: bufio.NewWriterSize(conn, 4096), queue: load.NewFrameQueue(),
		ended: make(chan struct{}), onset: audio.NewOnset(t.cfg.Format.Rate)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.stream.Reset(t.cfg.Format.Rate)
	return s, nil
}

// write sends one client frame (masked, as RFC 6455 requires of clients).
func (s *session) write(op ws.OpCode, p []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := wsutil.WriteClientMessage(s.bw, op, p); err != nil {
		return err
	}
	return s.bw.Flush()
}

// read returns the next data message, answering pings on the way.
func (s *session) read() (ws.OpCode, []byte, error) {
	var msg []byte
	var op ws.OpCode
	for {
		h, err := ws.ReadHeader(s.br)
		if err != nil {
			return 0, nil, err
		}
		if h.Length > maxMessage || int64(len(msg))+h.Length > maxMessage {
			return 0, nil, fmt.Errorf("server message over %d bytes", maxMessage)
		}
		p := make([]byte, h.Length)
		if _, err := io.ReadFull(s.br, p); err != nil {
			return 0, nil, err
		}
		if h.Masked {
			ws.Cipher(p, h.Mask, 0)
		}
		switch h.OpCode {
		case ws.OpPing:
			if err := s.write(ws.OpPong, p); err != nil {
				return 0, nil, err
			}
			continue
		case ws.OpPong:
			continue
		case ws.OpClose:
			return ws.OpClose, p, io.EOF
		case ws.OpText, ws.OpBinary:
			op = h.OpCode
		}
		msg = append(msg, p...)
		if h.Fin {
			return op, msg, nil
		}
	}
}

// await sends first (if any) and reads events until one of type want;
// an error event or a closed socket refuses the session.
func (s *session) await(ctx context.Context, want string, first []byte) error {
	if dl, ok := ctx.Deadline(); ok {
		s.conn.SetReadDeadline(dl)
		defer s.conn.SetReadDeadline(time.Time{})
	}
	if first != nil {
		if err := s.write(ws.OpText, first); err != nil {
			return fmt.Errorf("send: %w", err)
		}
	}
	for {
		op, b, err := s.read()
		if err != nil {
			return fmt.Errorf("%w: waiting for %s: %v", ErrRefused, want, err)
		}
		if op != ws.OpText {
			continue
		}
		var e event
		if json.Unmarshal(b, &e) != nil {
			continue
		}
		switch {
		case e.Type == want:
			return nil
		case e.Type == "error":
			return e.refusal()
		}
	}
}

// start runs the writer and reader.
func (s *session) start() {
	s.wg.Add(2)
	go s.writeLoop()
	go s.readLoop()
}

// SendFrame implements load.MediaSession.
func (s *session) SendFrame(frame int) { s.queue.Push(frame) }

func (s *session) writeLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.queue.Ready():
		}
		for {
			f, ok := s.queue.Pop()
			if !ok {
				break
			}
			if f == s.t.onsetAt {
				n := s.onsets.Load()
				s.onsetSent[n%8].Store(time.Now().Add(s.t.onsetOff).UnixNano())
				s.onsets.Store(n + 1)
			}
			if err := s.write(ws.OpText, s.t.msgs[f]); err != nil {
				return
			}
		}
	}
}

func (s *session) readLoop() {
	defer s.wg.Done()
	for {
		op, b, err := s.read()
		if err != nil {
			if s.ctx.Err() == nil {
				close(s.ended) // the server ended the session
			}
			return
		}
		now := time.Now()
		switch op {
		case ws.OpBinary:
			s.receive(b, now)
		case ws.OpText:
			var e event
			if json.Unmarshal(b, &e) != nil || !e.audio() {
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(e.Delta)
			if err != nil {
				continue
			}
			s.receive(raw, now)
		}
	}
}

// receive measures one chunk of agent audio.
func (s *session) receive(b []byte, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int
	switch s.t.cfg.Format.Name {
	case "g711_ulaw":
		s.pcm = grow(s.pcm, len(b))
		n = g711.DecodeULawTo(s.pcm, b)
	case "g711_alaw":
		s.pcm = grow(s.pcm, len(b))
		n = g711.DecodeALawTo(s.pcm, b)
	default:
		s.pcm = grow(s.pcm, len(b)/2)
		n, _ = pcm.BytesToInt16To(s.pcm, b[:len(b)/2*2])
	}
	if n == 0 {
		return
	}
	rate := s.t.cfg.Format.Rate
	switch {
	case s.last.IsZero():
	case now.Sub(s.last) > talkspurt:
		s.ts += uint32(now.Sub(s.last).Seconds() * float64(rate))
	default:
		s.ts += uint32(s.lastN)
	}
	if d, fresh := s.stream.Add(s.seq, s.ts, now.UnixNano()); fresh && s.seq > 0 {
		s.jitter.Add(d)
	}
	s.seq++
	s.last, s.lastN = now, n
	if k := s.onset.Feed(s.pcm[:n]); k >= 0 {
		t := now.Add(time.Duration(k) * time.Second / time.Duration(rate))
		if s.first.IsZero() {
			s.first = t
		}
		if sent := s.matchOnset(t.UnixNano()); sent != 0 {
			s.lags = append(s.lags, time.Duration(t.UnixNano()-sent))
		}
	}
}

func (s *session) matchOnset(t int64) int64 {
	var best int64
	n := s.onsets.Load()
	for i := uint64(0); i < min(n, 8); i++ {
		v := s.onsetSent[(n-1-i)%8].Load()
		if v != 0 && v <= t && v > best {
			best = v
		}
	}
	return best
}

func grow(b []int16, n int) []int16 {
	if cap(b) < n {
		return make([]int16, n)
	}
	return b[:n]
}

// Hangup implements load.Session: a normal close, then the goroutines end.
func (s *session) Hangup(context.Context) error {
	s.cancel()
	err := s.write(ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, "voicebench done"))
	s.conn.Close()
	s.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// Ended implements load.Session.
func (s *session) Ended() <-chan struct{} { return s.ended }

// Stats implements load.MediaSession.
func (s *session) Stats() rtpstat.Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream.Summary()
}

// DrainJitter implements load.MediaSession.
func (s *session) DrainJitter(h *rtpstat.Histogram) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.Merge(&s.jitter)
	s.jitter.Reset()
}

// Audio implements load.MediaSession.
func (s *session) Audio() ([]time.Duration, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.lags...), s.first
}
