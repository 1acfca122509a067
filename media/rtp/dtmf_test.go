package rtp

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ev builds a telephone-event payload.
func ev(event byte, end bool, dur uint16) []byte {
	p := make([]byte, 4)
	putEvent(p, event, end, 10, dur)
	return p
}

type evPkt struct {
	ssrc    uint32
	ts      uint32
	payload []byte
	at      time.Duration
}

// digitsOf runs packets through a receiver and returns the digits emitted,
// with an expiry check at the end.
func digitsOf(pkts []evPkt, end time.Duration) []Digit {
	var got []Digit
	emit := func(d Digit) { got = append(got, d) }
	r := dtmfRx{clock: 8000}
	t0 := time.Unix(0, 0)
	for _, p := range pkts {
		r.expire(t0.Add(p.at), emit)
		r.packet(p.ssrc, p.ts, p.payload, t0.Add(p.at), emit)
	}
	r.expire(t0.Add(end), emit)
	return got
}

// press returns the packets of one well-formed key press: start, updates
// every 20 ms and three end packets.
func press(ts uint32, event byte, steps int, at time.Duration) []evPkt {
	var p []evPkt
	for i := 1; i <= steps; i++ {
		p = append(p, evPkt{7, ts, ev(event, false, uint16(160*i)), at + time.Duration(i-1)*20*time.Millisecond})
	}
	for i := range 3 {
		p = append(p, evPkt{7, ts, ev(event, true, uint16(160*steps)), at + time.Duration(steps+i)*20*time.Millisecond})
	}
	return p
}

func TestDTMFReceiveRobustness(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	one := []Digit{{Digit: '5', Duration: ms(100), Volume: 10}}
	cases := map[string]struct {
		pkts []evPkt
		want []Digit
	}{
		"clean": {press(1000, 5, 5, 0), one},
		"lost start packets": {
			press(1000, 5, 5, 0)[2:], one,
		},
		"only the end packets": {
			press(1000, 5, 5, 0)[5:], one,
		},
		"all end packets lost, next digit follows": {
			append(press(1000, 5, 5, 0)[:5], press(3000, 11, 4, ms(200))...),
			[]Digit{{Digit: '5', Duration: ms(100), Volume: 10}, {Digit: '#', Duration: ms(80), Volume: 10}},
		},
		"all end packets lost, nothing follows": {
			press(1000, 5, 5, 0)[:5], one,
		},
		"end packets repeated many times": {
			append(press(1000, 5, 5, 0), press(1000, 5, 5, ms(200))[5:]...), one,
		},
		"a late end after the next digit began": {
			append(append(press(1000, 5, 5, 0)[:6], press(3000, 1, 3, ms(200))...), evPkt{7, 1000, ev(5, true, 800), ms(300)}),
			[]Digit{{Digit: '5', Duration: ms(100), Volume: 10}, {Digit: '1', Duration: ms(60), Volume: 10}},
		},
		"same digit twice": {
			append(press(1000, 7, 3, 0), press(2000, 7, 3, ms(150))...),
			[]Digit{{Digit: '7', Duration: ms(60), Volume: 10}, {Digit: '7', Duration: ms(60), Volume: 10}},
		},
		"short payload and unknown event ignored": {
			[]evPkt{{7, 1000, []byte{1, 2}, 0}, {7, 2000, ev(200, true, 160), ms(20)}}, nil,
		},
		"a new stream restarts the timestamps": {
			append(press(90000, 2, 3, 0), evPkt{8, 500, ev(3, true, 320), ms(200)}),
			[]Digit{{Digit: '2', Duration: ms(60), Volume: 10}, {Digit: '3', Duration: ms(40), Volume: 10}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, digitsOf(tc.pkts, time.Second))
		})
	}
}

func TestDTMFSendPackets(t *testing.T) {
	var tx dtmfTx
	require.True(t, tx.push(3, 100*time.Millisecond))
	type out struct {
		ts    uint32
		end   bool
		dur   uint16
		first bool
	}
	var got []out
	audioTS := uint32(5000)
	for range 12 {
		ts, e, end, dur, first, ok := tx.next(audioTS, 8000)
		if ok {
			require.Equal(t, byte(3), e)
			got = append(got, out{ts, end, dur, first})
		}
		audioTS += 160
	}
	require.Equal(t, []out{
		{5000, false, 160, true},
		{5000, false, 320, false},
		{5000, false, 480, false},
		{5000, false, 640, false},
		{5000, true, 800, false},
		{5000, true, 800, false},
		{5000, true, 800, false},
	}, got)
	// A second digit waits out the gap.
	require.True(t, tx.push(4, 40*time.Millisecond))
	var gap int
	for {
		_, _, _, _, first, ok := tx.next(audioTS, 8000)
		audioTS += 160
		if ok && first {
			break
		}
		gap++
	}
	require.Zero(t, gap, "the gap already passed")
	for range dtmfQueue {
		tx.push(1, time.Second)
	}
	require.False(t, tx.push(1, time.Second), "queue full")
	tx.flush()
	_, _, _, _, _, ok := tx.next(audioTS, 8000)
	require.False(t, ok)
}

// TestDTMFLoopback sends digits from one session and receives them on the
// other, in order, with their durations, for both telephone-event clocks.
func TestDTMFLoopback(t *testing.T) {
	for _, tc := range []struct {
		audio, dtmf Codec
	}{{codecPCMU, dtmf8k}, {codecOpus, dtmf48k}} {
		t.Run(tc.audio.Name, func(t *testing.T) {
			a, b := pair(t, Config{}, tc.audio, tc.dtmf)
			var mu sync.Mutex
			var got []Digit
			b.OnDTMF(func(d Digit) {
				mu.Lock()
				got = append(got, d)
				mu.Unlock()
			})
			require.NoError(t, a.SetSource(&tone{hz: 400, amp: 3000, rate: 16000}, 16000))
			require.NoError(t, a.SendDTMF("19*#A0", 120*time.Millisecond))
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) == 6
			}, 3*time.Second, 10*time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			var digits string
			for _, d := range got {
				digits += string(d.Digit)
				require.Equal(t, 120*time.Millisecond, d.Duration)
				require.Equal(t, dtmfVolume, d.Volume)
			}
			require.Equal(t, "19*#A0", digits)
			// The counters are bumped beside the callback, not before it.
			require.Eventually(t, func() bool {
				return a.Metrics().DigitsSent.Load() == 6 && b.Metrics().DigitsReceived.Load() == 6
			}, 2*time.Second, 5*time.Millisecond, "sent %d, received %d", a.Metrics().DigitsSent.Load(), b.Metrics().DigitsReceived.Load())
		})
	}
}
