package g711

import (
	"encoding/binary"
	"testing"
)

// FuzzG711 decodes arbitrary bytes as codes and encodes the same bytes read
// as little-endian samples, checking the table paths against the formula
// reference and the round-trip properties:
//   - decode(encode(decode(c))) == decode(c) for every code;
//   - encode(decode(encode(s))) == encode(s) for every sample.
func FuzzG711(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x00, 0x7F, 0x80, 0xFF, 0x55, 0xD5, 0x2A, 0xAA})
	f.Add([]byte{0xFF, 0x7F, 0x00, 0x80, 0x01, 0x00, 0xFF, 0xFF, 0xFE})
	f.Fuzz(func(t *testing.T, data []byte) {
		laws := []struct {
			name string
			enc  func([]byte, []int16) int
			dec  func([]int16, []byte) int
			fEnc func(int16) byte
			fDec func(byte) int16
		}{
			{"ulaw", EncodeULawTo, DecodeULawTo, formulaEncodeULaw, formulaDecodeULaw},
			{"alaw", EncodeALawTo, DecodeALawTo, formulaEncodeALaw, formulaDecodeALaw},
		}
		samples := make([]int16, len(data)/2)
		for i := range samples {
			samples[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
		}
		for _, l := range laws {
			pcm := make([]int16, len(data))
			if n := l.dec(pcm, data); n != len(data) {
				t.Fatalf("%s decode: %d of %d", l.name, n, len(data))
			}
			codes := make([]byte, len(data))
			l.enc(codes, pcm)
			again := make([]int16, len(data))
			l.dec(again, codes)
			for i, c := range data {
				if pcm[i] != l.fDec(c) {
					t.Fatalf("%s decode %#02x: table %d, formula %d", l.name, c, pcm[i], l.fDec(c))
				}
				if again[i] != pcm[i] {
					t.Fatalf("%s: decode(encode(decode(%#02x))) = %d, want %d", l.name, c, again[i], pcm[i])
				}
			}

			enc := make([]byte, len(samples))
			if n := l.enc(enc, samples); n != len(samples) {
				t.Fatalf("%s encode: %d of %d", l.name, n, len(samples))
			}
			dec := make([]int16, len(samples))
			l.dec(dec, enc)
			re := make([]byte, len(samples))
			l.enc(re, dec)
			for i, s := range samples {
				if enc[i] != l.fEnc(s) {
					t.Fatalf("%s encode %d: table %#02x, formula %#02x", l.name, s, enc[i], l.fEnc(s))
				}
				if l.name == "ulaw" && enc[i] == 0x7F {
					t.Fatalf("µ-law encoder produced negative zero for %d", s)
				}
				if re[i] != enc[i] {
					t.Fatalf("%s: encode(decode(encode(%d))) = %#02x, want %#02x", l.name, s, re[i], enc[i])
				}
			}
		}
	})
}
