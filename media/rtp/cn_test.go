package rtp

import (
	"context"
	"math"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/codecs/g711"
)

// TestComfortNoiseReceived: a peer speaks, then sends an RFC 3389 CN
// packet at -40 dBov and goes quiet (silence suppression): the session
// plays noise at that level, not silence and not concealment.
func TestComfortNoiseReceived(t *testing.T) {
	pacer, ports := newPacer(t), newPorts(t)
	s := newSession(t, Config{}, pacer, ports)
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer peer.Close()
	require.NoError(t, s.Update(Params{Remote: peer.LocalAddr().(*net.UDPAddr).AddrPort(), Codec: codecPCMU, RecvPT: 0, CN: true, Send: true, Receive: true}))
	to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(localhost, s.LocalAddr().Port()))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := make(chan []int16, 200)
	go func() {
		buf := make([]int16, 320)
		for range 100 {
			if _, err := s.ReadFrame(ctx, buf); err != nil {
				break
			}
			out <- append([]int16(nil), buf...)
		}
		close(out)
	}()
	pcm := make([]int16, 160)
	payload := make([]byte, 160)
	start := time.Now()
	for i := range 25 {
		for k := range pcm {
			pcm[k] = int16(5000 * math.Sin(2*math.Pi*500*float64(i*160+k)/8000))
		}
		g711.EncodeULawTo(payload, pcm)
		_, err := peer.WriteTo(rtpPacket(0, uint16(i), uint32(160*i), 0xc0ffee, payload), to)
		require.NoError(t, err)
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * 20 * time.Millisecond)))
	}
	_, err = peer.WriteTo(rtpPacket(PayloadCN, 25, 160*25, 0xc0ffee, []byte{40}), to)
	require.NoError(t, err)
	var frames [][]int16
	for f := range out {
		frames = append(frames, f)
	}
	require.Len(t, frames, 100)
	// The last second is comfort noise at -40 dBov: RMS 327.
	var tail []int16
	for _, f := range frames[50:] {
		tail = append(tail, f...)
	}
	want := 32767 * math.Pow(10, -40.0/20)
	require.InDelta(t, want, rms(tail), want*0.2)
	// Before it, the tone played.
	var speech []int16
	for _, f := range frames[:40] {
		speech = append(speech, f...)
	}
	require.Greater(t, goertzel(speech, 500, 16000), 0.5)
}

// TestComfortNoiseSent: with SendCN and CN negotiated, a silent source
// sends CN packets at the start of silence and every 500 ms instead of
// audio packets, and the first audio packet afterwards carries the marker.
func TestComfortNoiseSent(t *testing.T) {
	pacer, ports := newPacer(t), newPorts(t)
	s := newSession(t, Config{SendCN: true, CNLevel: 66}, pacer, ports)
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer peer.Close()
	src := &tone{hz: 300, amp: 2000, rate: 16000}
	require.NoError(t, s.SetSource(src, 16000))
	require.NoError(t, s.Update(Params{Remote: peer.LocalAddr().(*net.UDPAddr).AddrPort(), Codec: codecPCMU, RecvPT: 0, CN: true, Send: true, Receive: true}))

	type pkt struct {
		pt     uint8
		marker bool
		seq    uint16
		ts     uint32
		n      int
		level  byte
	}
	read := func(d time.Duration) []pkt {
		var got []pkt
		buf := make([]byte, 1500)
		end := time.Now().Add(d)
		for {
			peer.SetReadDeadline(end)
			n, _, err := peer.ReadFrom(buf)
			if err != nil {
				return got
			}
			if buf[1] >= 192 && buf[1] <= 223 {
				continue
			}
			got = append(got, pkt{buf[1] & 0x7f, buf[1]&0x80 != 0, uint16(buf[2])<<8 | uint16(buf[3]),
				uint32(buf[4])<<24 | uint32(buf[5])<<16 | uint32(buf[6])<<8 | uint32(buf[7]), n - 12, buf[12]})
		}
	}
	speech := read(200 * time.Millisecond)
	require.NotEmpty(t, speech)
	require.True(t, speech[0].marker, "the first packet starts a talkspurt")
	for _, p := range speech {
		require.Equal(t, uint8(0), p.pt)
		require.Equal(t, 160, p.n)
	}
	src.mu.Lock()
	src.quiet = true
	src.mu.Unlock()
	quiet := read(1100 * time.Millisecond)
	var cn []pkt
	for _, p := range quiet {
		if p.pt == PayloadCN {
			cn = append(cn, p)
		}
	}
	require.GreaterOrEqual(t, len(cn), 2)
	require.LessOrEqual(t, len(cn), 4, "start of silence, then every 500 ms")
	require.Equal(t, byte(66), cn[0].level)
	require.Equal(t, 1, cn[0].n)
	require.LessOrEqual(t, len(quiet)-len(cn), 2, "no audio packets during silence")
	src.mu.Lock()
	src.quiet = false
	src.mu.Unlock()
	back := read(100 * time.Millisecond)
	var first *pkt
	for i := range back {
		if back[i].pt == 0 {
			first = &back[i]
			break
		}
	}
	require.NotNil(t, first)
	require.True(t, first.marker, "speech after silence starts a talkspurt")
	last := cn[len(cn)-1]
	require.Equal(t, last.seq+1, first.seq, "sequence numbers run on")
	require.Greater(t, first.ts-last.ts, uint32(160), "timestamps kept running through the silence")
}
