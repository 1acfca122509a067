package webrtc

import (
	"log/slog"
	"testing"
	"time"

	"github.com/pion/rtp"
	pion "github.com/pion/webrtc/v4"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/opus"
)

// bareSession is a Session with no PeerConnection: the frame paths alone.
func bareSession(t testing.TB, cfg Config) *Session {
	t.Helper()
	srv := &Server{cfg: cfg.withDefaults(), log: slog.New(slog.DiscardHandler)}
	s, err := newSession(srv, SessionOptions{})
	require.NoError(t, err)
	s.track, err = pion.NewTrackLocalStaticRTP(pion.RTPCodecCapability{MimeType: pion.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "audio", "voiced")
	require.NoError(t, err)
	return s
}

// opusPackets encodes n 20 ms frames of a tone as RTP packets.
func opusPackets(t testing.TB, n int) [][]byte {
	t.Helper()
	enc, err := opus.NewEncoder(opus.EncoderConfig{SampleRate: 16000})
	require.NoError(t, err)
	pcm := make([]int16, 320)
	out := make([][]byte, n)
	for i := range n {
		tone(pcm, i, 8000)
		buf := make([]byte, opus.MaxPacketSize)
		k, err := enc.EncodeTo(buf, pcm)
		require.NoError(t, err)
		p := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: uint16(i), Timestamp: uint32(i * 960), SSRC: 7}, Payload: buf[:k]}
		out[i], err = p.Marshal()
		require.NoError(t, err)
	}
	return out
}

func TestFramePathsAllocateNothing(t *testing.T) {
	for _, rate := range []int{16000, 24000} {
		s := bareSession(t, Config{InputRate: rate, OutputRate: rate})
		s.connected.Store(true) // Tick writes to the (unbound) track
		frame := make([]int16, rate/50)
		pkts := opusPackets(t, 400)
		var pkt rtp.Packet
		base := time.Now()
		i := 0
		step := func() {
			s.receive(&pkt, pkts[i%len(pkts)], base.Add(time.Duration(i)*20*time.Millisecond))
			tone(frame, i, 8000)
			require.NoError(t, s.WriteFrame(frame))
			s.Tick(base.Add(time.Duration(i)*20*time.Millisecond + 40*time.Millisecond))
			require.NoError(t, s.ReadFrame(frame))
			i++
		}
		for range 100 { // warm up: the jitter buffer sizes its slots
			step()
		}
		require.Zero(t, testing.AllocsPerRun(200, step), "rate %d", rate)
		require.Equal(t, uint64(301), s.m.PacketsSent.Load()+s.c.dtxFrames.Load(), "every frame written was sent (AllocsPerRun runs once more)")
		require.Greater(t, s.c.framesVoiced.Load(), uint64(250))
	}
}

func BenchmarkWriteFrameTick(b *testing.B) {
	s := bareSession(b, Config{})
	s.connected.Store(true)
	frame := make([]int16, 320)
	tone(frame, 0, 8000)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = s.WriteFrame(frame)
		s.Tick(now)
		<-s.ticks
	}
}

func BenchmarkReceiveReadFrame(b *testing.B) {
	s := bareSession(b, Config{})
	pkts := opusPackets(b, 500)
	frame := make([]int16, 320)
	var pkt rtp.Packet
	base := time.Now()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		at := base.Add(time.Duration(i) * 20 * time.Millisecond)
		p := pkts[i%len(pkts)]
		// Keep sequence numbers and timestamps moving past the table.
		p[2], p[3] = byte(i>>8), byte(i)
		ts := uint32(i * 960)
		p[4], p[5], p[6], p[7] = byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
		s.receive(&pkt, p, at)
		s.ticks <- at.Add(40 * time.Millisecond)
		_ = s.ReadFrame(frame)
		i++
	}
}
