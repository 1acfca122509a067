package jitter

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSimulatedNetworks runs 60 s streams through simulated networks with
// loss, duplication, reordering and several jitter distributions, over
// several seeds, and checks the invariants every run must keep:
//
//   - packets play in sequence order, each at most once;
//   - every pushed packet is accounted for (played, late, duplicate,
//     dropped, overflowed or still buffered);
//   - no packet waits in the buffer longer than the 80 ms ceiling plus the
//     consumer's phase and the frame of excess tolerated before a drop;
//
// and bounds on the audio lost (packets sent but not played) and the delay
// the buffer adds. The figures are logged: go test -v -run Simulated.
func TestSimulatedNetworks(t *testing.T) {
	uniform := func(j float64) func(*rand.Rand) time.Duration {
		return func(r *rand.Rand) time.Duration { return ms(r.Float64() * j) }
	}
	cases := []struct {
		name     string
		nw       network
		maxLoss  float64       // audio loss bound, fraction of packets sent
		maxAdded time.Duration // mean buffering bound
	}{
		{"clean", network{base: ms(40)}, 0, ms(40)},
		{"uniform 20ms", network{base: ms(40), delay: uniform(20)}, 0.01, ms(60)},
		{"uniform 60ms", network{base: ms(40), delay: uniform(60)}, 0.03, ms(95)},
		{"exponential 10ms", network{base: ms(40), delay: func(r *rand.Rand) time.Duration {
			return ms(min(r.ExpFloat64()*10, 200))
		}}, 0.03, ms(85)},
		{"spikes 3% of 30-120ms", network{base: ms(40), delay: func(r *rand.Rand) time.Duration {
			if r.Float64() < 0.03 {
				return ms(30 + r.Float64()*90)
			}
			return ms(r.Float64() * 4)
		}}, 0.04, ms(50)},
		{"5% random loss", network{base: ms(40), loss: 0.05, delay: uniform(10)}, 0.065, ms(50)},
		{"bursts of 3, 2%", network{base: ms(40), loss: 0.02, burstLoss: 3, delay: uniform(10)}, 0.08, ms(50)},
		{"10% duplicates", network{base: ms(40), dup: 0.1, delay: uniform(30)}, 0.02, ms(70)},
		{"everything", network{base: ms(40), loss: 0.03, dup: 0.05, delay: func(r *rand.Rand) time.Duration {
			if r.Float64() < 0.02 {
				return ms(40 + r.Float64()*60)
			}
			return ms(r.Float64() * 25)
		}}, 0.08, ms(85)},
	}
	const n = 3000 // 60 s
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var lossSum, addedSum, e2eSum float64
			var st Stats
			seeds := []uint64{1, 2, 3}
			for _, seed := range seeds {
				r := rand.New(rand.NewPCG(seed, 77))
				b := newBuffer(t, Config{})
				pkts := newStream(n, uint16(r.Uint32()), r.Uint32(), 160)
				arr := tc.nw.deliver(r, pkts)
				phase := ms(r.Float64() * 20)
				res := run(t, b, pkts, arr, phase, time.Duration(n)*ms(20)+ms(400))
				for i := 1; i < len(res.played); i++ {
					require.Greater(t, res.played[i], res.played[i-1], "seed %d: order", seed)
				}
				s := res.stats
				buffered := s.Pushed - s.Played - s.Late - s.Duplicates - s.Dropped - s.Overflow
				require.Zero(t, buffered, "seed %d: unaccounted packets %+v", seed, s)
				require.EqualValues(t, len(arr), s.Pushed)
				for i, d := range res.delays {
					arrived := time.Duration(math.MaxInt64)
					for _, a := range arr {
						if a.pkt == res.played[i] {
							arrived = min(arrived, a.at)
						}
					}
					held := d - arrived + pkts[res.played[i]].sentAt
					require.LessOrEqual(t, held, ms(80+20+20), "seed %d packet %d held too long", seed, res.played[i])
				}
				loss := 1 - float64(len(res.played))/float64(n)
				added := float64(s.Buffered) / float64(s.Played) / float64(time.Millisecond)
				lossSum += loss
				addedSum += added
				e2eSum += float64(mean(res.delays)) / float64(time.Millisecond)
				st.Late += s.Late
				st.Concealed += s.Concealed
				st.Underruns += s.Underruns
				st.Stretched += s.Stretched
				st.Dropped += s.Dropped
				st.Duplicates += s.Duplicates
			}
			k := float64(len(seeds))
			t.Logf("%-22s audio lost %5.2f%%  buffer delay %5.1f ms  sent-to-play %5.1f ms  (late %d concealed %d underruns %d stretched %d dropped %d dup %d over %d runs)",
				tc.name, 100*lossSum/k, addedSum/k, e2eSum/k, st.Late, st.Concealed, st.Underruns, st.Stretched, st.Dropped, st.Duplicates, len(seeds))
			require.LessOrEqual(t, lossSum/k, tc.maxLoss, "audio loss")
			require.LessOrEqual(t, addedSum/k, float64(tc.maxAdded)/float64(time.Millisecond), "buffer delay")
		})
	}
}

// FuzzBuffer pushes arbitrary packets at arbitrary times and pops at
// arbitrary times: nothing panics, and plays stay in sequence order
// between resyncs.
func FuzzBuffer(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 0, 10, 1, 0, 1, 0, 0, 0, 160, 10, 0})
	f.Add([]byte{255, 255, 255, 255, 255, 0, 20, 1, 0, 0, 0, 0, 0, 0, 0, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := New(Config{ClockRate: 8000, Capacity: 16})
		require.NoError(t, err)
		now := t0
		var last int64 = -1
		resyncs := b.Stats().Resyncs
		for len(data) >= 8 {
			seq := uint16(data[0])<<8 | uint16(data[1])
			ts := uint32(data[2])<<24 | uint32(data[3])<<16 | uint32(data[4])<<8 | uint32(data[5])
			now = now.Add(time.Duration(data[6]) * time.Millisecond)
			flags := data[7]
			data = data[8:]
			b.Push(Packet{Seq: seq, Timestamp: ts, Marker: flags&1 != 0, CN: flags&2 != 0, Samples: int(flags>>2) * 8, Payload: []byte{flags}}, now)
			if flags&0x80 != 0 {
				s := b.Pop(now)
				require.GreaterOrEqual(t, s.Samples, 0)
				if r := b.Stats().Resyncs; r != resyncs {
					resyncs, last = r, -1
				}
				if s.Action == Play {
					require.Greater(t, b.lastSeq, last, fmt.Sprintf("slot %+v", s))
					last = b.lastSeq
				}
			}
		}
	})
}
