package pcm

import (
	"encoding/binary"
	"unsafe"
)

// nativeLittleEndian is true when int16 in memory is already the wire
// layout, so byte conversions are a memory copy.
var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// BytesToInt16To decodes little-endian 16-bit samples from src into dst. It
// converts min(len(dst), len(src)/2) samples and returns that number. When
// len(src) is odd it converts nothing and returns an error wrapping
// ErrOddLength: a dangling byte means the stream lost its sample alignment.
func BytesToInt16To(dst []int16, src []byte) (int, error) {
	if len(src)%2 != 0 {
		return 0, oddLengthError(len(src))
	}
	n := min(len(dst), len(src)/2)
	if n == 0 {
		return 0, nil
	}
	if nativeLittleEndian {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 2*n), src)
		return n, nil
	}
	dst, src = dst[:n], src[:2*n]
	for i := range dst {
		dst[i] = int16(binary.LittleEndian.Uint16(src[2*i:]))
	}
	return n, nil
}

// Int16ToBytesTo encodes the samples of src into dst as little-endian 16-bit
// values. It converts min(len(dst)/2, len(src)) samples and returns that
// number; dst[2*n:] is left untouched.
func Int16ToBytesTo(dst []byte, src []int16) int {
	n := min(len(dst)/2, len(src))
	if n == 0 {
		return 0
	}
	if nativeLittleEndian {
		copy(dst[:2*n], unsafe.Slice((*byte)(unsafe.Pointer(&src[0])), 2*n))
		return n
	}
	dst, src = dst[:2*n], src[:n]
	for i, s := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(s))
	}
	return n
}

// Int16ToFloat32To converts the samples of src to floats in [-1, 1) in dst.
// It converts min(len(dst), len(src)) samples and returns that number.
func Int16ToFloat32To(dst []float32, src []int16) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i, s := range src {
		dst[i] = float32(s) * (1.0 / 32768)
	}
	return n
}

// Float32ToInt16To converts the floats of src to 16-bit samples in dst:
// scaled by 32768, rounded to nearest with halves rounded up, saturated to
// [-32768, 32767], NaN mapped to 0. It converts min(len(dst), len(src))
// samples and returns that number.
func Float32ToInt16To(dst []int16, src []float32) int {
	n := min(len(dst), len(src))
	dst, src = dst[:n], src[:n]
	for i, f := range src {
		// Shift into [0, 65536) so truncation is floor and rounding is a
		// single add, with no branch on the sign: speech changes sign
		// every few samples and a sign branch mispredicts constantly. The
		// float64 sum is exact for every float32 input that matters.
		y := float64(f)*32768 + 32768.5
		if !(y >= 0) { // negative overload, or NaN
			y = 0
			if f != f {
				y = 32768
			}
		}
		if y > 65535 {
			y = 65535
		}
		dst[i] = int16(int32(y) - 32768)
	}
	return n
}
