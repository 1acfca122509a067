package rtp

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/media/jitter"
	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/quality"
)

// Config tunes a Session. Zero values mean the defaults.
type Config struct {
	// Local is the IP address to bind; the zero Addr means all IPv4 and
	// IPv6 interfaces.
	Local netip.Addr
	// RTCPMux binds only the RTP port and expects RTCP on it (RFC 5761).
	// Without it the odd port above is bound for RTCP as well, and RTCP
	// is multiplexed only if Params.RTCPMux says the peer agreed.
	RTCPMux bool
	// MediaTimeout is how long the peer may send no RTP before the
	// session reports ErrMediaTimeout through Done (while it should be
	// sending: not on hold), give or take up to 100 ms later
	// (recvTouchEvery). 0 means 30 s; negative disables it.
	MediaTimeout time.Duration
	// Jitter bounds the jitter buffer's delay (ClockRate is set per
	// codec; the other zero fields mean 20-80 ms).
	Jitter jitter.Config
	// RTCPInterval is the mean interval between our RTCP reports,
	// randomized by ±50% (RFC 3550 section 6.2); 0 means 5 s.
	RTCPInterval time.Duration
	// CNAME is our RTCP canonical name; empty means a random one.
	CNAME string
	// QueueFrames is the depth of WriteFrame's send queue; 0 means 25
	// (500 ms).
	QueueFrames int
	// SendCN sends RFC 3389 comfort noise at CNLevel while there is no
	// audio to send, when the peer negotiated CN, instead of encoded
	// silence. CNLevel is in -dBov; 0 means 70.
	SendCN  bool
	CNLevel int
	// TransitStats keeps the distribution of the per-packet transit
	// differences |D| of the peer's audio (RFC 3550 A.8, before its
	// smoothing into the jitter), for TransitDeviation: the peer's pacing
	// as this end sees it, arrival times stamped by the kernel. Off
	// (a nil check per packet) unless a prober asks.
	TransitStats bool
}

func (c Config) withDefaults() (Config, error) {
	if c.MediaTimeout == 0 {
		c.MediaTimeout = 30 * time.Second
	}
	if c.RTCPInterval == 0 {
		c.RTCPInterval = 5 * time.Second
	}
	if c.QueueFrames == 0 {
		c.QueueFrames = 25
	}
	if c.CNLevel == 0 {
		c.CNLevel = 70
	}
	switch {
	case c.RTCPInterval < 0:
		return c, fmt.Errorf("rtcp interval %v: %w", c.RTCPInterval, ErrBadConfig)
	case c.QueueFrames < 1 || c.QueueFrames > 500:
		return c, fmt.Errorf("queue of %d frames (1..500): %w", c.QueueFrames, ErrBadConfig)
	case c.CNLevel < 0 || c.CNLevel > 127:
		return c, fmt.Errorf("cn level %d dBov: %w", c.CNLevel, ErrBadConfig)
	}
	if c.CNAME == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		c.CNAME = "voiced-" + hex.EncodeToString(b[:])
	}
	jc := c.Jitter
	jc.ClockRate = 8000
	if _, err := jitter.New(jc); err != nil {
		return c, fmt.Errorf("jitter: %w", err)
	}
	return c, nil
}

// Session is one call's RTP/RTCP media: the sockets, the jitter buffer and
// codecs, and a stream on the node's pacer that sends one packet every
// 20 ms and then drains the RTP socket (plus, without RTCP multiplexing, a
// goroutine receiving RTCP). See the package documentation for the
// lifecycle and the threading contract.
type Session struct {
	cfg   Config
	log   *slog.Logger
	pacer *pace.Pacer
	sock  *sock        // RTP (and RTCP with mux), drained by the pacer worker
	rconn *net.UDPConn // RTCP without mux, else nil
	rsock *sock        // rconn's descriptor, for sends through the worker's ring (never closed)
	local netip.AddrPort
	ssrc  uint32
	m     quality.Metrics

	// mu guards the negotiated parameters, the latched peer, the receive
	// statistics and the receive codec: the drain (and the RTCP
	// goroutine), the reader and Update take it.
	mu       sync.Mutex
	params   Params
	started  bool
	latched  bool
	peer     netip.AddrPort // latched RTP source
	rtcpPeer netip.AddrPort // latched RTCP source (no mux)
	rx       rxStats
	rxc      *rxCodec
	rxGen    atomic.Uint64
	dtmf     dtmfRx
	onDTMF   func(Digit)
	remote   remoteReport

	// txMu guards the send state: the pacer's Tick, Update, SetSource and
	// SendDTMF take it.
	txMu sync.Mutex
	tx   txState

	// Frame pacing for ReadFrame: PostTick counts frames due and wakes a
	// waiting reader. With a Sink, PostTick is the reader.
	due     atomic.Uint64
	waiting atomic.Bool
	wake    chan struct{}
	reader  readerState
	sink    atomic.Pointer[sinkBox]

	// The WriteFrame queue (single producer, the pacer consumes).
	queue   *frameQueue
	writer  writerState
	hasSrc  atomic.Bool
	flushTo atomic.Uint64

	// Counters of receive codecs replaced by Update, so Metrics stay
	// cumulative across codec changes. Reader goroutine (under mu).
	base struct{ late, drops uint64 }

	lastRecv  atomic.Int64 // unix ns of the last RTP packet from the peer
	timedOut  atomic.Bool
	done      chan struct{} // closed on media timeout or Close
	closed    chan struct{} // closed by Close
	closing   atomic.Bool
	closeOnce sync.Once
	doneOnce  sync.Once
	paceH     pace.Handle
	wg        sync.WaitGroup

	// What the pacer prefetches ahead of the next Tick and PostTick
	// (prefetch.go); pacer worker only.
	hot hot
}

// remoteReport is what the peer last told us about our stream.
type remoteReport struct {
	byeAt time.Time
}

// NewSession binds a port pair from ports and starts the session's pacer
// stream (and its RTCP goroutine without RTCP multiplexing). Media flows once Update gives the
// negotiated Params; until then LocalAddr is all the session offers (for
// the SDP). log receives rare events only (latching, a new source, the
// media timeout); nil means slog.Default().
func NewSession(cfg Config, log *slog.Logger, pacer *pace.Pacer, ports *Ports) (*Session, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if pacer == nil || ports == nil {
		return nil, fmt.Errorf("pacer and ports are required: %w", ErrBadConfig)
	}
	if log == nil {
		log = slog.Default()
	}
	ip := cfg.Local
	if !ip.IsValid() {
		ip = netip.IPv6Unspecified()
	}
	conn, rconn, err := ports.listen(ip, cfg.RTCPMux)
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	s := &Session{
		cfg:    cfg,
		log:    log,
		pacer:  pacer,
		sock:   conn,
		rconn:  rconn,
		local:  conn.localAddr(),
		ssrc:   binary.BigEndian.Uint32(b[:]),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		closed: make(chan struct{}),
		queue:  newFrameQueue(cfg.QueueFrames),
	}
	if rconn != nil {
		s.rsock = sockOf(rconn)
	}
	if cfg.TransitStats {
		s.rx.dev = new(devHist)
	}
	s.tx.init(s)
	s.lastRecv.Store(time.Now().UnixNano())
	s.sock.enableTimestamps()
	if rconn != nil {
		s.wg.Add(1)
		go s.receiveRTCP(rconn)
	}
	h, err := pacer.Register(ticker{s})
	if err != nil {
		s.closeSockets()
		s.wg.Wait()
		return nil, fmt.Errorf("register with pacer: %w", err)
	}
	s.paceH = h
	if w, ok := pacer.Worker(h).(*workerIO); ok {
		// The first ticks may have sent alone; the rest go through the
		// worker's ring.
		s.txMu.Lock()
		s.tx.batch = w
		s.txMu.Unlock()
	}
	return s, nil
}

// ticker keeps Tick and PostTick out of Session's method set.
type ticker struct{ s *Session }

func (t ticker) Tick(now time.Time)     { t.s.tick(now) }
func (t ticker) PostTick(now time.Time) { t.s.postTick(now) }

// LocalAddr returns the bound RTP address, for the SDP (its IP is
// unspecified when Config.Local was).
func (s *Session) LocalAddr() netip.AddrPort { return s.local }

// SSRC returns the synchronization source of the packets we send.
func (s *Session) SSRC() uint32 { return s.ssrc }

// Metrics returns the call's live counters; they stay readable after Close.
func (s *Session) Metrics() *quality.Metrics { return &s.m }

// TransitDeviation returns the q-quantile (0 < q <= 1) of the per-packet
// transit differences |D| of the peer's audio and how many there were,
// when Config.TransitStats is on (else 0, 0). Values are upper edges of
// 125 µs buckets; 50 ms and more fall in the last.
func (s *Session) TransitDeviation(q float64) (time.Duration, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rx.dev.quantile(q)
}

// Snapshot returns the counters and the MOS estimate for the current codec.
func (s *Session) Snapshot() quality.Snapshot {
	s.mu.Lock()
	c := s.params.qualityCodec()
	s.mu.Unlock()
	return s.m.Snapshot(c)
}

// OnDTMF sets the function that receives digits from the peer. It runs on
// the pacer worker that drains the session's socket, outside the
// session's locks; it must not block, and must not call Close (which
// waits for that tick). A digit whose
// end packets were all lost is reported when the next packet of any kind
// arrives more than 250 ms after its last update.
func (s *Session) OnDTMF(f func(Digit)) {
	s.mu.Lock()
	s.onDTMF = f
	s.mu.Unlock()
}

// Done is closed when the media stops by itself: on a media timeout (Err
// then returns ErrMediaTimeout) or Close.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns ErrMediaTimeout after a media timeout, ErrClosed after Close,
// and nil while the session runs.
func (s *Session) Err() error {
	switch {
	case s.timedOut.Load():
		return ErrMediaTimeout
	case s.closing.Load():
		return ErrClosed
	}
	return nil
}

func (s *Session) finish() { s.doneOnce.Do(func() { close(s.done) }) }

// Update starts the media with negotiated parameters, or changes them for
// a re-INVITE or UPDATE: a new remote address (the latch is released so
// the new source can be learnt), a new codec (the jitter buffer and codecs
// are rebuilt), hold and resume. It does not block on the network.
func (s *Session) Update(p Params) error {
	if s.closing.Load() {
		return ErrClosed
	}
	if err := p.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.params
	codecChanged := !s.started || old.Codec != p.Codec || old.RecvPT != p.RecvPT
	var rxc *rxCodec
	if codecChanged {
		var err error
		if rxc, err = newRxCodec(p.Codec, s.cfg.Jitter, s.rxGen.Load()+1); err != nil {
			return err
		}
	}
	s.txMu.Lock()
	err := s.tx.update(s, p, codecChanged)
	s.txMu.Unlock()
	if err != nil {
		return err
	}
	if codecChanged {
		if s.rxc != nil {
			st := s.rxc.buf.Stats()
			s.base.late += st.Late
			s.base.drops += st.Dropped + st.Overflow
		}
		s.rxc = rxc
		s.rxGen.Add(1)
		s.rx = rxStats{dev: s.rx.dev}
	}
	if old.Remote != p.Remote || old.RemoteRTCP != p.RemoteRTCP || old.RTCPMux != p.RTCPMux {
		s.latched = false
		s.rtcpPeer = netip.AddrPort{}
	}
	if !old.Receive && p.Receive {
		// Coming off hold (or starting): the timeout counts from now.
		s.lastRecv.Store(time.Now().UnixNano())
	}
	s.dtmf.clock = p.DTMF.ClockRate
	if s.dtmf.clock == 0 {
		s.dtmf.clock = p.Codec.ClockRate
	}
	s.params = p
	s.started = true
	return nil
}

// Close stops the session: it leaves the pacer (no Tick, drain or Sink
// call runs after that), sends an RTCP BYE, closes the sockets, waits for
// the RTCP goroutine and releases a waiting ReadFrame. The reader's and writer's codec state
// is plain Go memory, left to the collector. Close is idempotent.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		s.pacer.Unregister(s.paceH)
		s.txMu.Lock()
		s.sendBye()
		s.tx.close()
		s.txMu.Unlock()
		s.closeSockets()
		s.wg.Wait()
		close(s.closed)
		s.finish()
	})
	return nil
}

func (s *Session) closeSockets() {
	s.sock.close()
	if s.rconn != nil {
		s.rconn.Close()
	}
}
