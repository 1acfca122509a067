package pcm

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBytesToInt16(t *testing.T) {
	src := []byte{0x01, 0x00, 0xFF, 0xFF, 0x00, 0x80, 0xFF, 0x7F, 0x34, 0x12}
	want := []int16{1, -1, -32768, 32767, 0x1234}

	dst := make([]int16, 5)
	n, err := BytesToInt16To(dst, src)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, want, dst)

	short := []int16{7, 7, 7}
	n, err = BytesToInt16To(short[:2], src)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []int16{1, -1, 7}, short, "only min(len(dst), len(src)/2) samples are written")

	long := make([]int16, 8)
	n, err = BytesToInt16To(long, src[:4])
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []int16{1, -1, 0, 0, 0, 0, 0, 0}, long)

	n, err = BytesToInt16To(nil, nil)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestBytesToInt16OddLength(t *testing.T) {
	dst := []int16{9, 9, 9}
	n, err := BytesToInt16To(dst, []byte{1, 2, 3})
	require.ErrorIs(t, err, ErrOddLength)
	require.ErrorContains(t, err, "3 bytes")
	require.Zero(t, n)
	require.Equal(t, []int16{9, 9, 9}, dst, "nothing is written on error")

	_, err = BytesToInt16To(nil, []byte{1})
	require.ErrorIs(t, err, ErrOddLength, "odd input is an error even when dst is empty")
}

func TestInt16ToBytes(t *testing.T) {
	src := []int16{1, -1, -32768, 32767, 0x1234}
	dst := make([]byte, 11)
	dst[10] = 0xAB
	require.Equal(t, 5, Int16ToBytesTo(dst, src))
	require.Equal(t, []byte{0x01, 0x00, 0xFF, 0xFF, 0x00, 0x80, 0xFF, 0x7F, 0x34, 0x12, 0xAB}, dst)

	odd := []byte{0, 0, 0, 0, 0xCD}
	require.Equal(t, 2, Int16ToBytesTo(odd, src))
	require.Equal(t, []byte{0x01, 0x00, 0xFF, 0xFF, 0xCD}, odd, "a trailing odd byte is not half-written")
	require.Zero(t, Int16ToBytesTo(nil, src))
	require.Zero(t, Int16ToBytesTo(dst, nil))
}

// TestBytesRoundTripAllValues checks both directions on every int16 against
// encoding/binary.
func TestBytesRoundTripAllValues(t *testing.T) {
	samples := make([]int16, 1<<16)
	want := make([]byte, 0, 1<<17)
	for i := range samples {
		samples[i] = int16(i - 32768)
		want = binary.LittleEndian.AppendUint16(want, uint16(samples[i]))
	}
	b := make([]byte, len(want))
	require.Equal(t, len(samples), Int16ToBytesTo(b, samples))
	require.Equal(t, want, b)
	back := make([]int16, len(samples))
	n, err := BytesToInt16To(back, b)
	require.NoError(t, err)
	require.Equal(t, len(samples), n)
	require.Equal(t, samples, back)
}

func TestFloat32(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   float32
		want int16
	}{
		{"zero", 0, 0},
		{"negative zero", float32(math.Copysign(0, -1)), 0},
		{"full scale negative", -1, -32768},
		{"full scale positive clips", 1, 32767},
		{"just below full scale", 32767.0 / 32768, 32767},
		{"half step rounds up", 0.5 / 32768, 1},
		{"negative half step rounds up", -0.5 / 32768, 0},
		{"one and a half negative steps round up", -1.5 / 32768, -1},
		{"just below half step rounds down", math.Nextafter32(0.5/32768, 0), 0},
		{"just beyond negative half step rounds down", math.Nextafter32(-0.5/32768, -1), -1},
		{"tiny negative", -1e-30, 0},
		{"one step", 1.0 / 32768, 1},
		{"mid", 0.25, 8192},
		{"overload positive", 7.5, 32767},
		{"overload negative", -3, -32768},
		{"+Inf", float32(math.Inf(1)), 32767},
		{"-Inf", float32(math.Inf(-1)), -32768},
		{"NaN", float32(math.NaN()), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := []int16{123}
			require.Equal(t, 1, Float32ToInt16To(dst, []float32{tc.in}))
			require.Equal(t, tc.want, dst[0])
		})
	}
}

func TestFloat32RoundTripAllValues(t *testing.T) {
	samples := make([]int16, 1<<16)
	for i := range samples {
		samples[i] = int16(i - 32768)
	}
	f := make([]float32, len(samples))
	require.Equal(t, len(samples), Int16ToFloat32To(f, samples))
	for i, s := range samples {
		require.Equal(t, float32(float64(s)/32768), f[i], "sample %d", s)
		require.GreaterOrEqual(t, f[i], float32(-1))
		require.Less(t, f[i], float32(1))
	}
	back := make([]int16, len(samples))
	require.Equal(t, len(samples), Float32ToInt16To(back, f))
	require.Equal(t, samples, back)

	require.Equal(t, 2, Int16ToFloat32To(make([]float32, 2), samples))
	require.Equal(t, 3, Float32ToInt16To(back, f[:3]))
}

func TestNoAllocations(t *testing.T) {
	s := make([]int16, 320)
	b := make([]byte, 640)
	f := make([]float32, 320)
	for name, fn := range map[string]func(){
		"BytesToInt16To":   func() { _, _ = BytesToInt16To(s, b) },
		"Int16ToBytesTo":   func() { Int16ToBytesTo(b, s) },
		"Int16ToFloat32To": func() { Int16ToFloat32To(f, s) },
		"Float32ToInt16To": func() { Float32ToInt16To(s, f) },
	} {
		require.Zero(t, testing.AllocsPerRun(100, fn), name)
	}
}

// Interleaved stereo is left then right per frame, each little-endian; a
// nil side is silence; the unaligned path (dst at an odd offset) writes
// the same bytes as the aligned one.
func TestInterleaveStereo(t *testing.T) {
	left := []int16{1, -1, -32768, 32767, 0x1234}
	right := []int16{0x0102, 0, -2, 7, -32768}
	want := func(l, r []int16, n int) []byte {
		var b []byte
		for i := range n {
			var x, y int16
			if l != nil {
				x = l[i]
			}
			if r != nil {
				y = r[i]
			}
			b = binary.LittleEndian.AppendUint16(b, uint16(x))
			b = binary.LittleEndian.AppendUint16(b, uint16(y))
		}
		return b
	}
	for _, off := range []int{0, 1, 2} {
		for _, tc := range []struct {
			name        string
			left, right []int16
		}{{"both", left, right}, {"left", left, nil}, {"right", nil, right}, {"silence", nil, nil}} {
			buf := make([]byte, off+4*len(left)+3) // room for 5 frames and 3 stray bytes
			for i := range buf {
				buf[i] = 0xAA
			}
			n := InterleaveStereoTo(buf[off:], tc.left, tc.right)
			if tc.left == nil && tc.right == nil {
				require.Equal(t, 5, n, "%s at offset %d: len(dst)/4 frames", tc.name, off)
			} else {
				require.Equal(t, 5, n, "%s at offset %d", tc.name, off)
			}
			require.Equal(t, want(tc.left, tc.right, 5), buf[off:off+20], "%s at offset %d", tc.name, off)
			for i, b := range append(append([]byte(nil), buf[:off]...), buf[off+20:]...) {
				require.Equal(t, byte(0xAA), b, "%s at offset %d: byte %d outside the frames untouched", tc.name, off, i)
			}
		}
	}
	require.Equal(t, 2, InterleaveStereoTo(make([]byte, 40), left[:2], right), "the shorter side bounds it")
	require.Equal(t, 1, InterleaveStereoTo(make([]byte, 7), left, right), "whole frames of dst only")
	require.Zero(t, InterleaveStereoTo(nil, left, right))
}

// Two writers, one a channel, build the same bytes as InterleaveStereoTo,
// aligned or not, the first without keeping the other channel (it writes
// zeros there), the second keeping the first's; neither touches the bytes
// around the frames, and a keeping writer alone leaves the other channel.
func TestPutStereoChannel(t *testing.T) {
	left := []int16{1, -1, -32768, 32767, 0x1234}
	right := []int16{0x0102, 0, -2, 7, -32768}
	for _, off := range []int{0, 1, 2} {
		for _, tc := range []struct {
			name        string
			left, right []int16
		}{{"both", left, right}, {"left silent", nil, right}, {"right silent", left, nil}} {
			for _, rightFirst := range []bool{false, true} {
				want := make([]byte, 20)
				InterleaveStereoTo(want, tc.left, tc.right)
				buf := make([]byte, off+23)
				for i := range buf {
					buf[i] = 0xAA
				}
				first, second := tc.left, tc.right
				if rightFirst {
					first, second = tc.right, tc.left
				}
				require.Equal(t, 5, PutStereoChannelTo(buf[off:], rightFirst, false, first), "%s at %d", tc.name, off)
				for i := 0; i < 20; i += 4 {
					o := 2
					if rightFirst {
						o = 0
					}
					require.Equal(t, []byte{0, 0}, buf[off+i+o:off+i+o+2], "%s at %d: the other channel zeroed", tc.name, off)
				}
				require.Equal(t, 5, PutStereoChannelTo(buf[off:], !rightFirst, true, second), "%s at %d", tc.name, off)
				require.Equal(t, want, buf[off:off+20], "%s at %d, right first %v", tc.name, off, rightFirst)
				for i, b := range append(append([]byte(nil), buf[:off]...), buf[off+20:]...) {
					require.Equal(t, byte(0xAA), b, "%s at %d: byte %d outside the frames untouched", tc.name, off, i)
				}
			}
		}
	}
	kept := []byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}
	require.Equal(t, 3, PutStereoChannelTo(kept, true, true, []int16{0x0102, 0x0304, 0x0506}))
	require.Equal(t, []byte{9, 9, 2, 1, 9, 9, 4, 3, 9, 9, 6, 5}, kept, "keep leaves the left channel")
	require.Equal(t, 2, PutStereoChannelTo(make([]byte, 40), true, false, right[:2]), "the source bounds it")
	require.Equal(t, 1, PutStereoChannelTo(make([]byte, 7), false, false, left), "whole frames of dst only")
	require.Equal(t, 10, PutStereoChannelTo(make([]byte, 40), false, true, nil), "silence fills dst")
	require.Zero(t, PutStereoChannelTo(nil, false, false, left))
}
