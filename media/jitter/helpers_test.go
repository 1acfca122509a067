package jitter

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Unix(1_000_000, 0)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// sent is one packet the simulated sender emitted.
type sent struct {
	seq     uint16
	ts      uint32
	marker  bool
	sentAt  time.Duration
	payload [2]byte // the packet's index, to check what plays
}

// arrival is one packet delivered by the simulated network.
type arrival struct {
	at  time.Duration
	pkt int // index into the sent packets
}

// network decides each packet's fate.
type network struct {
	loss      float64                          // independent loss probability
	dup       float64                          // probability of a second copy
	delay     func(r *rand.Rand) time.Duration // one-way delay of one copy
	base      time.Duration
	burstLoss int // when >0, losses come in bursts of this length
}

func newStream(n int, seq0 uint16, ts0 uint32, step uint32) []sent {
	p := make([]sent, n)
	for i := range p {
		p[i] = sent{seq: seq0 + uint16(i), ts: ts0 + uint32(i)*step, sentAt: time.Duration(i) * 20 * time.Millisecond}
		p[i].payload = [2]byte{byte(i >> 8), byte(i)}
	}
	p[0].marker = true
	return p
}

func (nw network) deliver(r *rand.Rand, pkts []sent) []arrival {
	var out []arrival
	burst := 0
	for i, p := range pkts {
		if burst > 0 {
			burst--
			continue
		}
		if nw.loss > 0 && r.Float64() < nw.loss {
			if nw.burstLoss > 1 {
				burst = nw.burstLoss - 1
			}
			continue
		}
		copies := 1
		if nw.dup > 0 && r.Float64() < nw.dup {
			copies = 2
		}
		for range copies {
			d := nw.base
			if nw.delay != nil {
				d += nw.delay(r)
			}
			out = append(out, arrival{at: p.sentAt + d, pkt: i})
		}
	}
	slices.SortStableFunc(out, func(a, b arrival) int { return int(a.at - b.at) })
	return out
}

// result is what a simulated run played.
type result struct {
	played   []int // packet indexes in play order
	slots    []Slot
	stats    Stats
	popTimes []time.Duration
	delays   []time.Duration // per played packet: pop time - sent time
}

// run feeds arrivals into b and pops every 20 ms starting at phase until
// end, interleaving in time order.
func run(t testing.TB, b *Buffer, pkts []sent, arr []arrival, phase, end time.Duration) result {
	t.Helper()
	var res result
	ai := 0
	for pop := phase; pop < end; pop += 20 * time.Millisecond {
		for ai < len(arr) && arr[ai].at <= pop {
			p := pkts[arr[ai].pkt]
			b.Push(Packet{Seq: p.seq, Timestamp: p.ts, Marker: p.marker, Samples: 160, Payload: p.payload[:]}, t0.Add(arr[ai].at))
			ai++
		}
		s := b.Pop(t0.Add(pop))
		c := s
		c.Payload, c.Next = slices.Clone(s.Payload), slices.Clone(s.Next)
		res.slots = append(res.slots, c)
		res.popTimes = append(res.popTimes, pop)
		if s.Action == Play {
			idx := int(s.Payload[0])<<8 | int(s.Payload[1])
			res.played = append(res.played, idx)
			res.delays = append(res.delays, pop-pkts[idx].sentAt)
		}
	}
	res.stats = b.Stats()
	return res
}

func newBuffer(t testing.TB, cfg Config) *Buffer {
	t.Helper()
	if cfg.ClockRate == 0 {
		cfg.ClockRate = 8000
	}
	b, err := New(cfg)
	require.NoError(t, err)
	return b
}

func mean(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	var s time.Duration
	for _, v := range d {
		s += v
	}
	return s / time.Duration(len(d))
}
