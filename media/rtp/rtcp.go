package rtp

import (
	"encoding/binary"
	"time"
)

// RTCP packet types (RFC 3550 section 12.1).
const (
	rtcpSR   = 200
	rtcpRR   = 201
	rtcpSDES = 202
	rtcpBYE  = 203
)

// ntpEpochOffset is the seconds from 1900 (NTP) to 1970 (Unix).
const ntpEpochOffset = 2208988800

// ntpTime returns t as a 64-bit NTP timestamp (RFC 3550 section 4).
func ntpTime(t time.Time) uint64 {
	sec := uint64(t.Unix()) + ntpEpochOffset
	frac := uint64(t.Nanosecond()) << 32 / uint64(time.Second)
	return sec<<32 | frac
}

// ntpMiddle returns the middle 32 bits of t's NTP timestamp, the unit of
// LSR, DLSR and round-trip arithmetic (1/65536 s).
func ntpMiddle(t time.Time) uint32 { return uint32(ntpTime(t) >> 16) }

// reportBlock is one reception report (RFC 3550 section 6.4.1).
type reportBlock struct {
	ssrc         uint32
	fractionLost uint8
	totalLost    int32 // 24-bit signed on the wire
	extMaxSeq    uint32
	jitter       uint32
	lsr, dlsr    uint32
}

func putReportBlock(b []byte, r reportBlock) {
	binary.BigEndian.PutUint32(b[0:], r.ssrc)
	lost := min(max(r.totalLost, -0x800000), 0x7fffff)
	binary.BigEndian.PutUint32(b[4:], uint32(r.fractionLost)<<24|uint32(lost)&0xffffff)
	binary.BigEndian.PutUint32(b[8:], r.extMaxSeq)
	binary.BigEndian.PutUint32(b[12:], r.jitter)
	binary.BigEndian.PutUint32(b[16:], r.lsr)
	binary.BigEndian.PutUint32(b[20:], r.dlsr)
}

func readReportBlock(b []byte) reportBlock {
	w := binary.BigEndian.Uint32(b[4:])
	lost := int32(w<<8) >> 8 // sign-extend 24 bits
	return reportBlock{
		ssrc:         binary.BigEndian.Uint32(b[0:]),
		fractionLost: uint8(w >> 24),
		totalLost:    lost,
		extMaxSeq:    binary.BigEndian.Uint32(b[8:]),
		jitter:       binary.BigEndian.Uint32(b[12:]),
		lsr:          binary.BigEndian.Uint32(b[16:]),
		dlsr:         binary.BigEndian.Uint32(b[20:]),
	}
}

func putHeader(b []byte, count int, pt byte, words int) {
	b[0] = 2<<6 | byte(count)
	b[1] = pt
	binary.BigEndian.PutUint16(b[2:], uint16(words-1))
}

// senderInfo is the sender part of an SR.
type senderInfo struct {
	ntp     uint64
	rtpTS   uint32
	packets uint32
	octets  uint32
}

// appendReport writes an SR (when si is not nil) or an RR from ssrc with
// at most one report block into b, and returns the bytes written. b must
// hold 52 bytes.
func appendReport(b []byte, ssrc uint32, si *senderInfo, block *reportBlock) int {
	n := 8
	pt := byte(rtcpRR)
	if si != nil {
		pt = rtcpSR
		binary.BigEndian.PutUint64(b[8:], si.ntp)
		binary.BigEndian.PutUint32(b[16:], si.rtpTS)
		binary.BigEndian.PutUint32(b[20:], si.packets)
		binary.BigEndian.PutUint32(b[24:], si.octets)
		n = 28
	}
	count := 0
	if block != nil {
		putReportBlock(b[n:], *block)
		n += 24
		count = 1
	}
	putHeader(b, count, pt, n/4)
	binary.BigEndian.PutUint32(b[4:], ssrc)
	return n
}

// appendSDES writes an SDES packet with one chunk carrying the CNAME
// (RFC 3550 section 6.5.1) and returns the bytes written. b must hold
// 12+len(cname) bytes rounded up to 4; cname is cut to 255 bytes.
func appendSDES(b []byte, ssrc uint32, cname string) int {
	if len(cname) > 255 {
		cname = cname[:255]
	}
	binary.BigEndian.PutUint32(b[4:], ssrc)
	b[8] = 1 // CNAME
	b[9] = byte(len(cname))
	n := 10 + copy(b[10:], cname)
	// Items end with a null octet, and the chunk pads to 32 bits.
	b[n] = 0
	n++
	for n%4 != 0 {
		b[n] = 0
		n++
	}
	putHeader(b, 1, rtcpSDES, n/4)
	return n
}

// appendBYE writes a BYE for ssrc (RFC 3550 section 6.6).
func appendBYE(b []byte, ssrc uint32) int {
	putHeader(b, 1, rtcpBYE, 2)
	binary.BigEndian.PutUint32(b[4:], ssrc)
	return 8
}

// rtcpVisitor receives the parts of a compound RTCP packet that matter
// here.
type rtcpVisitor interface {
	senderReport(ssrc uint32, ntp uint64)
	receptionReport(from uint32, r reportBlock)
	bye(ssrc uint32)
}

// parseRTCP walks a compound RTCP packet (RFC 3550 section 6.1) without
// allocating and reports whether it was well formed up to its end.
func parseRTCP(b []byte, v rtcpVisitor) bool {
	if len(b) < 8 {
		return false
	}
	for len(b) >= 4 {
		if b[0]>>6 != 2 {
			return false
		}
		count := int(b[0] & 0x1f)
		length := (int(binary.BigEndian.Uint16(b[2:])) + 1) * 4
		if length > len(b) {
			return false
		}
		p := b[:length]
		b = b[length:]
		switch p[1] {
		case rtcpSR, rtcpRR:
			if len(p) < 8 {
				return false
			}
			ssrc := binary.BigEndian.Uint32(p[4:])
			off := 8
			if p[1] == rtcpSR {
				if len(p) < 28 {
					return false
				}
				v.senderReport(ssrc, binary.BigEndian.Uint64(p[8:]))
				off = 28
			}
			for i := 0; i < count && off+24 <= len(p); i++ {
				v.receptionReport(ssrc, readReportBlock(p[off:]))
				off += 24
			}
		case rtcpBYE:
			for i := 0; i < count && 4+4*i+4 <= len(p); i++ {
				v.bye(binary.BigEndian.Uint32(p[4+4*i:]))
			}
		}
	}
	return len(b) == 0
}
