package rtc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtpstat"
	"github.com/voiced/voiced/codecs/opus"
)

// Dial implements load.Target: offer, signal, and wait until ICE and DTLS
// are up.
func (t *Target) Dial(ctx context.Context, o load.Offer) (load.Session, load.Answer, error) {
	pc, err := t.api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, load.Answer{}, err
	}
	s := &session{t: t, pc: pc, queue: load.NewFrameQueue(), ended: make(chan struct{}), connected: make(chan struct{}),
		seq: uint16(rand.Uint32()), ts: rand.Uint32()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.stream.Reset(48000)
	if t.probed.Add(1) <= int64(t.cfg.Probe) {
		if s.dec, err = opus.NewDecoder(8000, 1); err != nil {
			s.Hangup(context.Background())
			return nil, load.Answer{}, err
		}
		s.onset, s.pcm = audio.NewOnset(8000), make([]int16, 960)
	}
	if err := s.setup(ctx); err != nil {
		s.Hangup(context.Background())
		return nil, load.Answer{}, err
	}
	s.wg.Add(1)
	go s.writeLoop()
	return s, load.Answer{Codec: o.Codec}, nil
}

type session struct {
	t     *Target
	pc    *webrtc.PeerConnection
	track *webrtc.TrackLocalStaticRTP
	dc    *webrtc.DataChannel
	queue *load.FrameQueue

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	ended     chan struct{}
	endOnce   sync.Once
	connected chan struct{}
	connOnce  sync.Once

	// writer goroutine
	seq     uint16
	ts      uint32
	started bool

	onsetSent [8]int64 // written by the writer, read under mu
	onsets    uint64

	mu     sync.Mutex // receive statistics
	rx     uint64
	stream rtpstat.Stream
	jitter rtpstat.Histogram
	dec    *opus.Decoder
	onset  *audio.Onset
	pcm    []int16
	lags   []time.Duration
	first  time.Time
}

func (s *session) setup(ctx context.Context) error {
	var err error
	if s.track, err = webrtc.NewTrackLocalStaticRTP(opusCap, "audio", "voicebench"); err != nil {
		return err
	}
	sender, err := s.pc.AddTrack(s.track)
	if err != nil {
		return err
	}
	// RTCP from the node must be read for the interceptors to run.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		buf := make([]byte, 1500)
		for {
			if _, _, err := sender.Read(buf); err != nil {
				return
			}
		}
	}()
	if s.dc, err = s.pc.CreateDataChannel("events", nil); err != nil {
		return err
	}
	s.dc.OnMessage(func(m webrtc.DataChannelMessage) {
		var e struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Data, &e) == nil && e.Type == "ended" {
			s.end()
		}
	})
	s.pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		s.wg.Add(1)
		go s.readLoop(tr)
	})
	s.pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		switch st {
		case webrtc.PeerConnectionStateConnected:
			s.connOnce.Do(func() { close(s.connected) })
		case webrtc.PeerConnectionStateFailed, webrtc.PeerConnectionStateClosed:
			if s.ctx.Err() == nil {
				s.end()
			}
		}
	})
	offer, err := s.pc.CreateOffer(nil)
	if err != nil {
		return err
	}
	gathered := webrtc.GatheringCompletePromise(s.pc)
	if err := s.pc.SetLocalDescription(offer); err != nil {
		return err
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return ctx.Err()
	}
	answer, err := s.t.cfg.Signal.Exchange(ctx, s.pc.LocalDescription().SDP)
	if err != nil {
		return err
	}
	if err := s.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		return fmt.Errorf("%w: answer: %v", ErrSignal, err)
	}
	select {
	case <-s.connected:
		return nil
	case <-s.ended:
		return fmt.Errorf("%w: the connection failed", ErrSignal)
	case <-ctx.Done():
		return fmt.Errorf("waiting for ICE and DTLS: %w", ctx.Err())
	}
}

func (s *session) end() { s.endOnce.Do(func() { close(s.ended) }) }

// SendFrame implements load.MediaSession.
func (s *session) SendFrame(frame int) { s.queue.Push(frame) }

func (s *session) writeLoop() {
	defer s.wg.Done()
	pkt := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 111}}
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
			pkt.Marker = !s.started
			s.started = true
			pkt.SequenceNumber, pkt.Timestamp, pkt.Payload = s.seq, s.ts, s.t.frames[f]
			s.seq++
			s.ts += 960
			if f == s.t.onsetAt {
				s.mu.Lock()
				s.onsetSent[s.onsets%8] = time.Now().Add(s.t.onsetOff).UnixNano()
				s.onsets++
				s.mu.Unlock()
			}
			if err := s.track.WriteRTP(&pkt); err != nil && !errors.Is(err, context.Canceled) {
				continue // counted as loss by the node; nothing to do here
			}
		}
	}
}

func (s *session) readLoop(tr *webrtc.TrackRemote) {
	defer s.wg.Done()
	for {
		p, _, err := tr.ReadRTP()
		if err != nil {
			return
		}
		now := time.Now()
		s.mu.Lock()
		if d, fresh := s.stream.Add(p.SequenceNumber, p.Timestamp, now.UnixNano()); fresh && s.rx > 0 {
			s.jitter.Add(d)
		}
		s.rx++
		if s.dec != nil && len(p.Payload) > 2 {
			if n, err := s.dec.DecodeTo(s.pcm, p.Payload); err == nil {
				if k := s.onset.Feed(s.pcm[:n]); k >= 0 {
					at := now.Add(time.Duration(k) * time.Second / 8000)
					if s.first.IsZero() {
						s.first = at
					}
					if sent := s.matchOnset(at.UnixNano()); sent != 0 {
						s.lags = append(s.lags, time.Duration(at.UnixNano()-sent))
					}
				}
			}
		}
		s.mu.Unlock()
	}
}

// matchOnset returns the latest onset sent at or before t; s.mu is held.
func (s *session) matchOnset(t int64) int64 {
	var best int64
	for i := uint64(0); i < min(s.onsets, 8); i++ {
		v := s.onsetSent[(s.onsets-1-i)%8]
		if v != 0 && v <= t && v > best {
			best = v
		}
	}
	return best
}

// Hangup implements load.Session: the widget's hangup message, then close.
func (s *session) Hangup(context.Context) error {
	s.cancel()
	if s.dc != nil && s.dc.ReadyState() == webrtc.DataChannelStateOpen {
		_ = s.dc.SendText(`{"type":"hangup"}`)
	}
	err := s.pc.Close()
	s.wg.Wait()
	return err
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
