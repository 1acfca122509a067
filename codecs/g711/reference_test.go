package g711

// A straightforward G.711 implementation in the style of the classic
// segment-search code: no tables, a linear search over segment end points
// for every sample. It is the independent reference the tables are checked
// against and the baseline of the BenchmarkG711Formula benchmarks.

// ulawSegEnd and alawSegEnd are the largest magnitudes of each segment,
// in 14-bit (µ-law, after the bias) and 13-bit (A-law) units.
var (
	ulawSegEnd = [8]int{0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF}
	alawSegEnd = [8]int{0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF}
)

func searchSeg(v int, ends *[8]int) int {
	for i, e := range ends {
		if v <= e {
			return i
		}
	}
	return 8
}

func formulaEncodeULaw(s int16) byte {
	// Round 16 -> 14 bits to nearest and saturate.
	v := int(s) + 2
	v >>= 2
	if v > 8191 {
		v = 8191
	}
	var mask byte
	if v < 0 {
		v = -v
		mask = 0x7F
	} else {
		mask = 0xFF
	}
	if v > 8159 {
		v = 8159
	}
	v += 33
	seg := searchSeg(v, &ulawSegEnd)
	if seg >= 8 {
		return 0x7F ^ mask
	}
	return byte(seg<<4|((v>>(seg+1))&0xF)) ^ mask
}

func formulaDecodeULaw(c byte) int16 {
	c = ^c
	t := (int(c&0x0F) << 3) + 132
	t <<= uint(c&0x70) >> 4
	if c&0x80 != 0 {
		return int16(132 - t)
	}
	return int16(t - 132)
}

func formulaEncodeALaw(s int16) byte {
	// Round 16 -> 13 bits to nearest and saturate.
	v := int(s) + 4
	v >>= 3
	if v > 4095 {
		v = 4095
	}
	var mask byte
	if v >= 0 {
		mask = 0xD5
	} else {
		mask = 0x55
		v = -v - 1
	}
	seg := searchSeg(v, &alawSegEnd)
	if seg >= 8 {
		return 0x7F ^ mask
	}
	a := byte(seg << 4)
	if seg < 2 {
		a |= byte(v>>1) & 0xF
	} else {
		a |= byte(v>>seg) & 0xF
	}
	return a ^ mask
}

func formulaDecodeALaw(c byte) int16 {
	c ^= 0x55
	t := int(c&0x0F) << 4
	switch seg := int(c&0x70) >> 4; seg {
	case 0:
		t += 8
	case 1:
		t += 0x108
	default:
		t += 0x108
		t <<= seg - 1
	}
	if c&0x80 != 0 {
		return int16(t)
	}
	return int16(-t)
}

func formulaEncodeULawTo(dst []byte, src []int16) int {
	n := min(len(dst), len(src))
	for i := range n {
		dst[i] = formulaEncodeULaw(src[i])
	}
	return n
}

func formulaDecodeULawTo(dst []int16, src []byte) int {
	n := min(len(dst), len(src))
	for i := range n {
		dst[i] = formulaDecodeULaw(src[i])
	}
	return n
}

func formulaEncodeALawTo(dst []byte, src []int16) int {
	n := min(len(dst), len(src))
	for i := range n {
		dst[i] = formulaEncodeALaw(src[i])
	}
	return n
}

func formulaDecodeALawTo(dst []int16, src []byte) int {
	n := min(len(dst), len(src))
	for i := range n {
		dst[i] = formulaDecodeALaw(src[i])
	}
	return n
}
