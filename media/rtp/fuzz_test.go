package rtp

import (
	"testing"
	"time"
)

// FuzzHandle feeds arbitrary datagrams from the latched peer into the
// receive path and reads a frame after each: nothing may panic, whatever
// the header, payload type, padding, extension or RTCP framing claims.
func FuzzHandle(f *testing.F) {
	f.Add(rtpPacket(0, 1, 160, 7, make([]byte, 160)))
	f.Add(rtpPacket(101, 2, 320, 7, []byte{5, 0x8a, 3, 32}))
	f.Add(rtpPacket(PayloadCN, 3, 480, 7, []byte{40, 120, 130}))
	f.Add([]byte{0xb1, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 0xbe, 0xde, 0, 9, 1, 2, 3, 4, 5})
	sr := make([]byte, 80)
	n := appendReport(sr, 9, &senderInfo{ntp: 1}, &reportBlock{ssrc: 3})
	n += appendSDES(sr[n:], 9, "x")
	f.Add(sr[:n])
	r := newRig(f, codecPCMU, Config{})
	r.s.OnDTMF(func(Digit) {})
	f.Fuzz(func(t *testing.T, data []byte) {
		r.now = r.now.Add(20 * time.Millisecond)
		r.s.handle(data, r.from, r.now, false, &r.pkt, &r.dig)
		if r.dig.n > 0 {
			r.s.deliver(&r.dig)
		}
		if _, _, err := r.s.readFrame(r.frame, EngineRate, r.now); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseRTCP parses arbitrary compound packets without panicking.
func FuzzParseRTCP(f *testing.F) {
	b := make([]byte, 120)
	n := appendReport(b, 1, &senderInfo{}, &reportBlock{})
	n += appendSDES(b[n:], 1, "cname")
	n += appendBYE(b[n:], 1)
	f.Add(b[:n])
	var v recorder
	f.Fuzz(func(t *testing.T, data []byte) {
		v = recorder{}
		parseRTCP(data, &v)
	})
}
