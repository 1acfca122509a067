package webrtc

import (
	"math"
	"time"

	"github.com/voiced/voiced/media/jitter"
	"github.com/voiced/voiced/media/quality"
)

// Stats is a session's media figures: its quality (media/quality's
// snapshot with the E-model estimate: RTP loss and jitter measured here,
// and the browser's RTCP receiver reports about the node's stream with the
// round trip, RFC 3550 section 6.4), the jitter buffer's counters, and the
// energy of the caller's audio.
type Stats struct {
	// SetupTime is from the answer to ICE and DTLS connected; zero if the
	// session never connected.
	SetupTime time.Duration
	// Quality is the call's quality snapshot (Opus).
	Quality quality.Snapshot
	// FramesIn are 20 ms frames decoded from received packets (not
	// concealment or silence); FramesVoiced those above about -54 dBFS.
	FramesIn, FramesVoiced uint64
	// MeanSquare is the mean of the decoded frames' mean squares (energy
	// per sample, full scale 32767²); PeakRMS the loudest frame's RMS.
	MeanSquare, PeakRMS float64
	// FramesOut were written by the engine; DTXFrames of them were silence
	// not sent.
	FramesOut, DTXFrames uint64
	// FEC is set once the browser reported loss and the node's stream went
	// from CELT to SILK with in-band FEC (Config.FECLossPercent).
	FEC bool
	// RemoteReports counts the browser's RTCP reception reports about the
	// node's stream (the source of Quality's remote loss, jitter and RTT).
	RemoteReports uint64
	// LateTicks are clock ticks ReadFrame had not taken in time (before
	// the connection, while WriteFrame holds the engine, they pile up).
	LateTicks uint64
	// Jitter and Playout are the jitter buffer's own counters.
	Jitter  jitter.Stats
	Playout jitter.PlayoutStats
}

// Stats returns the session's statistics so far; after the session ended,
// the final ones.
func (s *Session) Stats() Stats {
	select {
	case <-s.done:
		return s.final
	default:
	}
	var st Stats
	if at := s.connectedAt.Load(); at != 0 {
		st.SetupTime = time.Unix(0, at).Sub(s.answeredAt)
	}
	c := &s.c
	st.FramesIn, st.FramesVoiced = c.framesIn.Load(), c.framesVoiced.Load()
	if st.FramesIn > 0 {
		st.MeanSquare = float64(c.energyIn.Load()) / float64(st.FramesIn)
	}
	st.PeakRMS = math.Float64frombits(c.peakRMS.Load())
	st.FramesOut, st.DTXFrames, st.LateTicks = c.framesOut.Load(), c.dtxFrames.Load(), c.lateTicks.Load()
	st.RemoteReports = c.reports.Load()
	st.FEC = c.fecSwitches.Load() > 0
	s.rxMu.Lock()
	st.Jitter, st.Playout = s.jbuf.Stats(), s.playout.Stats()
	s.rxMu.Unlock()
	st.Quality = s.m.Snapshot(quality.Opus)
	return st
}
