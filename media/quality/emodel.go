package quality

import (
	"math"
	"strings"
	"time"
)

// Codec holds a codec's E-model parameters.
type Codec struct {
	// Name is the RTP encoding name (RFC 3551 / the SDP rtpmap).
	Name string
	// Ie is the equipment impairment factor with no loss (G.113 Appendix I).
	Ie float64
	// Bpl is the packet-loss robustness factor (G.113 Appendix I).
	Bpl float64
	// Delay is what the codec adds to the mouth-to-ear delay: one frame of
	// packetization plus the encoder's lookahead.
	Delay time.Duration
}

// The codecs voiced carries. G.711's Bpl is the value with packet loss
// concealment (G.711 Appendix I), which the receiver always applies.
var (
	PCMU = Codec{Name: "PCMU", Ie: 0, Bpl: 25.1, Delay: 20 * time.Millisecond}
	PCMA = Codec{Name: "PCMA", Ie: 0, Bpl: 25.1, Delay: 20 * time.Millisecond}
	Opus = Codec{Name: "opus", Ie: 0, Bpl: 25.1, Delay: 26500 * time.Microsecond}
)

// CodecByName returns the parameters for an RTP encoding name (case
// insensitive) and false for an unknown one, for which G.711's are
// returned.
func CodecByName(name string) (Codec, bool) {
	switch strings.ToLower(name) {
	case "pcmu":
		return PCMU, true
	case "pcma":
		return PCMA, true
	case "opus":
		return Opus, true
	}
	return PCMU, false
}

// EModel is the input of the rating.
type EModel struct {
	Codec Codec
	// LossPercent is the packet loss seen by the listener, 0 to 100:
	// packets lost in the network plus packets the jitter buffer dropped.
	LossPercent float64
	// BurstRatio is G.107's BurstR: the mean length of loss bursts over
	// the mean length expected for random loss. 0 means 1 (random).
	BurstRatio float64
	// Delay is the one-way mouth-to-ear delay, codec excluded: network
	// (half the RTT) plus jitter buffer and playout.
	Delay time.Duration
}

// R returns the transmission rating, 0 to 93.2.
func (e EModel) R() float64 {
	ta := float64(e.Delay+e.Codec.Delay) / float64(time.Millisecond)
	id := 0.024 * ta
	if ta > 177.3 {
		id += 0.11 * (ta - 177.3)
	}
	ppl := min(max(e.LossPercent, 0), 100)
	burst := max(e.BurstRatio, 1)
	ie := e.Codec.Ie + (95-e.Codec.Ie)*ppl/(ppl/burst+e.Codec.Bpl)
	return max(93.2-id-ie, 0)
}

// MOS returns the estimated mean opinion score, 1 to 4.5.
func (e EModel) MOS() float64 {
	return MOSFromR(e.R())
}

// MOSFromR converts a transmission rating to a MOS (G.107 Annex B). The
// Annex B polynomial dips just under 1 for R below about 6.5; it is held at
// 1 there so the MOS never falls as R rises.
func MOSFromR(r float64) float64 {
	switch {
	case r <= 0:
		return 1
	case r >= 100:
		return 4.5
	}
	return max(1, 1+0.035*r+r*(r-60)*(100-r)*7e-6)
}

// BurstRatio estimates G.107's BurstR from a loss count, the number of
// separate loss bursts (runs of consecutive lost packets) and the packets
// expected: the mean burst length over the 1/(1-p) that random loss at the
// same rate would give. It returns 1 when there is no loss.
func BurstRatio(lost, bursts, expected uint64) float64 {
	if lost == 0 || bursts == 0 || expected == 0 {
		return 1
	}
	p := float64(lost) / float64(expected)
	r := float64(lost) / float64(bursts) * (1 - p)
	if math.IsNaN(r) || r < 1 {
		return 1
	}
	return r
}
