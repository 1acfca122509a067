package main

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/rtp"
	"github.com/voiced/voiced/sip"
	"github.com/voiced/voiced/sip/sdp"
)

// callMedia is one phone call's media: its RTP session and the
// conversation engine behind it. It implements sip.Media (the sip
// package drives it from the SDP) and sip.DTMFReceiver (SIP INFO
// digits).
//
// The engine is the loopback agent: it plays each caller turn back, with
// no STT, model or TTS. Agents with their providers take its place once
// serve wires providers; until then a phone call exercises the whole
// media path (RTP, jitter buffer, turn detection, playout, pacer) and is
// recorded, but does not converse.
//
// Goroutines: the input loop (RTP frames into the agent), the watcher
// (media timeout, which hangs up) and the DTMF recorder (digits into the
// call's events); Close stops and waits for all three.
type callMedia struct {
	t      *telephony
	call   *sip.Call
	rtp    *rtp.Session
	agent  *agent.Session
	log    *slog.Logger
	recKey string

	digits    chan rune
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	// lostDigits counts digits dropped because the recorder fell behind.
	lostDigits atomic.Int64
}

func newCallMedia(t *telephony, c *sip.Call, s *rtp.Session, info callInfo, recDir string) (*callMedia, error) {
	name := strconv.FormatInt(c.ID(), 10) + ".wav"
	m := &callMedia{t: t, call: c, rtp: s, log: t.log.With("call_id", c.ID()),
		recKey: path.Join("recordings", strconv.FormatInt(info.orgID, 10), name),
		digits: make(chan rune, 64), stop: make(chan struct{})}
	a, err := agent.New(agent.Config{
		Loopback:      true,
		OutputRate:    rtp.EngineRate,
		TurnDetection: &agent.TurnDetection{CreateResponse: true, InterruptResponse: true},
		RecordPath:    filepath.Join(recDir, name),
	}, m.log, agent.Deps{}, m)
	if err != nil {
		return nil, err
	}
	m.agent = a
	s.OnDTMF(func(d rtp.Digit) { m.DTMF(d.Digit, d.Duration) })
	if err := s.SetSource(agentSource{a}, rtp.EngineRate); err != nil {
		a.Close()
		return nil, err
	}
	m.wg.Add(3)
	go m.input()
	go m.watch()
	go m.recordDigits()
	return m, nil
}

// agentSource feeds the pacer from the agent's playout.
type agentSource struct{ a *agent.Session }

func (s agentSource) ReadFrame(dst []int16) bool { return s.a.ReadFrame(dst) != nil }

// LocalAddr implements sip.Media.
func (m *callMedia) LocalAddr() netip.AddrPort { return m.rtp.LocalAddr() }

// Update implements sip.Media: the negotiated stream becomes the RTP
// session's parameters.
func (m *callMedia) Update(st sip.Stream) error {
	return m.rtp.Update(rtp.Params{
		Remote:     st.Remote,
		Codec:      rtpCodec(st.Codec),
		RecvPT:     st.RecvPT,
		DTMF:       rtpCodec(st.DTMF),
		RecvDTMFPT: st.RecvDTMFPT,
		Send:       st.Sends(),
		Receive:    st.Receives(),
	})
}

func rtpCodec(c sdp.Codec) rtp.Codec {
	return rtp.Codec{PT: c.PT, Name: c.Name, ClockRate: c.ClockRate, Channels: c.Channels}
}

// DTMF implements sip.DTMFReceiver; RFC 4733 digits come here too. It
// never blocks (it runs on the RTP receive goroutine).
func (m *callMedia) DTMF(d rune, _ time.Duration) {
	select {
	case m.digits <- d:
	default:
		m.lostDigits.Add(1)
	}
}

// Event implements agent.Sink: the agent ending the call hangs up.
func (m *callMedia) Event(e agent.Event) {
	if ended, ok := e.(agent.Ended); ok {
		m.call.Hangup(ended.Reason)
	}
}

// Close implements sip.Media.
func (m *callMedia) Close() error {
	var err error
	m.closeOnce.Do(func() {
		close(m.stop)
		err = m.rtp.Close() // leaves the pacer and releases ReadFrame
		m.wg.Wait()
		if aerr := m.agent.Close(); aerr != nil && err == nil {
			err = aerr
		}
		if n := m.lostDigits.Load(); n > 0 {
			m.log.Warn("dtmf digits not recorded", "count", n)
		}
	})
	return err
}

// recording returns the recording's blob key and start, empty when no
// file was written.
func (m *callMedia) recording() (string, time.Time) {
	if _, err := os.Stat(filepath.Join(m.t.blobDir, filepath.FromSlash(m.recKey))); err != nil {
		return "", time.Time{}
	}
	return m.recKey, m.agent.Start()
}

// input moves the caller's audio from RTP into the agent, one 20 ms
// frame per pacer tick.
func (m *callMedia) input() {
	defer m.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	buf := make([]int16, rtp.EngineRate/50)
	for {
		n, err := m.rtp.ReadFrame(ctx, buf)
		if err != nil {
			return
		}
		if err := m.agent.WriteFrame(buf[:n]); err != nil {
			return
		}
	}
}

// watch hangs up when the peer's RTP stops for the media timeout.
func (m *callMedia) watch() {
	defer m.wg.Done()
	select {
	case <-m.rtp.Done():
		if errors.Is(m.rtp.Err(), rtp.ErrMediaTimeout) {
			m.log.Info("media timeout")
			m.call.Hangup("media_timeout")
		}
	case <-m.stop:
	}
}

// recordDigits appends each DTMF digit to the call's events.
func (m *callMedia) recordDigits() {
	defer m.wg.Done()
	n := 0
	for {
		select {
		case d := <-m.digits:
			n++
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := m.t.calls.Load().Append(ctx, m.call.ID(), []control.CallEvent{{ID: "dtmf-" + strconv.Itoa(n), Kind: control.EventDTMF,
				At: time.Now(), Digits: string(d)}})
			cancel()
			if err != nil {
				m.log.Warn("dtmf not recorded", "err", err)
			}
		case <-m.stop:
			return
		}
	}
}
