package jitter

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/opus"
)

// voice is a voice-like test signal: a pitch gliding between 110 and 190 Hz
// with falling harmonics and a syllable-rate envelope.
func voice(rate, n int) []int16 {
	out := make([]int16, n)
	phase := 0.0
	for i := range out {
		t := float64(i) / float64(rate)
		f0 := 150 + 40*math.Sin(2*math.Pi*1.3*t)
		phase += 2 * math.Pi * f0 / float64(rate)
		v := 0.0
		for h := 1; h <= 12 && float64(h)*f0 < float64(rate)/2; h++ {
			v += math.Sin(float64(h)*phase) / float64(h)
		}
		env := 0.55 + 0.45*math.Sin(2*math.Pi*4*t)
		out[i] = int16(7000 * v * env)
	}
	return out
}

func energy(a []int16) float64 {
	var e float64
	for _, v := range a {
		e += float64(v) * float64(v)
	}
	return e
}

func diffEnergy(a, b []int16) float64 {
	var e float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		e += d * d
	}
	return e
}

func rms(a []int16) float64 { return math.Sqrt(energy(a) / float64(len(a))) }

func sine(rate int, hz, amp float64, n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(amp * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)))
	}
	return s
}

// TestPLCContinuesAndFades: on a steady 200 Hz tone the first 10 ms of
// concealment follow the lost waveform closely, the level then fades by
// about 20% per 10 ms, and from 60 ms on the output is silent.
func TestPLCContinuesAndFades(t *testing.T) {
	const n = 160
	sig := sine(8000, 200, 8000, 20*n)
	p := NewPLC(8000)
	for i := range 10 {
		p.Good(append([]int16(nil), sig[i*n:(i+1)*n]...))
	}
	out := make([]int16, 4*n)
	for k := range 4 {
		p.Conceal(out[k*n : (k+1)*n])
	}
	lost := sig[10*n : 14*n]
	snr := 10 * math.Log10(energy(lost[:80])/diffEnergy(out[:80], lost[:80]))
	require.Greater(t, snr, 20.0, "first 10 ms continue the tone")
	require.InDelta(t, rms(lost[:80]), rms(out[:80]), 0.05*rms(lost[:80]))
	// 20-30 ms: gain 0.8..0.6, mean about 0.7.
	require.InDelta(t, 0.7*rms(lost[160:240]), rms(out[160:240]), 0.06*rms(lost[160:240]))
	require.Zero(t, rms(out[480:]), "silent from 60 ms")
	require.Zero(t, p.pitch%40, "pitch %d: a multiple of 5 ms (200 Hz)", p.pitch)
}

// TestPLCRecoveryIsSmooth: after a short loss the first good frame is
// cross-faded, so no step appears at the boundary.
func TestPLCRecoveryIsSmooth(t *testing.T) {
	const n = 160
	sig := sine(8000, 173, 9000, 20*n)
	p := NewPLC(8000)
	for i := range 8 {
		p.Good(append([]int16(nil), sig[i*n:(i+1)*n]...))
	}
	conc := make([]int16, n)
	p.Conceal(conc)
	good := append([]int16(nil), sig[9*n:10*n]...)
	p.Good(good)
	maxStep := func(a []int16) float64 {
		m := 0.0
		for i := 1; i < len(a); i++ {
			m = max(m, math.Abs(float64(a[i])-float64(a[i-1])))
		}
		return m
	}
	joined := append(append([]int16(nil), conc...), good...)
	// A 173 Hz tone of amplitude 9000 moves at most 2*pi*173/8000*9000
	// = 1223 per sample; allow the cross-fade some slack but no click.
	require.Less(t, maxStep(joined), 1600.0)
	require.Equal(t, sig[9*n+100:10*n], good[100:], "after the cross-fade the frame is untouched")
}

func TestCNGLevelAndShape(t *testing.T) {
	for _, level := range []byte{30, 50, 70} {
		c := NewCNG()
		c.Update([]byte{level})
		out := make([]int16, 8000)
		c.Generate(out)
		want := 32767 * math.Pow(10, -float64(level)/20)
		require.InDelta(t, want, rms(out[2000:]), 0.1*want, "level %d dBov", level)
	}
	// A first reflection coefficient near +0.9 (q=242) in A(z)=1+k z^-1
	// makes a high-pass shape: neighbouring samples anti-correlate. -0.9
	// (q=12) makes a low-pass one.
	lag1 := func(q byte) float64 {
		c := NewCNG()
		c.Update([]byte{40, q})
		out := make([]int16, 8000)
		c.Generate(out)
		var num, den float64
		for i := 1; i < len(out); i++ {
			num += float64(out[i]) * float64(out[i-1])
			den += float64(out[i]) * float64(out[i])
		}
		want := 32767 * math.Pow(10, -40.0/20)
		require.InDelta(t, want, rms(out[2000:]), 0.15*want, "shaped noise keeps the level")
		return num / den
	}
	require.Less(t, lag1(242), -0.5)
	require.Greater(t, lag1(12), 0.5)
	silent := NewCNG()
	out := []int16{1, 2, 3}
	silent.Generate(out)
	require.Equal(t, []int16{0, 0, 0}, out, "silent before the first payload")
}

// g711Stream encodes sig into 20 ms µ-law packets.
func g711Stream(sig []int16) [][]byte {
	var pkts [][]byte
	for i := 0; i+160 <= len(sig); i += 160 {
		p := make([]byte, 160)
		g711.EncodeULawTo(p, sig[i:i+160])
		pkts = append(pkts, p)
	}
	return pkts
}

func TestPlayoutG711WithLoss(t *testing.T) {
	sig := sine(8000, 300, 8000, 8000)
	pkts := g711Stream(sig)
	b := newBuffer(t, Config{})
	p, err := NewPlayout(b, NewG711(false))
	require.NoError(t, err)
	require.Equal(t, 8000, p.Rate())
	frame := make([]int16, 160)
	var kinds []Action
	var out []int16
	for i := range pkts {
		if i != 20 {
			b.Push(Packet{Seq: uint16(i), Timestamp: uint32(i * 160), Samples: 160, Payload: pkts[i]}, t0.Add(ms(float64(20*i))))
		}
		k, err := p.ReadFrame(t0.Add(ms(float64(20*i+25))), frame)
		require.NoError(t, err)
		kinds = append(kinds, k)
		out = append(out, frame...)
	}
	require.Equal(t, Play, kinds[0])
	require.Equal(t, Conceal, kinds[20])
	require.Equal(t, Play, kinds[21])
	// Frame i of output is packet i (pops at 25 ms after each send).
	lost := sig[20*160 : 21*160]
	got := out[20*160 : 21*160]
	require.Greater(t, rms(got), 0.5*rms(lost), "the lost frame is concealed, not silent")
	st := p.Stats()
	require.EqualValues(t, len(pkts), st.Frames)
	require.EqualValues(t, 1, st.Concealed)
	_, err = p.ReadFrame(t0, frame[:100])
	require.ErrorIs(t, err, ErrShortBuffer)
}

// TestPlayoutOpusUsesFEC loses one packet of a voice-like Opus stream twice:
// once with its successor in the buffer in time (FEC) and once with the
// successor arriving late (concealment), and compares both with the
// loss-free decode.
func TestPlayoutOpusUsesFEC(t *testing.T) {
	const rate = 16000
	enc, err := opus.NewEncoder(opus.EncoderConfig{SampleRate: 48000, FEC: true, PacketLossPercent: 20})
	require.NoError(t, err)
	sig := voice(48000, 48000)
	var pkts [][]byte
	for i := 0; i+960 <= len(sig); i += 960 {
		buf := make([]byte, opus.MaxPacketSize)
		n, err := enc.EncodeTo(buf, sig[i:i+960])
		require.NoError(t, err)
		pkts = append(pkts, buf[:n])
	}
	const lose = 17
	decode := func(lose int, successorLate bool) []int16 {
		b := newBuffer(t, Config{ClockRate: 48000})
		dec, err := NewOpus(rate)
		require.NoError(t, err)
		p, err := NewPlayout(b, dec)
		require.NoError(t, err)
		var arr []arrival
		for i := range pkts {
			at := ms(float64(20 * i))
			if i == lose+1 && successorLate {
				at += ms(25)
			}
			if i != lose {
				arr = append(arr, arrival{at: at, pkt: i})
			}
		}
		slices.SortStableFunc(arr, func(a, b arrival) int { return int(a.at - b.at) })
		var out []int16
		frame := make([]int16, rate/50)
		for i, ai := 0, 0; i < len(pkts); i++ {
			now := ms(float64(20*i + 25))
			for ; ai < len(arr) && arr[ai].at <= now; ai++ {
				k := arr[ai].pkt
				b.Push(Packet{Seq: uint16(k), Timestamp: uint32(k * 960), Samples: 960, Payload: pkts[k]}, t0.Add(arr[ai].at))
			}
			_, err := p.ReadFrame(t0.Add(now), frame)
			require.NoError(t, err)
			out = append(out, frame...)
		}
		return out
	}
	ref := decode(-5, false)
	seg := func(a []int16) []int16 { return a[lose*320 : (lose+1)*320] }
	withFEC := decode(lose, false)
	withPLC := decode(lose, true)
	eFEC := diffEnergy(seg(withFEC), seg(ref))
	ePLC := diffEnergy(seg(withPLC), seg(ref))
	t.Logf("lost frame error vs loss-free: FEC %.1f dB, PLC %.1f dB", 10*math.Log10(eFEC/energy(seg(ref))), 10*math.Log10(ePLC/energy(seg(ref))))
	require.Less(t, eFEC, ePLC/2)
	require.Greater(t, rms(seg(withPLC)), 0.0)
}

// TestPlayoutCollectsOddPacketSizes feeds 30 ms G.711 packets: the output
// is still exactly one 20 ms frame per call, and the audio is intact.
func TestPlayoutCollectsOddPacketSizes(t *testing.T) {
	sig := sine(8000, 440, 6000, 240*60)
	b := newBuffer(t, Config{})
	p, err := NewPlayout(b, NewG711(false))
	require.NoError(t, err)
	var out []int16
	frame := make([]int16, 160)
	next := 0
	for k := 0; k < 80; k++ {
		now := t0.Add(ms(float64(20*k + 45)))
		for next < 60 && time.Duration(next)*ms(30) <= now.Sub(t0) {
			pl := make([]byte, 240)
			g711.EncodeULawTo(pl, sig[next*240:(next+1)*240])
			b.Push(Packet{Seq: uint16(next), Timestamp: uint32(next * 240), Samples: 240, Payload: pl}, t0.Add(time.Duration(next)*ms(30)))
			next++
		}
		_, err := p.ReadFrame(now, frame)
		require.NoError(t, err)
		out = append(out, frame...)
	}
	require.Zero(t, b.Stats().Concealed)
	require.Zero(t, b.Stats().Late)
	// Playback starts with the first pop; compare the first 0.5 s with the
	// G.711 round trip of the original.
	want := make([]int16, 4000)
	enc := make([]byte, 4000)
	g711.EncodeULawTo(enc, sig[:4000])
	g711.DecodeULawTo(want, enc)
	diff := 0
	for i := range want {
		if want[i] != out[i] {
			diff++
		}
	}
	require.Zero(t, diff, "samples differing from the G.711 round trip")
}

// TestPlayoutPacketsNotAsLongAsTheirTimestamps: a G.711 sender whose
// packets hold more or fewer samples than their timestamps advance by (20
// ms). Every decoded sample still comes out once, in order, and nothing
// is taken for a decoding error: a frame-long slot goes straight into the
// caller's frame only when the packet fits it, and what a packet decodes
// to beyond or short of the frame carries over. (Short packets run the
// buffer dry, as the sender's clock says they should not: only the frames
// before that are compared.)
func TestPlayoutPacketsNotAsLongAsTheirTimestamps(t *testing.T) {
	for _, tc := range []struct{ n, played int }{{240, 12}, {160, 12}, {80, 1}} {
		sig := voice(8000, 20*tc.n)
		b := newBuffer(t, Config{})
		p, err := NewPlayout(b, NewG711(false))
		require.NoError(t, err)
		var want, out []int16
		frame := make([]int16, 160)
		next := 0
		for k := 0; k < 12; k++ {
			now := t0.Add(ms(float64(20*k + 25))) // the first packet plays at the 20 ms target
			for ; next < 20 && time.Duration(next)*ms(20) <= now.Sub(t0); next++ {
				pl := make([]byte, tc.n)
				g711.EncodeULawTo(pl, sig[next*tc.n:(next+1)*tc.n])
				dec := make([]int16, tc.n)
				g711.DecodeULawTo(dec, pl)
				want = append(want, dec...)
				b.Push(Packet{Seq: uint16(next), Timestamp: uint32(next * 160), Samples: 160, Payload: pl}, t0.Add(time.Duration(next)*ms(20)))
			}
			kind, err := p.ReadFrame(now, frame)
			require.NoError(t, err)
			if kind != Play {
				break
			}
			out = append(out, frame...)
		}
		require.GreaterOrEqual(t, len(out), tc.played*160, "%d-sample packets: frames played before the first other", tc.n)
		require.Equal(t, want[:len(out)], out, "%d-sample packets", tc.n)
		require.Zero(t, p.Stats().DecodeErrors, "%d-sample packets", tc.n)
	}
}
