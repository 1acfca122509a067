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

// InterleaveStereoTo writes frames of 16-bit little-endian stereo to dst,
// left from left and right from right; a nil side is silence. It writes
// min(len(dst)/4, len of the non-nil sides) frames and returns that
// number (with both sides nil, len(dst)/4 frames of silence).
func InterleaveStereoTo(dst []byte, left, right []int16) int {
	n := len(dst) / 4
	if left != nil {
		n = min(n, len(left))
	}
	if right != nil {
		n = min(n, len(right))
	}
	if n == 0 {
		return 0
	}
	dst = dst[:4*n]
	if left == nil && right == nil {
		clear(dst)
		return n
	}
	if nativeLittleEndian && uintptr(unsafe.Pointer(&dst[0]))%4 == 0 {
		// A stereo frame is one uint32 in memory, left in its low half.
		out := unsafe.Slice((*uint32)(unsafe.Pointer(&dst[0])), n)
		switch {
		case right == nil:
			for i, l := range left[:n] {
				out[i] = uint32(uint16(l))
			}
		case left == nil:
			for i, r := range right[:n] {
				out[i] = uint32(uint16(r)) << 16
			}
		default:
			right = right[:n]
			for i, l := range left[:n] {
				out[i] = uint32(uint16(l)) | uint32(uint16(right[i]))<<16
			}
		}
		return n
	}
	for i := range n {
		var l, r int16
		if left != nil {
			l = left[i]
		}
		if right != nil {
			r = right[i]
		}
		binary.LittleEndian.PutUint16(dst[4*i:], uint16(l))
		binary.LittleEndian.PutUint16(dst[4*i+2:], uint16(r))
	}
	return n
}

// PutStereoChannelTo writes src into one channel of the 16-bit
// little-endian stereo frames in dst, the right one when right is set; a
// nil src writes silence. With keep the other channel's bytes stay as
// they are; without it they are written as zero, which saves reading dst:
// the first of two writers, one a channel, need not keep, the second must.
// It writes min(len(dst)/4, len(src)) frames (len(dst)/4 for a nil src)
// and returns that number.
func PutStereoChannelTo(dst []byte, right, keep bool, src []int16) int {
	n := len(dst) / 4
	if src != nil {
		n = min(n, len(src))
	}
	shift, mask := StereoLane(2, right, keep)
	// Two frames a store: this channel's samples, shifted into place,
	// over the other channel's kept bytes.
	i := 0
	for ; i+2 <= n; i += 2 {
		var w uint64
		if src != nil {
			w = uint64(uint16(src[i])) | uint64(uint16(src[i+1]))<<32
		}
		d := dst[4*i : 4*i+8 : 4*i+8]
		binary.LittleEndian.PutUint64(d, w<<shift|binary.LittleEndian.Uint64(d)&mask)
	}
	if i < n {
		var s int16
		if src != nil {
			s = src[i]
		}
		d := dst[4*i : 4*i+4 : 4*i+4]
		binary.LittleEndian.PutUint32(d, uint32(uint16(s))<<shift|binary.LittleEndian.Uint32(d)&uint32(mask))
	}
	return n
}

// StereoLane is where one channel's samples of width bytes (1 or 2) lie
// in a little-endian 64-bit word of interleaved stereo: how far to shift
// a sample of the first channel to the second (0 for the first), and the
// mask of the other channel's bits, or 0 when they are not kept. For
// writers of one channel a word at a time.
func StereoLane(width int, second, keep bool) (shift uint, mask uint64) {
	mask = 0xFFFF0000FFFF0000
	if width == 1 {
		mask = 0xFF00FF00FF00FF00
	}
	if second {
		shift, mask = uint(8*width), ^mask
	}
	if !keep {
		mask = 0
	}
	return shift, mask
}
