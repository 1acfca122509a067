package webrtc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	pion "github.com/pion/webrtc/v4"

	"github.com/voiced/voiced/codecs/opus"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media"
	"github.com/voiced/voiced/media/jitter"
	"github.com/voiced/voiced/media/pace"
	"github.com/voiced/voiced/media/quality"
)

// opusFrameTicks is one 20 ms frame in Opus's 48 kHz RTP clock (RFC 7587
// section 4.1: the clock is 48 kHz whatever the audio bandwidth).
const opusFrameTicks = 960

// voicedRMS is the RMS above which a received frame counts as voiced
// (about -54 dBFS): room noise of a silent microphone stays below it.
const voicedRMS = 64

// maxPendingMessages bounds the data-channel messages held until the
// browser's channel opens.
const maxPendingMessages = 64

// Session is one browser call: a PeerConnection carrying Opus both ways
// and an optional data channel. The engine reads the caller's 20 ms frames
// with ReadFrame and writes the agent's with WriteFrame; both are paced by
// the node's send clock.
//
// Concurrency: ReadFrame is called by one goroutine and WriteFrame by one
// goroutine (the same or another). Send, Stats, Close, Done and End may be
// called from any goroutine.
type Session struct {
	srv  *Server
	log  *slog.Logger
	opts SessionOptions
	pc   *pion.PeerConnection

	inSamples, outSamples int

	// Receive side: pion's goroutine (readRTP) pushes into the jitter
	// buffer; ReadFrame pops one frame per tick. rxMu serializes them.
	rxMu    sync.Mutex
	jbuf    *jitter.Buffer
	playout *jitter.Playout
	ticks   chan time.Time

	// Send side: WriteFrame encodes into q, Tick sends from it. space
	// holds one token per free slot, so WriteFrame waits for the clock.
	track  *pion.TrackLocalStaticRTP
	enc    *opus.Encoder // CELT, until lossy asks for SILK with FEC
	fec    bool          // enc is the SILK encoder with in-band FEC
	lossy  atomic.Bool   // the browser reported FECLossPercent or more loss
	up     *resample.Resampler
	encIn  []int16
	q      *sendQueue
	space  chan struct{}
	pkt    rtp.Packet
	seq    uint16
	ts     uint32
	marker bool
	handle pace.Handle

	connected   atomic.Bool
	answeredAt  time.Time
	connectedAt atomic.Int64 // unix nanoseconds
	timers      []*time.Timer

	dcMu    sync.Mutex
	dc      *pion.DataChannel
	dcOpen  bool
	pending [][]byte

	mu      sync.Mutex
	closing bool
	wg      sync.WaitGroup // the RTP and RTCP read loops

	closeOnce sync.Once
	done      chan struct{}
	reason    string
	final     Stats

	// m are the call's quality counters (shared with whoever passed them
	// in SessionOptions.Metrics); rs feeds its receive side.
	m  *quality.Metrics
	rs rtpStats
	c  counters
}

// counters are the session's own atomics, read by Stats.
type counters struct {
	framesIn, framesVoiced          atomic.Uint64
	framesOut, dtxFrames, lateTicks atomic.Uint64
	fecSwitches                     atomic.Uint64 // 0 or 1: the encoder went SILK with FEC
	reports                         atomic.Uint64 // reception reports about our stream
	energyIn                        atomic.Uint64 // sum of per-frame mean squares
	peakRMS                         atomic.Uint64 // math.Float64bits
}

func newSession(srv *Server, opts SessionOptions) (*Session, error) {
	cfg := srv.cfg
	s := &Session{srv: srv, opts: opts, log: srv.log.With("call_id", opts.CallID),
		inSamples: media.SamplesPerFrame(cfg.InputRate), outSamples: media.SamplesPerFrame(cfg.OutputRate),
		ticks: make(chan time.Time, 4), q: newSendQueue(cfg.SendQueue), space: make(chan struct{}, cfg.SendQueue),
		done: make(chan struct{}), seq: uint16(rand.Uint32()), ts: rand.Uint32(), marker: true, m: opts.Metrics}
	if s.m == nil {
		s.m = &quality.Metrics{}
	}
	s.rs.m = s.m
	for range cfg.SendQueue {
		s.space <- struct{}{}
	}
	var err error
	if s.jbuf, err = jitter.New(jitter.Config{ClockRate: 48000}); err != nil {
		return nil, err
	}
	dec, err := jitter.NewOpus(cfg.InputRate)
	if err != nil {
		return nil, err
	}
	if s.playout, err = jitter.NewPlayout(s.jbuf, dec); err != nil {
		return nil, err
	}
	if r := cfg.OutputRate; r != media.Rate16k && r != media.Rate48k {
		if s.up, err = resample.New(r, media.Rate48k, resample.QualityHigh); err != nil {
			return nil, err
		}
		s.encIn = make([]int16, media.SamplesPerFrame(media.Rate48k))
	}
	if s.enc, err = opus.NewEncoder(s.encoderConfig(false)); err != nil {
		return nil, err
	}
	s.pkt.Header = rtp.Header{Version: 2, PayloadType: opusPayloadType}
	return s, nil
}

// encoderConfig is the node's Opus encoder: CELT low delay, or with fec
// SILK with in-band FEC sized for the loss the browser reported.
func (s *Session) encoderConfig(fec bool) opus.EncoderConfig {
	cfg := s.srv.cfg
	rate := cfg.OutputRate
	if rate != media.Rate16k {
		rate = media.Rate48k
	}
	c := opus.EncoderConfig{SampleRate: rate, Bitrate: cfg.Bitrate, Complexity: cfg.Complexity, DTX: true, LowDelay: !fec}
	if fec {
		c.FEC, c.PacketLossPercent = true, max(cfg.FECLossPercent, int(s.m.RemoteLossFraction.Load())*100/256)
	}
	return c
}

// switchToFEC replaces the CELT encoder with SILK and in-band FEC once
// the browser reports loss. The decoder follows the mode change by itself
// (libopus cross-fades it); the RTP stream goes on unbroken.
func (s *Session) switchToFEC() {
	enc, err := opus.NewEncoder(s.encoderConfig(true))
	if err != nil {
		s.log.Warn("webrtc: FEC encoder", "err", err)
		s.fec = true // do not retry every frame
		return
	}
	s.enc, s.fec = enc, true
	s.c.fecSwitches.Add(1)
	s.log.Debug("webrtc: loss reported; encoding SILK with in-band FEC", "loss_fraction", s.m.RemoteLossFraction.Load())
}

// start creates the PeerConnection, answers offer and waits for ICE
// gathering.
func (s *Session) start(ctx context.Context, pcfg pion.Configuration, offer string) (string, error) {
	pc, err := s.srv.api.NewPeerConnection(pcfg)
	if err != nil {
		return "", fmt.Errorf("new peer connection: %w", err)
	}
	s.mu.Lock()
	s.pc = pc
	s.mu.Unlock()
	pc.OnTrack(s.onTrack)
	pc.OnConnectionStateChange(s.onState)
	pc.OnDataChannel(s.onDataChannel)
	if err := pc.SetRemoteDescription(pion.SessionDescription{Type: pion.SDPTypeOffer, SDP: offer}); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadOffer, err)
	}
	if s.track, err = pion.NewTrackLocalStaticRTP(pion.RTPCodecCapability{MimeType: pion.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "audio", "voiced"); err != nil {
		return "", err
	}
	sender, err := pc.AddTrack(s.track)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadOffer, err)
	}
	// RTCP from the browser (receiver reports) reaches the interceptors
	// only while someone reads it.
	var ssrc uint32
	if enc := sender.GetParameters().Encodings; len(enc) > 0 {
		ssrc = uint32(enc[0].SSRC)
	}
	if !s.goLoop(func() { s.readRTCP(sender, ssrc) }) {
		return "", ErrClosed
	}
	answer, err := pc.CreateAnswer(nil)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadOffer, err)
	}
	gathered := pion.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(answer); err != nil {
		return "", fmt.Errorf("set local description: %w", err)
	}
	gt := time.NewTimer(s.srv.cfg.GatherTimeout)
	defer gt.Stop()
	select {
	case <-gathered:
	case <-gt.C:
		return "", ErrGatherTimeout
	case <-ctx.Done():
		return "", ctx.Err()
	case <-s.done:
		return "", ErrClosed
	}
	s.answeredAt = time.Now()
	if s.handle, err = s.srv.pacer.Register(s); err != nil {
		return "", ErrClosed
	}
	s.mu.Lock()
	if !s.closing {
		s.timers = append(s.timers, time.AfterFunc(s.srv.cfg.ConnectTimeout, func() {
			if !s.connected.Load() {
				s.Close("connect_timeout")
			}
		}))
	}
	s.mu.Unlock()
	return withPlaybackRate(pc.LocalDescription().SDP, s.srv.cfg.InputRate), nil
}

// withPlaybackRate adds maxplaybackrate (RFC 7587 section 6.1) to the
// answer's Opus format parameters when the engine takes the caller's audio
// below 48 kHz: the browser then encodes no wider band than that (libwebrtc
// caps its encoder's bandwidth by it, wideband at 16000), so it sends
// SILK rather than hybrid or CELT packets, which cost the node half as much
// to decode, with nothing lost, since the decoder outputs that rate.
func withPlaybackRate(sdp string, rate int) string {
	if rate >= media.Rate48k {
		return sdp
	}
	lines := strings.Split(sdp, "\r\n")
	pt := ""
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "a=rtpmap:"); ok {
			if p, codec, ok := strings.Cut(v, " "); ok && strings.HasPrefix(strings.ToLower(codec), "opus/48000") {
				pt = p
				break
			}
		}
	}
	if pt == "" {
		return sdp
	}
	param := "maxplaybackrate=" + strconv.Itoa(rate)
	for i, l := range lines {
		v, ok := strings.CutPrefix(l, "a=fmtp:"+pt+" ")
		if !ok {
			continue
		}
		params := []string{}
		for _, p := range strings.Split(v, ";") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(strings.ToLower(p), "maxplaybackrate=") {
				params = append(params, p)
			}
		}
		lines[i] = "a=fmtp:" + pt + " " + strings.Join(append(params, param), ";")
		return strings.Join(lines, "\r\n")
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "a=rtpmap:"+pt+" ") {
			lines = append(lines[:i+1], append([]string{"a=fmtp:" + pt + " " + param}, lines[i+1:]...)...)
			break
		}
	}
	return strings.Join(lines, "\r\n")
}

// goLoop runs fn on a goroutine the session waits for in Close, unless
// the session is already closing.
func (s *Session) goLoop(fn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Go(fn)
	return true
}

// readRTCP reads the browser's RTCP (which also feeds pion's report
// interceptor) and keeps what its reception reports say about the node's
// stream, ssrc: loss, jitter and the round trip (RFC 3550 section 6.4.1).
// RTCP comes every few seconds, so parsing allocations do not matter.
func (s *Session) readRTCP(sender *pion.RTPSender, ssrc uint32) {
	for {
		pkts, _, err := sender.ReadRTCP()
		if err != nil {
			return
		}
		at := time.Now()
		for _, p := range pkts {
			var reports []rtcp.ReceptionReport
			switch r := p.(type) {
			case *rtcp.ReceiverReport:
				reports = r.Reports
			case *rtcp.SenderReport:
				reports = r.Reports
			}
			for _, rr := range reports {
				if rr.SSRC == ssrc {
					s.receptionReport(rr, at)
				}
			}
		}
	}
}

// receptionReport records one report block about the node's stream.
func (s *Session) receptionReport(rr rtcp.ReceptionReport, at time.Time) {
	m := s.m
	s.c.reports.Add(1)
	m.RemoteLossFraction.Store(uint32(rr.FractionLost))
	if !s.srv.cfg.DisableFEC && int(rr.FractionLost)*100 >= s.srv.cfg.FECLossPercent*256 {
		s.lossy.Store(true)
	}
	lost := int64(rr.TotalLost & 0xffffff)
	if lost >= 1<<23 {
		lost -= 1 << 24 // 24-bit signed
	}
	m.RemoteLost.Store(lost)
	m.RemoteJitter.Store(int64(rr.Jitter) * int64(time.Second) / 48000)
	if rr.LastSenderReport != 0 {
		// RTT = A - LSR - DLSR in compact NTP (1/65536 s).
		if d := int64(int32(compactNTP(at) - rr.LastSenderReport - rr.Delay)); d >= 0 {
			m.RTT.Store(d * int64(time.Second) >> 16)
		}
	}
}

// compactNTP is the middle 32 bits of t's NTP timestamp (RFC 3550 4).
func compactNTP(t time.Time) uint32 {
	const ntpEpoch = 2208988800 // seconds from 1900 to 1970
	secs := uint64(t.Unix()) + ntpEpoch
	frac := uint64(t.Nanosecond()) << 32 / 1e9
	return uint32((secs<<32 | frac) >> 16)
}

// onTrack runs the receive loop of the browser's audio on pion's
// goroutine: one read per packet into the jitter buffer.
func (s *Session) onTrack(track *pion.TrackRemote, _ *pion.RTPReceiver) {
	if track.Kind() != pion.RTPCodecTypeAudio {
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	buf := make([]byte, 1500)
	var pkt rtp.Packet
	for {
		n, _, err := track.Read(buf)
		if err != nil {
			return
		}
		s.receive(&pkt, buf[:n], time.Now())
	}
}

// receive parses one RTP packet and pushes it into the jitter buffer.
func (s *Session) receive(pkt *rtp.Packet, b []byte, at time.Time) {
	if err := pkt.Unmarshal(b); err != nil || len(pkt.Payload) == 0 {
		s.m.Malformed.Add(1)
		return
	}
	samples, err := opus.PacketSamples(pkt.Payload, 48000)
	if err != nil {
		s.m.Malformed.Add(1)
		return
	}
	s.rxMu.Lock()
	v := s.jbuf.Push(jitter.Packet{Seq: pkt.SequenceNumber, Timestamp: pkt.Timestamp, Marker: pkt.Marker, Samples: samples, Payload: pkt.Payload}, at)
	s.rxMu.Unlock()
	switch v {
	case jitter.Duplicate:
		s.m.Duplicates.Add(1)
		return
	case jitter.Late:
		s.m.Late.Add(1)
	}
	s.rs.packet(pkt.SequenceNumber, pkt.Timestamp, at, len(pkt.Payload))
}

func (s *Session) onState(st pion.PeerConnectionState) {
	switch st {
	case pion.PeerConnectionStateConnected:
		if s.connected.CompareAndSwap(false, true) {
			now := time.Now()
			s.connectedAt.Store(now.UnixNano())
			s.log.Debug("webrtc connected", "setup_ms", now.Sub(s.answeredAt).Milliseconds())
			if d := s.opts.MaxDuration; d > 0 {
				s.mu.Lock()
				if !s.closing {
					s.timers = append(s.timers, time.AfterFunc(d, func() { s.Close("timeout") }))
				}
				s.mu.Unlock()
			}
		}
	case pion.PeerConnectionStateFailed:
		s.srv.closeAsync(s, "ice_failed")
	case pion.PeerConnectionStateClosed:
		s.srv.closeAsync(s, "caller_hangup")
	}
}

// hangup is the message the widget sends before closing its connection.
type controlMessage struct {
	Type string `json:"type"`
}

func (s *Session) onDataChannel(dc *pion.DataChannel) {
	s.dcMu.Lock()
	if s.dc != nil {
		s.dcMu.Unlock()
		return // one events channel per call; others are ignored
	}
	s.dc = dc
	s.dcMu.Unlock()
	dc.OnOpen(func() {
		s.dcMu.Lock()
		defer s.dcMu.Unlock()
		s.dcOpen = true
		for _, m := range s.pending {
			_ = dc.SendText(string(m))
		}
		s.pending = nil
	})
	dc.OnMessage(func(m pion.DataChannelMessage) {
		var cm controlMessage
		if json.Unmarshal(m.Data, &cm) == nil && cm.Type == "hangup" {
			s.srv.closeAsync(s, "caller_hangup")
			return
		}
		if s.opts.OnMessage != nil {
			s.opts.OnMessage(m.Data)
		}
	})
	// The page closing its connection closes the channel first: that is a
	// hang-up, seen sooner than ICE consent expiry.
	dc.OnClose(func() { s.srv.closeAsync(s, "caller_hangup") })
}

// Send sends msg (a JSON text) to the browser on the events data channel,
// holding up to 64 messages until the channel opens. It is not for audio.
func (s *Session) Send(msg []byte) error {
	select {
	case <-s.done:
		return ErrClosed
	default:
	}
	s.dcMu.Lock()
	defer s.dcMu.Unlock()
	if !s.dcOpen || s.dc == nil {
		if len(s.pending) < maxPendingMessages {
			s.pending = append(s.pending, append([]byte(nil), msg...))
		}
		return nil
	}
	return s.dc.SendText(string(msg))
}

// Tick is the send clock (pace.Stream): it sends the next queued packet,
// if any, and releases one ReadFrame. It never blocks.
func (s *Session) Tick(now time.Time) {
	select {
	case s.ticks <- now:
	default:
		s.c.lateTicks.Add(1) // the reader is behind; the jitter buffer absorbs it
	}
	if !s.connected.Load() {
		return // hold queued audio (a greeting) until the browser can hear it
	}
	if p := s.q.peek(); p != nil {
		if p.dtx {
			s.c.dtxFrames.Add(1)
			s.marker = true
		} else {
			s.pkt.SequenceNumber, s.pkt.Timestamp, s.pkt.Marker = s.seq, s.ts, s.marker
			s.pkt.Payload = p.buf[:p.n]
			if s.track.WriteRTP(&s.pkt) == nil {
				s.m.PacketsSent.Add(1)
				s.m.BytesSent.Add(uint64(p.n))
			}
			s.seq++
			s.marker = false
		}
		s.q.pop()
		select {
		case s.space <- struct{}{}:
		default:
		}
	} else {
		s.m.Underflows.Add(1)
		s.marker = true // the next packet starts a talkspurt
	}
	s.ts += opusFrameTicks
}

// ReadFrame waits for the next tick of the send clock and fills dst (20
// ms at Config.InputRate) with the caller's audio: decoded, reordered
// and, where packets are missing, concealed by the jitter buffer; silence
// before the browser sends. It returns ErrClosed once the session ended.
func (s *Session) ReadFrame(dst []int16) error {
	if len(dst) != s.inSamples {
		return fmt.Errorf("%w: %d samples, want %d", ErrFrameSize, len(dst), s.inSamples)
	}
	select {
	case <-s.done:
		return ErrClosed
	default:
	}
	var now time.Time
	select {
	case now = <-s.ticks:
	case <-s.done:
		return ErrClosed
	}
	s.rxMu.Lock()
	act, err := s.playout.ReadFrame(now, dst)
	js := s.jbuf.Stats()
	s.rxMu.Unlock()
	if err != nil {
		return err
	}
	m := s.m
	m.FramesPlayed.Add(1)
	if act == jitter.Conceal {
		m.FramesConcealed.Add(1)
	}
	m.BufferDrops.Store(js.Dropped + js.Overflow)
	m.BufferDelay.Store(int64(js.Delay))
	m.BufferDelayTarget.Store(int64(js.Target))
	if act == jitter.Play {
		s.c.framesIn.Add(1)
		var sum int64
		for _, v := range dst {
			sum += int64(v) * int64(v)
		}
		ms := uint64(sum / int64(len(dst)))
		s.c.energyIn.Add(ms)
		rms := math.Sqrt(float64(ms))
		if rms >= voicedRMS {
			s.c.framesVoiced.Add(1)
		}
		for {
			old := s.c.peakRMS.Load()
			if rms <= math.Float64frombits(old) || s.c.peakRMS.CompareAndSwap(old, math.Float64bits(rms)) {
				break
			}
		}
	}
	return nil
}

// WriteFrame encodes one 20 ms frame of agent audio at Config.OutputRate
// and queues it for the send clock. It blocks while SendQueue frames are
// already waiting, so a producer faster than real time is held to it,
// and returns ErrClosed once the session ended.
func (s *Session) WriteFrame(frame []int16) error {
	if len(frame) != s.outSamples {
		return fmt.Errorf("%w: %d samples, want %d", ErrFrameSize, len(frame), s.outSamples)
	}
	select {
	case <-s.done:
		return ErrClosed
	default:
	}
	select {
	case <-s.space:
	case <-s.done:
		return ErrClosed
	}
	slot := s.q.free()
	if silent(frame) {
		// Digital silence (the agent listening) is not encoded: it would
		// become DTX frames anyway, and encoding is most of a call's CPU.
		slot.n, slot.dtx = 0, true
		s.q.push()
		s.c.framesOut.Add(1)
		return nil
	}
	if !s.fec && s.lossy.Load() {
		s.switchToFEC()
	}
	pcm := frame
	if s.up != nil {
		n, err := s.up.ProcessTo(s.encIn, frame)
		if err != nil {
			s.space <- struct{}{}
			return err
		}
		pcm = s.encIn[:n]
	}
	n, err := s.enc.EncodeTo(slot.buf[:], pcm)
	if err != nil {
		s.space <- struct{}{}
		return err
	}
	slot.n, slot.dtx = n, opus.IsDTX(slot.buf[:n])
	s.q.push()
	s.c.framesOut.Add(1)
	return nil
}

// InputRate and OutputRate return the rates of ReadFrame and WriteFrame.
func (s *Session) InputRate() int  { return s.srv.cfg.InputRate }
func (s *Session) OutputRate() int { return s.srv.cfg.OutputRate }

// Connected reports whether ICE and DTLS completed.
func (s *Session) Connected() bool { return s.connected.Load() }

// Done is closed when the session has ended and released everything.
func (s *Session) Done() <-chan struct{} { return s.done }

// End returns why the session ended ("caller_hangup", "ice_failed",
// "connect_timeout", "timeout", "shutdown" or what Close was given) and its
// final statistics. Call it after Done is closed.
func (s *Session) End() (string, Stats) {
	<-s.done
	return s.reason, s.final
}

// Close ends the session with reason and waits until its goroutines have
// stopped and the PeerConnection is closed. Only the first reason counts.
func (s *Session) Close(reason string) {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		timers, pc := s.timers, s.pc
		s.mu.Unlock()
		for _, t := range timers {
			t.Stop()
		}
		s.srv.pacer.Unregister(s.handle)
		s.final = s.Stats()
		if pc != nil {
			_ = pc.Close()
		}
		s.wg.Wait()
		if s.up != nil {
			s.up.Close()
		}
		s.reason = reason
		close(s.done)
		s.srv.release(s)
		s.log.Debug("webrtc session ended", "reason", reason, "packets_in", s.final.Quality.PacketsReceived, "packets_out", s.final.Quality.PacketsSent, "mos", s.final.Quality.MOS)
	})
}

// silent reports whether every sample of f is zero.
func silent(f []int16) bool {
	for _, v := range f {
		if v != 0 {
			return false
		}
	}
	return true
}
