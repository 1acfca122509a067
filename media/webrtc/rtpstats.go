package webrtc

import (
	"time"

	"github.com/voiced/voiced/media/quality"
)

// rtpStats keeps the receive statistics of RFC 3550 Appendix A.3 and A.8
// for one source: the extended highest sequence number (for packets
// expected and lost), loss bursts, and the interarrival jitter. It belongs
// to the receive goroutine and publishes into quality.Metrics.
type rtpStats struct {
	m        *quality.Metrics
	started  bool
	base     uint32 // extended sequence number of the first packet
	maxSeq   uint32 // extended highest sequence number seen
	received uint64
	// transit and jitter in RTP clock units (48 kHz for Opus).
	transit int64
	jitter  float64
	epoch   time.Time
}

// packet records one accepted packet with sequence number seq and RTP
// timestamp ts that arrived at at.
func (r *rtpStats) packet(seq uint16, ts uint32, at time.Time, payload int) {
	m := r.m
	m.PacketsReceived.Add(1)
	m.BytesReceived.Add(uint64(payload))
	r.received++
	if !r.started {
		r.started, r.epoch = true, at
		r.base, r.maxSeq = uint32(seq), uint32(seq)
		r.transit = r.arrival(at) - int64(ts)
	} else {
		// Extend seq to 32 bits next to the highest seen (RFC 3550 A.1).
		ext := r.maxSeq&^0xffff | uint32(seq)
		switch d := int32(ext - r.maxSeq); {
		case d < -0x8000:
			ext += 0x10000
		case d > 0x8000 && ext >= 0x10000:
			ext -= 0x10000
		}
		if ext > r.maxSeq {
			if ext > r.maxSeq+1 {
				m.LossBursts.Add(1)
			}
			r.maxSeq = ext
		}
		// Interarrival jitter (RFC 3550 A.8): J += (|D| - J) / 16.
		t := r.arrival(at) - int64(ts)
		d := t - r.transit
		r.transit = t
		if d < 0 {
			d = -d
		}
		r.jitter += (float64(d) - r.jitter) / 16
		ns := int64(r.jitter * 1e9 / 48000)
		m.Jitter.Store(ns)
		quality.SetMax(&m.JitterMax, ns)
	}
	expected := uint64(r.maxSeq-r.base) + 1
	m.PacketsExpected.Store(expected)
	if expected > r.received {
		m.PacketsLost.Store(expected - r.received)
	} else {
		m.PacketsLost.Store(0)
	}
}

// arrival is at in 48 kHz units since the first packet.
func (r *rtpStats) arrival(at time.Time) int64 { return int64(at.Sub(r.epoch)) * 48 / 1e6 }
