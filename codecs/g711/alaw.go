package g711

import "math/bits"

// alawEncTable maps every 16-bit sample, indexed by its bit pattern as
// uint16, to its A-law code. Written once at package load, read-only after.
var alawEncTable = func() (t [1 << 16]byte) {
	for i := range t {
		t[i] = alawFrom16(int16(uint16(i)))
	}
	return t
}()

// alawDecTable maps every A-law code to its 16-bit linear value.
var alawDecTable = func() (t [256]int16) {
	for i := range t {
		t[i] = alawTo16(byte(i))
	}
	return t
}()

// EncodeALaw returns the A-law code of one 16-bit linear sample.
func EncodeALaw(s int16) byte {
	return alawEncTable[uint16(s)]
}

// DecodeALaw returns the 16-bit linear value of one A-law code.
func DecodeALaw(c byte) int16 {
	return alawDecTable[c]
}

// EncodeALawTo encodes the samples of src into A-law codes in dst, one byte
// per sample. It converts min(len(dst), len(src)) samples and returns that
// number; the rest of dst is left untouched.
func EncodeALawTo(dst []byte, src []int16) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	t := &alawEncTable
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

// DecodeALawTo decodes the A-law codes of src into 16-bit samples in dst. It
// converts min(len(dst), len(src)) codes and returns that number; the rest of
// dst is left untouched.
func DecodeALawTo(dst []int16, src []byte) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	t := &alawDecTable
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

// alawFrom16 computes the A-law code of s: round to 13 bits (saturating),
// fold negatives to their one's complement magnitude, find the segment from
// the highest set bit and take the four bits below it, then invert the even
// bits (0x55) and set the sign bit for non-negative input. Used only to
// build the table.
func alawFrom16(s int16) byte {
	r := min((int(s)+4)>>3, 4095)
	mask := byte(0xD5)
	if r < 0 {
		r = -r - 1
		mask = 0x55
	}
	seg := max(bits.Len(uint(r))-5, 0) // r <= 4095, so seg <= 7
	step := r >> 1
	if seg > 1 {
		step = r >> seg
	}
	return byte(seg<<4|step&0x0F) ^ mask
}

// alawTo16 expands an A-law code to 16 bits at the centre of its decision
// interval. Used only to build the table.
func alawTo16(c byte) int16 {
	a := c ^ 0x55
	t := int(a&0x0F)<<4 + 8
	if seg := (a & 0x70) >> 4; seg > 0 {
		t = (t + 0x100) << (seg - 1)
	}
	if a&0x80 != 0 {
		return int16(t)
	}
	return int16(-t)
}
