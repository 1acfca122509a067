package media

// MixTo writes the saturated sum of a and b into dst: dst[i] =
// clamp(a[i]+b[i]) to [-32768, 32767]. It mixes min(len(dst), len(a),
// len(b)) samples and returns that number. dst may be a or b.
func MixTo(dst, a, b []int16) int {
	n := min(len(dst), len(a), len(b))
	dst, a, b = dst[:n], a[:n], b[:n]
	for i := range dst {
		dst[i] = sat16(int32(a[i]) + int32(b[i]))
	}
	return n
}

// MixInto adds src into dst in place with saturation, for laying a
// background track or a second speaker over a frame. It mixes
// min(len(dst), len(src)) samples and returns that number.
func MixInto(dst, src []int16) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i := range dst {
		dst[i] = sat16(int32(dst[i]) + int32(src[i]))
	}
	return n
}

// sat16 clamps v to the int16 range; min and max compile to conditional
// moves, so there is no branch to mispredict.
func sat16(v int32) int16 {
	return int16(min(max(v, -32768), 32767))
}
