package jitter

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigDefaultsAndErrors(t *testing.T) {
	c, err := Config{ClockRate: 8000}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, Config{ClockRate: 8000, MinDelay: ms(20), MaxDelay: ms(80), Capacity: 64, DropInterval: ms(500)}, c)
	for name, cfg := range map[string]Config{
		"no clock":      {},
		"min over max":  {ClockRate: 8000, MinDelay: ms(90)},
		"tiny capacity": {ClockRate: 8000, Capacity: 4},
		"negative drop": {ClockRate: 8000, DropInterval: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(cfg)
			require.ErrorIs(t, err, ErrBadConfig)
		})
	}
}

func TestSilenceBeforeFirstPacket(t *testing.T) {
	b := newBuffer(t, Config{})
	s := b.Pop(t0)
	require.Equal(t, Silence, s.Action)
	require.Equal(t, 160, s.Samples)
}

// TestSteadyStream: constant network delay: everything plays in order,
// nothing is concealed, and the added delay is the 20 ms floor plus the
// consumer's phase.
func TestSteadyStream(t *testing.T) {
	b := newBuffer(t, Config{})
	pkts := newStream(200, 100, 5000, 160)
	arr := network{base: ms(30)}.deliver(nil, pkts)
	res := run(t, b, pkts, arr, ms(7), ms(4100))
	require.Len(t, res.played, 200)
	require.True(t, slices.IsSorted(res.played))
	require.Zero(t, res.stats.Concealed)
	require.Zero(t, res.stats.Stretched)
	require.Zero(t, res.stats.Late)
	require.Equal(t, ms(20), res.stats.Target)
	// Arrivals at 30+20k ms, pops at 7+20k: a packet waits 37 ms (the
	// first pop with at least 20 ms buffered) after its fastest arrival.
	require.Equal(t, ms(37), res.stats.Delay)
	require.Equal(t, ms(30+37), mean(res.delays))
}

func TestReorderingIsUndone(t *testing.T) {
	b := newBuffer(t, Config{})
	pkts := newStream(100, 0, 0, 160)
	arr := network{base: ms(10)}.deliver(nil, pkts)
	// Every even packet is 25 ms late, so it arrives 5 ms after its odd
	// successor.
	for i := range arr {
		if arr[i].pkt%2 == 0 {
			arr[i].at += ms(25)
		}
	}
	slices.SortStableFunc(arr, func(a, b arrival) int { return int(a.at - b.at) })
	require.Equal(t, 1, arr[0].pkt)
	res := run(t, b, pkts, arr, ms(3), ms(2200))
	require.Len(t, res.played, 100)
	require.True(t, slices.IsSorted(res.played))
	require.Zero(t, res.stats.Concealed)
	require.Zero(t, res.stats.Late)
}

func TestDuplicatesAreDropped(t *testing.T) {
	b := newBuffer(t, Config{})
	pkts := newStream(50, 65000, 0, 160)
	var arr []arrival
	for i := range pkts {
		at := pkts[i].sentAt + ms(10)
		arr = append(arr, arrival{at: at, pkt: i}, arrival{at: at + ms(1), pkt: i})
		if i >= 5 {
			arr = append(arr, arrival{at: at, pkt: i - 5}) // long after it played
		}
	}
	slices.SortStableFunc(arr, func(a, b arrival) int { return int(a.at - b.at) })
	res := run(t, b, pkts, arr, ms(5), ms(1200))
	require.Len(t, res.played, 50)
	require.True(t, slices.IsSorted(res.played))
	require.EqualValues(t, 50+45, res.stats.Duplicates)
	require.Zero(t, res.stats.Late)
}

// TestLatePacketIsDropped delays one packet past its playout time: its
// slot is concealed and it is counted late when it comes. One spike in two
// seconds stays under the 98th percentile, so the delay does not grow for
// it; spikes on one packet in ten do raise the target.
func TestLatePacketIsDropped(t *testing.T) {
	b := newBuffer(t, Config{})
	pkts := newStream(150, 0, 0, 160)
	arr := network{base: ms(10)}.deliver(nil, pkts)
	for i := range arr {
		if arr[i].pkt == 60 {
			arr[i].at += ms(50)
		}
	}
	slices.SortStableFunc(arr, func(a, b arrival) int { return int(a.at - b.at) })
	res := run(t, b, pkts, arr, ms(5), ms(2205))
	require.EqualValues(t, 1, res.stats.Late)
	require.NotContains(t, res.played, 60)
	require.Equal(t, 107, res.played[len(res.played)-1])
	require.Len(t, res.played, 107, "0..107 but 60")
	require.EqualValues(t, 1, res.stats.Concealed)
	require.Equal(t, ms(20), res.stats.Target)

	b = newBuffer(t, Config{})
	arr = network{base: ms(10)}.deliver(nil, pkts)
	for i := range arr {
		if arr[i].pkt%10 == 5 {
			arr[i].at += ms(30)
		}
	}
	slices.SortStableFunc(arr, func(a, b arrival) int { return int(a.at - b.at) })
	res = run(t, b, pkts, arr, ms(5), ms(3005))
	require.Equal(t, ms(35), res.stats.Target, "30 ms spikes + 5 ms margin")
	require.LessOrEqual(t, res.stats.Late, uint64(2), "only spikes before the target rose are lost")
	require.GreaterOrEqual(t, res.stats.Delay, ms(35))
}

func TestSequenceAndTimestampWrap(t *testing.T) {
	b := newBuffer(t, Config{})
	pkts := newStream(300, 65400, 1<<32-160*100, 160)
	arr := network{base: ms(10), delay: func(r *rand.Rand) time.Duration { return ms(r.Float64() * 10) }}.deliver(rand.New(rand.NewPCG(1, 2)), pkts)
	res := run(t, b, pkts, arr, ms(5), ms(6200))
	require.Len(t, res.played, 300)
	require.True(t, slices.IsSorted(res.played))
	require.Zero(t, res.stats.Resyncs)
	require.Zero(t, res.stats.Concealed)
}

// TestTalkspurts: the sender stops for 400 ms (silence suppression) and
// resumes with a timestamp jump, with or without the marker bit. The gap
// is not a loss; playout re-anchors on the new talkspurt at the target.
func TestTalkspurts(t *testing.T) {
	for _, marker := range []bool{true, false} {
		t.Run(map[bool]string{true: "marker", false: "no marker"}[marker], func(t *testing.T) {
			b := newBuffer(t, Config{})
			a := newStream(50, 10, 0, 160)
			c := newStream(50, 60, 50*160+20*160, 160) // 20 frames of silence
			for i := range c {
				c[i].sentAt += ms(70 * 20)
				c[i].payload = [2]byte{byte((50 + i) >> 8), byte(50 + i)}
			}
			c[0].marker = marker
			pkts := append(a, c...)
			arr := network{base: ms(25)}.deliver(nil, pkts)
			res := run(t, b, pkts, arr, ms(11), ms(2600))
			require.Len(t, res.played, 100)
			require.True(t, slices.IsSorted(res.played))
			require.Zero(t, res.stats.Late)
			require.Zero(t, res.stats.Stretched)
			// The first talkspurt ends with concealment that fades, then
			// silence until the second starts.
			k := slices.IndexFunc(res.slots, func(s Slot) bool { return s.Action == Play && s.Seq == 59 }) + 1
			require.Equal(t, Conceal, res.slots[k].Action)
			require.Equal(t, Silence, res.slots[k+fadeFrames].Action)
			require.Equal(t, res.delays[49], res.delays[50], "the second talkspurt plays at the same delay")
		})
	}
}

// TestDelayFollowsJitter raises then lowers the jitter: the target rises to
// cover it and falls back when it calms, and the current delay follows.
func TestDelayFollowsJitter(t *testing.T) {
	b := newBuffer(t, Config{})
	pkts := newStream(800, 0, 0, 160) // 16 s
	r := rand.New(rand.NewPCG(3, 4))
	nw := network{base: ms(20), delay: func(r *rand.Rand) time.Duration { return 0 }}
	arr := nw.deliver(r, pkts)
	for i := range arr {
		if k := arr[i].pkt; k >= 200 && k < 500 {
			arr[i].at += ms(r.Float64() * 45) // 45 ms of uniform jitter for 6 s
		}
	}
	slices.SortStableFunc(arr, func(a, b arrival) int { return int(a.at - b.at) })
	var targets, delays []time.Duration
	ai := 0
	for pop := ms(9); pop < ms(16100); pop += ms(20) {
		for ai < len(arr) && arr[ai].at <= pop {
			p := pkts[arr[ai].pkt]
			b.Push(Packet{Seq: p.seq, Timestamp: p.ts, Samples: 160, Payload: p.payload[:]}, t0.Add(arr[ai].at))
			ai++
		}
		b.Pop(t0.Add(pop))
		targets = append(targets, b.Stats().Target)
		delays = append(delays, b.Stats().Delay)
	}
	at := func(sec float64) int { return int(sec * 50) }
	require.Equal(t, ms(20), targets[at(3.9)], "calm: floor")
	require.Greater(t, targets[at(9)], ms(40), "jittery: target covers it")
	require.Greater(t, delays[at(9)], ms(40), "and the delay follows")
	require.Equal(t, ms(20), targets[at(15)], "calm again")
	require.Less(t, delays[at(15.9)], ms(41), "delay came back down by dropping")
	st := b.Stats()
	require.NotZero(t, st.Dropped)
	require.NotZero(t, st.Stretched)
	t.Logf("late %d concealed %d stretched %d dropped %d", st.Late, st.Concealed, st.Stretched, st.Dropped)
}

func TestComfortNoiseRuns(t *testing.T) {
	b := newBuffer(t, Config{})
	at := t0
	for i := range 10 {
		b.Push(Packet{Seq: uint16(i), Timestamp: uint32(i * 160), Samples: 160, Payload: []byte{1}}, at.Add(ms(float64(20*i))))
	}
	b.Push(Packet{Seq: 10, Timestamp: 1600, CN: true, Payload: []byte{60}}, at.Add(ms(200)))
	var acts []Action
	for i := range 30 {
		s := b.Pop(at.Add(ms(float64(25 + 20*i))))
		acts = append(acts, s.Action)
		if s.Action == Play && i == 10 {
			require.True(t, s.CN)
		}
	}
	require.Equal(t, Play, acts[10])
	for _, a := range acts[11:] {
		require.Equal(t, Comfort, a)
	}
	// Speech resumes after the CN period.
	b.Push(Packet{Seq: 11, Timestamp: 1600 + 160*40, Marker: true, Samples: 160, Payload: []byte{2}}, at.Add(ms(1000)))
	var got []Action
	for i := range 4 {
		got = append(got, b.Pop(at.Add(ms(float64(1005+20*i)))).Action)
	}
	require.Equal(t, []Action{Comfort, Play, Silence, Silence}[:2], got[:2])
}

func TestResyncOnSenderRestart(t *testing.T) {
	b := newBuffer(t, Config{})
	for i := range 20 {
		b.Push(Packet{Seq: uint16(i), Timestamp: uint32(i * 160), Samples: 160}, t0.Add(ms(float64(20*i))))
		b.Pop(t0.Add(ms(float64(20*i + 25))))
	}
	// Same SSRC, sequence jumps by 20000 and timestamp goes back.
	v := b.Push(Packet{Seq: 20020, Timestamp: 7, Samples: 160}, t0.Add(ms(400)))
	require.Equal(t, Resynced, v)
	require.EqualValues(t, 1, b.Stats().Resyncs)
	for i := 1; i < 5; i++ {
		require.Equal(t, Accepted, b.Push(Packet{Seq: uint16(20020 + i), Timestamp: uint32(7 + i*160), Samples: 160}, t0.Add(ms(float64(400+20*i)))))
	}
	// The sequence continues but the timestamp goes back two seconds.
	var back uint32 = 7 + 4*160
	back -= 16000
	require.Equal(t, Resynced, b.Push(Packet{Seq: 20025, Timestamp: back, Samples: 160}, t0.Add(ms(500))))
	require.EqualValues(t, 2, b.Stats().Resyncs)
	// A reordered packet (both back by one step) is not a restart.
	require.Equal(t, Accepted, b.Push(Packet{Seq: 20026, Timestamp: back + 160, Samples: 160}, t0.Add(ms(520))))
	require.Equal(t, Accepted, b.Push(Packet{Seq: 20024, Timestamp: back - 160, Samples: 160}, t0.Add(ms(521))))
}

// TestOverflowWhenNotPopped: a consumer that stops reading loses the
// oldest packets, not the newest.
func TestOverflowWhenNotPopped(t *testing.T) {
	b := newBuffer(t, Config{Capacity: 16})
	for i := range 40 {
		b.Push(Packet{Seq: uint16(i), Timestamp: uint32(i * 160), Samples: 160, Payload: []byte{byte(i)}}, t0.Add(ms(float64(20*i))))
	}
	// 15 packets fit (one slot is the consumer's position): 0..24 are
	// dropped as the rest arrive.
	require.EqualValues(t, 25, b.Stats().Overflow)
	s := b.Pop(t0.Add(ms(800)))
	require.Equal(t, Play, s.Action)
	require.Equal(t, byte(39), s.Payload[0], "the backlog beyond the target is skipped")
}

func TestFECNextIsOffered(t *testing.T) {
	b := newBuffer(t, Config{ClockRate: 48000})
	for i := range 10 {
		if i == 5 || i == 7 || i == 8 {
			continue
		}
		b.Push(Packet{Seq: uint16(i), Timestamp: uint32(i * 960), Samples: 960, Payload: []byte{byte(i)}}, t0.Add(ms(float64(20*i))))
	}
	var slots []Slot
	for i := range 10 {
		s := b.Pop(t0.Add(ms(float64(20*i + 25))))
		s.Payload, s.Next = slices.Clone(s.Payload), slices.Clone(s.Next)
		slots = append(slots, s)
	}
	// Pops 0..4 play 0..4, then 5 is lost with 6 at hand.
	acts := make([]Action, len(slots))
	for i, s := range slots {
		acts[i] = s.Action
	}
	require.Equal(t, []Action{Play, Play, Play, Play, Play, Conceal, Play, Conceal, Conceal, Play}, acts)
	require.Equal(t, []byte{6}, slots[5].Next)
	require.Nil(t, slots[7].Next, "7 is lost and 8 too: no FEC for 7")
	require.Equal(t, []byte{9}, slots[8].Next, "8 is rebuilt from 9")
	require.EqualValues(t, 3, b.Stats().Concealed)
}

func TestSelectK(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 1; n < 120; n += 7 {
		s := make([]int64, n)
		for i := range s {
			s[i] = int64(r.IntN(50))
		}
		sorted := slices.Sorted(slices.Values(s))
		for k := range n {
			c := slices.Clone(s)
			require.Equal(t, sorted[k], selectK(c, k), "n=%d k=%d", n, k)
		}
	}
}
