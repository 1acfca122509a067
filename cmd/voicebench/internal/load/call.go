package load

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/pion/rtp"
	"github.com/voiced/voiced/cmd/voicebench/internal/audio"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtpstat"
	"github.com/voiced/voiced/cmd/voicebench/internal/sdp"
	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/opus"
)

// sentRing is how many packets' send times a call remembers (5 s), for
// targets that return our own sequence numbers.
const sentRing = 256

// onsetRing is how many sent onset times a call remembers; a lag longer
// than this many cycles is not matched.
const onsetRing = 8

// call is one call's media state. The send fields belong to the pacer
// goroutine once the call is registered; the receive fields to the
// receive lane's reader, under that lane's mutex.
type call struct {
	index  int
	phase  int
	probed bool
	ssrc   uint32

	// send side (pacer goroutine)
	codec   sdp.Codec
	frames  [][]byte
	dest    netip.AddrPort
	hdr     rtp.Header
	seq     uint16
	ts      uint32
	frame   int
	pkt     []byte
	started bool
	sendLn  int // lane index

	sent      atomic.Uint64
	onsetSent [onsetRing]atomic.Int64 // Unix ns when the onset sample left
	// send time of recent packets by sequence number (seq+1 in sentSeq
	// marks the slot valid), written by the pacer, read by the receiver
	sentAt     [sentRing]atomic.Int64
	sentSeq    [sentRing]atomic.Uint32
	onsetCount atomic.Uint64

	// set before registration, read-only afterwards
	media      MediaSession // nil for RTP calls
	answeredAt int64        // Unix ns
	recvLn     int

	// receive side (lane reader, under the lane mutex)
	rx rxState
	// ownSeq is set when the target returns our own packets (an echo or a
	// relay without transcoding): |D| is then taken from the packets'
	// real send times, so the generator's own send jitter is not blamed
	// on the target.
	ownSeq bool
}

// rxState is what a call's receive lane knows about the returning stream.
type rxState struct {
	codec       sdp.Codec
	stream      rtpstat.Stream
	ssrc        uint32
	locked      bool
	foreign     uint64 // packets of another SSRC
	otherPT     uint64 // packets of another payload type (DTMF, CN)
	firstPkt    int64
	lastTransit int64 // send-time based transit of the previous packet (ownSeq)
	firstAudio  int64 // first onset, Unix ns
	lags        []time.Duration
	// decoding, probed calls only
	onset *audio.Onset
	opus  *opus.Decoder
	pcm   []int16
}

// packet writes the next RTP packet (RFC 3550 section 5.1) with payload
// p into c.pkt and returns it.
func (c *call) packet(p []byte) []byte {
	h := &c.hdr
	h.Marker = !c.started // the first packet of the stream
	c.started = true
	h.SequenceNumber = c.seq
	h.Timestamp = c.ts
	n, _ := h.MarshalTo(c.pkt) // c.pkt always holds a 12-byte header
	b := c.pkt[:n+len(p)]
	copy(b[n:], p)
	c.seq++
	c.ts += uint32(c.codec.SamplesPerFrame())
	return b
}

// advance moves to the next frame of the cycle and counts the one sent.
func (c *call) advance() {
	c.frame++
	if c.frame == len(c.frames) {
		c.frame = 0
	}
	c.sent.Add(1)
}

// recordSend notes when the packet with sequence number seq left.
func (c *call) recordSend(seq uint16, at int64) {
	i := seq % sentRing
	c.sentAt[i].Store(at)
	c.sentSeq[i].Store(uint32(seq) + 1)
}

// recordOnset stores when the source's onset left for this call.
func (c *call) recordOnset(at int64) {
	n := c.onsetCount.Load()
	c.onsetSent[n%onsetRing].Store(at)
	c.onsetCount.Store(n + 1)
}

// matchOnset returns the latest sent onset at or before t (Unix ns), or 0.
func (c *call) matchOnset(t int64) int64 {
	var best int64
	n := c.onsetCount.Load()
	for i := uint64(0); i < min(n, onsetRing); i++ {
		s := c.onsetSent[(n-1-i)%onsetRing].Load()
		if s != 0 && s <= t && s > best {
			best = s
		}
	}
	return best
}

// receive records one packet of the call's returning stream. Called by
// the lane reader with the lane mutex held; it returns |D| for the lane's
// histogram, or -1 when the packet did not count.
func (c *call) receive(pt uint8, seq uint16, ts, ssrc uint32, payload []byte, at int64) int64 {
	rx := &c.rx
	if !rx.locked {
		rx.locked, rx.ssrc, rx.firstPkt = true, ssrc, at
	} else if ssrc != rx.ssrc {
		rx.foreign++
		return -1
	}
	d, fresh := rx.stream.Add(seq, ts, at)
	if c.ownSeq && fresh {
		d = c.sendTimedD(seq, at)
	}
	if pt != rx.codec.PT {
		rx.otherPT++
		return d
	}
	if fresh && rx.onset != nil {
		c.decode(payload, at)
	}
	return d
}

// sendTimedD returns |D| from the packet's recorded send time: the change
// in transit against the previous packet, or -1 when the send time is
// unknown (the first packet, or one older than the ring).
func (c *call) sendTimedD(seq uint16, at int64) int64 {
	i := seq % sentRing
	if c.sentSeq[i].Load() != uint32(seq)+1 {
		c.rx.lastTransit = 0
		return -1
	}
	transit := at - c.sentAt[i].Load()
	prev := c.rx.lastTransit
	c.rx.lastTransit = transit
	if prev == 0 {
		return -1
	}
	d := transit - prev
	if d < 0 {
		d = -d
	}
	return d
}

// decode looks for a speech onset in a probed call's audio and matches it
// to the onset sent.
func (c *call) decode(payload []byte, at int64) {
	rx := &c.rx
	pcm := rx.pcm
	n := 0
	switch rx.codec.Name {
	case sdp.PCMU.Name:
		n = g711.DecodeULawTo(pcm, payload)
	case sdp.PCMA.Name:
		n = g711.DecodeALawTo(pcm, payload)
	default:
		m, err := rx.opus.DecodeTo(pcm, payload)
		if err != nil {
			return
		}
		n = m
	}
	k := rx.onset.Feed(pcm[:n])
	if k < 0 {
		return
	}
	t := at + int64(k)*int64(time.Second)/8000
	if rx.firstAudio == 0 {
		rx.firstAudio = t
	}
	if s := c.matchOnset(t); s != 0 {
		rx.lags = append(rx.lags, time.Duration(t-s))
	}
}
