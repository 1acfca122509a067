package g711

import (
	"encoding/binary"
	"math/bits"

	"github.com/voiced/voiced/codecs/pcm"
)

// ulawEncTable maps every 16-bit sample, indexed by its bit pattern as
// uint16, to its µ-law code. Written once at package load, read-only after.
var ulawEncTable = func() (t [1 << 16]byte) {
	for i := range t {
		t[i] = ulawFrom16(int16(uint16(i)))
	}
	return t
}()

// ulawDecTable maps every µ-law code to its 16-bit linear value.
var ulawDecTable = func() (t [256]int16) {
	for i := range t {
		t[i] = ulawTo16(byte(i))
	}
	return t
}()

// EncodeULaw returns the µ-law code of one 16-bit linear sample.
func EncodeULaw(s int16) byte {
	return ulawEncTable[uint16(s)]
}

// DecodeULaw returns the 16-bit linear value of one µ-law code.
func DecodeULaw(c byte) int16 {
	return ulawDecTable[c]
}

// EncodeULawTo encodes the samples of src into µ-law codes in dst, one byte
// per sample. It converts min(len(dst), len(src)) samples and returns that
// number; the rest of dst is left untouched. dst and src must not overlap.
func EncodeULawTo(dst []byte, src []int16) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	t := &ulawEncTable
	// Eight lookups per iteration: the loads are independent, so unrolling
	// roughly halves the time per sample against the plain loop.
	for len(src) >= 8 && len(dst) >= 8 {
		s, d := src[:8:8], dst[:8:8]
		d[0], d[1], d[2], d[3] = t[uint16(s[0])], t[uint16(s[1])], t[uint16(s[2])], t[uint16(s[3])]
		d[4], d[5], d[6], d[7] = t[uint16(s[4])], t[uint16(s[5])], t[uint16(s[6])], t[uint16(s[7])]
		src, dst = src[8:], dst[8:]
	}
	dst = dst[:len(src)]
	for i, s := range src {
		dst[i] = t[uint16(s)]
	}
	return n
}

// DecodeULawTo decodes the µ-law codes of src into 16-bit samples in dst. It
// converts min(len(dst), len(src)) codes and returns that number; the rest of
// dst is left untouched.
func DecodeULawTo(dst []int16, src []byte) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	t := &ulawDecTable
	for len(src) >= 8 && len(dst) >= 8 {
		s, d := src[:8:8], dst[:8:8]
		d[0], d[1], d[2], d[3] = t[s[0]], t[s[1]], t[s[2]], t[s[3]]
		d[4], d[5], d[6], d[7] = t[s[4]], t[s[5]], t[s[6]], t[s[7]]
		src, dst = src[8:], dst[8:]
	}
	dst = dst[:len(src)]
	for i, c := range src {
		dst[i] = t[c]
	}
	return n
}

// ulawFrom16 computes the µ-law code of s: round to 14 bits (saturating),
// then take the magnitude plus the bias of 33, whose highest set bit gives
// the segment and whose next four bits the step. Used only to build the
// table.
func ulawFrom16(s int16) byte {
	q := min((int(s)+2)>>2, 8191)
	mask := byte(0xFF)
	if q < 0 {
		q = -q
		mask = 0x7F
	}
	q = min(q, 8159) + 0x21 // 0x21..0x2000
	seg := bits.Len(uint(q)) - 6
	if seg > 7 {
		return 0x7F ^ mask
	}
	return byte(seg<<4|(q>>(seg+1))&0x0F) ^ mask
}

// ulawTo16 expands a µ-law code to 16 bits: the stored code is inverted,
// the step gets the bias of 132 (33 in 14-bit units, times 4) and is shifted
// by the segment. Used only to build the table.
func ulawTo16(c byte) int16 {
	u := ^c
	t := (int(u&0x0F)<<3 + 0x84) << ((u & 0x70) >> 4)
	if u&0x80 != 0 {
		return int16(0x84 - t)
	}
	return int16(t - 0x84)
}

// EncodeULawStereoChannelTo encodes src as µ-law into one channel of the
// interleaved stereo µ-law frames in dst (two bytes a frame; the second
// byte when second is set); a nil src writes µ-law silence. With keep the
// other channel's bytes stay as they are; without it they are written as
// zero, which saves reading dst: the first of two writers, one a channel,
// need not keep, the second must. It writes min(len(dst)/2, len(src))
// frames (len(dst)/2 for a nil src) and returns that number.
func EncodeULawStereoChannelTo(dst []byte, second, keep bool, src []int16) int {
	n := len(dst) / 2
	if src != nil {
		n = min(n, len(src))
	}
	shift, mask := pcm.StereoLane(1, second, keep)
	t := &ulawEncTable
	silence := uint64(t[0])
	// Four frames a store: the bytes of this channel, shifted into place,
	// over the other channel's kept bytes.
	i := 0
	for ; i+4 <= n; i += 4 {
		var w uint64
		if src == nil {
			w = silence | silence<<16 | silence<<32 | silence<<48
		} else {
			s := src[i : i+4 : i+4]
			w = uint64(t[uint16(s[0])]) | uint64(t[uint16(s[1])])<<16 | uint64(t[uint16(s[2])])<<32 | uint64(t[uint16(s[3])])<<48
		}
		d := dst[2*i : 2*i+8 : 2*i+8]
		binary.LittleEndian.PutUint64(d, w<<shift|binary.LittleEndian.Uint64(d)&mask)
	}
	o, other := 0, 1
	if second {
		o, other = 1, 0
	}
	for ; i < n; i++ {
		c := byte(silence)
		if src != nil {
			c = t[uint16(src[i])]
		}
		dst[2*i+o] = c
		if !keep {
			dst[2*i+other] = 0
		}
	}
	return n
}
