package jitter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/opus"
)

// steady is a stream in its steady state: packets arrive every 20 ms with a
// little jitter, one in 25 is lost, and the consumer reads a frame 25 ms
// after each send.
type steady struct {
	b     *Buffer
	p     *Playout
	pkts  [][]byte
	step  uint32
	i     int
	frame []int16
}

func newSteady(tb testing.TB, codec string) *steady {
	s := &steady{}
	var dec Decoder
	switch codec {
	case "pcmu":
		s.b = newBuffer(tb, Config{ClockRate: 8000})
		s.step = 160
		dec = NewG711(false)
		for _, p := range g711Stream(voice(8000, 8000)) {
			s.pkts = append(s.pkts, p)
		}
	case "opus":
		s.b = newBuffer(tb, Config{ClockRate: 48000})
		s.step = 960
		enc, err := opus.NewEncoder(opus.EncoderConfig{FEC: true})
		require.NoError(tb, err)
		sig := voice(48000, 48000)
		for i := 0; i+960 <= len(sig); i += 960 {
			buf := make([]byte, opus.MaxPacketSize)
			n, err := enc.EncodeTo(buf, sig[i:i+960])
			require.NoError(tb, err)
			s.pkts = append(s.pkts, buf[:n])
		}
		d, err := NewOpus(16000)
		require.NoError(tb, err)
		dec = d
	}
	p, err := NewPlayout(s.b, dec)
	require.NoError(tb, err)
	s.p = p
	s.frame = make([]int16, p.Rate()/50)
	// Warm up: fill the scratch buffers and the transit window.
	for range 300 {
		s.next()
	}
	return s
}

// next delivers one packet (or loses it) and reads one frame.
func (s *steady) next() {
	i := s.i
	s.i++
	at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
	if i%25 != 7 {
		jit := time.Duration(i*7919%5) * time.Millisecond
		s.b.Push(Packet{Seq: uint16(i), Timestamp: uint32(i) * s.step, Samples: int(s.step), Payload: s.pkts[i%len(s.pkts)]}, at.Add(jit))
	}
	if _, err := s.p.ReadFrame(at.Add(25*time.Millisecond), s.frame); err != nil {
		panic(err)
	}
}

func TestSteadyStateDoesNotAllocate(t *testing.T) {
	for _, codec := range []string{"pcmu", "opus"} {
		t.Run(codec, func(t *testing.T) {
			s := newSteady(t, codec)
			before, played := s.p.Stats().Concealed, s.b.Stats().Played
			require.Zero(t, testing.AllocsPerRun(500, s.next))
			require.Greater(t, s.p.Stats().Concealed, before, "the loss path ran")
			require.Greater(t, s.b.Stats().Played, played+450)
		})
	}
}

// BenchmarkJitterPushPop is the buffer alone: one packet in, one slot out.
func BenchmarkJitterPushPop(b *testing.B) {
	buf := newBuffer(b, Config{})
	payload := make([]byte, 160)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		buf.Push(Packet{Seq: uint16(i), Timestamp: uint32(i * 160), Samples: 160, Payload: payload}, at)
		buf.Pop(at.Add(25 * time.Millisecond))
		i++
	}
}

// BenchmarkJitterPlayoutPCMU is one packet in and one decoded 8 kHz frame
// out, with 4% loss concealed by the PLC.
func BenchmarkJitterPlayoutPCMU(b *testing.B) {
	s := newSteady(b, "pcmu")
	b.ReportAllocs()
	for b.Loop() {
		s.next()
	}
}

// BenchmarkJitterPlayoutOpus is one packet in and one 16 kHz frame out
// (libopus decodes straight to 16 kHz), 4% loss rebuilt by FEC.
func BenchmarkJitterPlayoutOpus(b *testing.B) {
	s := newSteady(b, "opus")
	b.ReportAllocs()
	for b.Loop() {
		s.next()
	}
}

// BenchmarkPLCConceal is one 20 ms G.711 frame of concealment at the start
// of a loss (the pitch search included).
func BenchmarkPLCConceal(b *testing.B) {
	p := NewPLC(8000)
	sig := voice(8000, 1600)
	frame := make([]int16, 160)
	b.ReportAllocs()
	for b.Loop() {
		copy(frame, sig[800:960])
		p.Good(frame)
		p.Conceal(frame)
	}
	_ = g711.DecodeULaw
}
