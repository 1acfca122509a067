package pcm

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// FuzzPCMBytes checks that bytes -> int16 -> bytes is the identity for even
// lengths, that odd lengths are rejected without writing, and that the
// samples survive int16 -> float32 -> int16 and clamp sensibly when the same
// bytes are read as float32.
func FuzzPCMBytes(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x01})
	f.Add([]byte{0x00, 0x80, 0xFF, 0x7F})
	f.Add([]byte{0x00, 0x00, 0xC0, 0x7F, 0x00, 0x00, 0x80, 0xFF}) // NaN, -Inf as float32
	f.Fuzz(func(t *testing.T, data []byte) {
		s := make([]int16, len(data)/2+1)
		for i := range s {
			s[i] = 0x5A5A
		}
		n, err := BytesToInt16To(s, data)
		if len(data)%2 != 0 {
			if !errors.Is(err, ErrOddLength) || n != 0 {
				t.Fatalf("odd length %d: n=%d err=%v", len(data), n, err)
			}
			for _, v := range s {
				if v != 0x5A5A {
					t.Fatal("odd input wrote to dst")
				}
			}
			return
		}
		if err != nil || n != len(data)/2 {
			t.Fatalf("even length %d: n=%d err=%v", len(data), n, err)
		}
		back := make([]byte, len(data))
		if m := Int16ToBytesTo(back, s[:n]); m != n || !bytes.Equal(back, data) {
			t.Fatalf("bytes round trip: %x -> %x", data, back)
		}

		fl := make([]float32, n)
		Int16ToFloat32To(fl, s[:n])
		again := make([]int16, n)
		Float32ToInt16To(again, fl)
		for i := range n {
			if again[i] != s[i] {
				t.Fatalf("float round trip of %d gave %d", s[i], again[i])
			}
		}

		// The same bytes as arbitrary float32 values: results must be
		// clamped, rounded and NaN-safe.
		raw := make([]float32, len(data)/4)
		for i := range raw {
			raw[i] = math.Float32frombits(uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24)
		}
		out := make([]int16, len(raw))
		Float32ToInt16To(out, raw)
		for i, v := range raw {
			x := float64(v) * 32768
			var want float64
			switch {
			case math.IsNaN(x):
				want = 0
			default:
				want = math.Max(-32768, math.Min(32767, math.Floor(x+0.5)))
			}
			if float64(out[i]) != want {
				t.Fatalf("float %v: got %d, want %v", v, out[i], want)
			}
		}
	})
}
