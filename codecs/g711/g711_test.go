package g711

import (
	"encoding/binary"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "regenerate testdata/*.golden with sox")

// The golden files hold SoX's answers (see testdata/README.md):
//   - *_encode.golden: 65,536 codes, one per 16-bit input from -32768 up to 32767;
//   - *_decode.golden: 256 little-endian int16 values, one per code 0..255.
//
// The sox arguments are exactly those in testdata/README.md.
var goldens = []struct {
	name string
	file string
	args []string // sox arguments between the input and output file names
}{
	{"ulaw_encode", "ulaw_encode.golden", []string{"-t", "raw", "-e", "u-law", "-b", "8", "-c", "1"}},
	{"alaw_encode", "alaw_encode.golden", []string{"-t", "raw", "-e", "a-law", "-b", "8", "-c", "1"}},
	{"ulaw_decode", "ulaw_decode.golden", []string{"-t", "raw", "-e", "signed-integer", "-b", "16", "-L", "-c", "1"}},
	{"alaw_decode", "alaw_decode.golden", []string{"-t", "raw", "-e", "signed-integer", "-b", "16", "-L", "-c", "1"}},
}

// soxInput returns the input type arguments for a golden: every int16 for
// the encoders, every code for the decoders.
func soxInput(name string) (in []byte, typ []string) {
	switch name {
	case "ulaw_encode", "alaw_encode":
		in = make([]byte, 0, 1<<17)
		for v := -32768; v <= 32767; v++ {
			in = binary.LittleEndian.AppendUint16(in, uint16(int16(v)))
		}
		return in, []string{"-t", "raw", "-r", "8000", "-e", "signed-integer", "-b", "16", "-L", "-c", "1"}
	case "ulaw_decode":
		return allCodes(), []string{"-t", "raw", "-r", "8000", "-e", "u-law", "-b", "8", "-c", "1"}
	default:
		return allCodes(), []string{"-t", "raw", "-r", "8000", "-e", "a-law", "-b", "8", "-c", "1"}
	}
}

func allCodes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// soxBinary returns the path of sox, or "" when it is missing; with CI=true a
// missing sox fails the test instead.
func soxBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("sox")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sox is required with CI=true: %v", err)
		}
		return ""
	}
	return p
}

// runSox converts in with `sox -D -V1 <inTyp> in <outArgs> out` and returns
// the output. -D turns off dither so the conversion is deterministic.
func runSox(t *testing.T, sox string, in []byte, inTyp, outArgs []string) []byte {
	t.Helper()
	dir := t.TempDir()
	inPath, outPath := filepath.Join(dir, "in.raw"), filepath.Join(dir, "out.raw")
	require.NoError(t, os.WriteFile(inPath, in, 0o644))
	args := append([]string{"-D", "-V1"}, inTyp...)
	args = append(args, inPath)
	args = append(args, outArgs...)
	args = append(args, outPath)
	out, err := exec.Command(sox, args...).CombinedOutput()
	require.NoError(t, err, "sox %v: %s", args, out)
	b, err := os.ReadFile(outPath)
	require.NoError(t, err)
	return b
}

func readGolden(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err, "golden file missing; regenerate with: go test -tags nolibopusfile ./codecs/g711/ -run TestSoxGolden -update")
	return b
}

// TestSoxGolden checks the committed goldens against the installed sox, and
// with -update rewrites them from sox.
func TestSoxGolden(t *testing.T) {
	sox := soxBinary(t)
	if sox == "" {
		require.False(t, *update, "-update needs sox")
		t.Skip("sox not installed: the committed goldens are still checked by TestEncodeMatchesGolden and TestDecodeMatchesGolden")
	}
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			in, typ := soxInput(g.name)
			got := runSox(t, sox, in, typ, g.args)
			if *update {
				require.NoError(t, os.WriteFile(filepath.Join("testdata", g.file), got, 0o644))
			}
			require.Equal(t, readGolden(t, g.file), got, "sox output differs from the committed golden")
		})
	}
}

func TestEncodeMatchesGolden(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string
		one     func(int16) byte
		slice   func([]byte, []int16) int
		formula func(int16) byte
	}{
		{"ulaw", "ulaw_encode.golden", EncodeULaw, EncodeULawTo, formulaEncodeULaw},
		{"alaw", "alaw_encode.golden", EncodeALaw, EncodeALawTo, formulaEncodeALaw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := readGolden(t, tc.file)
			require.Len(t, want, 1<<16)
			src := make([]int16, 1<<16)
			for i := range src {
				src[i] = int16(i - 32768)
			}
			got := make([]byte, len(src))
			require.Equal(t, len(src), tc.slice(got, src))
			for i, s := range src {
				if want[i] != got[i] || want[i] != tc.one(s) || want[i] != tc.formula(s) {
					t.Fatalf("sample %d: sox %#02x, slice %#02x, single %#02x, formula %#02x",
						s, want[i], got[i], tc.one(s), tc.formula(s))
				}
			}
		})
	}
}

func TestDecodeMatchesGolden(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string
		one     func(byte) int16
		slice   func([]int16, []byte) int
		formula func(byte) int16
	}{
		{"ulaw", "ulaw_decode.golden", DecodeULaw, DecodeULawTo, formulaDecodeULaw},
		{"alaw", "alaw_decode.golden", DecodeALaw, DecodeALawTo, formulaDecodeALaw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := readGolden(t, tc.file)
			require.Len(t, raw, 512)
			got := make([]int16, 256)
			require.Equal(t, 256, tc.slice(got, allCodes()))
			for c := range 256 {
				want := int16(binary.LittleEndian.Uint16(raw[2*c:]))
				if want != got[c] || want != tc.one(byte(c)) || want != tc.formula(byte(c)) {
					t.Fatalf("code %#02x: sox %d, slice %d, single %d, formula %d",
						c, want, got[c], tc.one(byte(c)), tc.formula(byte(c)))
				}
			}
		})
	}
}

// TestKnownValues pins a few values from G.711 itself, independent of SoX:
// silence codes, the extremes and sign symmetry.
func TestKnownValues(t *testing.T) {
	require.Equal(t, byte(0xFF), EncodeULaw(0))
	require.Equal(t, byte(0xD5), EncodeALaw(0))
	require.Equal(t, int16(0), DecodeULaw(0xFF))
	require.Equal(t, int16(0), DecodeULaw(0x7F))
	require.Equal(t, int16(8), DecodeALaw(0xD5))
	require.Equal(t, int16(-8), DecodeALaw(0x55))
	require.Equal(t, int16(32124), DecodeULaw(0x80))
	require.Equal(t, int16(-32124), DecodeULaw(0x00))
	require.Equal(t, int16(32256), DecodeALaw(0xAA))
	require.Equal(t, int16(-32256), DecodeALaw(0x2A))
	require.Equal(t, byte(0x80), EncodeULaw(32767))
	require.Equal(t, byte(0x00), EncodeULaw(-32768))
	require.Equal(t, byte(0xAA), EncodeALaw(32767))
	require.Equal(t, byte(0x2A), EncodeALaw(-32768))
	for c := range 128 {
		require.Equal(t, DecodeULaw(byte(c|0x80)), -DecodeULaw(byte(c)), "µ-law code %#02x", c)
		require.Equal(t, DecodeALaw(byte(c|0x80)), -DecodeALaw(byte(c)), "A-law code %#02x", c)
	}
}

// TestDecodeEncodeIsIdentity checks that every code survives a decode and
// re-encode, except µ-law's negative zero 0x7F, which encodes back as 0xFF.
func TestDecodeEncodeIsIdentity(t *testing.T) {
	for c := range 256 {
		wantU := byte(c)
		if c == 0x7F {
			wantU = 0xFF
		}
		require.Equal(t, wantU, EncodeULaw(DecodeULaw(byte(c))), "µ-law code %#02x", c)
		require.Equal(t, byte(c), EncodeALaw(DecodeALaw(byte(c))), "A-law code %#02x", c)
	}
}

// TestEncodeIsMonotonic checks that larger samples never decode to smaller
// values after a round trip, and bounds the round-trip error: half the
// largest quantization step (512 in 16-bit units) plus the rounding to 14 or
// 13 bits, and for µ-law the saturation above its largest value 32124.
func TestEncodeIsMonotonic(t *testing.T) {
	prevU, prevA := int16(-32768), int16(-32768)
	for v := -32768; v <= 32767; v++ {
		u := DecodeULaw(EncodeULaw(int16(v)))
		a := DecodeALaw(EncodeALaw(int16(v)))
		require.GreaterOrEqual(t, u, prevU, "µ-law at %d", v)
		require.GreaterOrEqual(t, a, prevA, "A-law at %d", v)
		maxU := 514
		if abs(v) > 32124 {
			maxU = abs(v) - 32124
		}
		require.LessOrEqual(t, abs(int(u)-v), maxU, "µ-law error at %d", v)
		require.LessOrEqual(t, abs(int(a)-v), 516, "A-law error at %d", v)
		prevU, prevA = u, a
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func TestSliceLengths(t *testing.T) {
	src := []int16{0, 1000, -1000, 32767, -32768}
	codes := make([]byte, 8)
	for i := range codes {
		codes[i] = 0x11
	}
	require.Equal(t, 3, EncodeULawTo(codes[:3], src))
	require.Equal(t, []byte{0xFF, EncodeULaw(1000), EncodeULaw(-1000), 0x11}, codes[:4])
	require.Equal(t, 5, EncodeALawTo(codes, src))
	require.Equal(t, byte(0x11), codes[5])
	require.Equal(t, 0, EncodeULawTo(nil, src))
	require.Equal(t, 0, EncodeALawTo(codes, nil))

	pcm := make([]int16, 3)
	require.Equal(t, 3, DecodeULawTo(pcm, codes))
	require.Equal(t, 2, DecodeALawTo(pcm, codes[:2]))
	require.Equal(t, DecodeULaw(codes[2]), pcm[2], "element beyond the count must stay as it was")
	require.Equal(t, 0, DecodeULawTo(nil, codes))
	require.Equal(t, 0, DecodeALawTo(pcm, nil))
}

func TestNoAllocations(t *testing.T) {
	src := make([]int16, 160)
	codes := make([]byte, 160)
	for i := range src {
		src[i] = int16(i * 199)
	}
	for name, f := range map[string]func(){
		"EncodeULawTo": func() { EncodeULawTo(codes, src) },
		"DecodeULawTo": func() { DecodeULawTo(src, codes) },
		"EncodeALawTo": func() { EncodeALawTo(codes, src) },
		"DecodeALawTo": func() { DecodeALawTo(src, codes) },
	} {
		require.Zero(t, testing.AllocsPerRun(100, f), name)
	}
}

// TestSliceMatchesSingle covers every length around the eight-sample
// unrolled loop, with dst shorter, equal and longer than src.
func TestSliceMatchesSingle(t *testing.T) {
	for n := range 26 {
		src := make([]int16, n)
		codes := make([]byte, n)
		for i := range src {
			src[i] = int16(i*2731 - 30000)
			codes[i] = byte(i*37 + 5)
		}
		for _, dn := range []int{max(n-3, 0), n, n + 5} {
			enc := make([]byte, dn)
			dec := make([]int16, dn)
			want := min(n, dn)
			require.Equal(t, want, EncodeULawTo(enc, src))
			for i := range want {
				require.Equal(t, EncodeULaw(src[i]), enc[i], "µ-law n=%d dn=%d i=%d", n, dn, i)
			}
			require.Equal(t, want, EncodeALawTo(enc, src))
			for i := range want {
				require.Equal(t, EncodeALaw(src[i]), enc[i], "A-law n=%d dn=%d i=%d", n, dn, i)
			}
			require.Equal(t, want, DecodeULawTo(dec, codes))
			for i := range want {
				require.Equal(t, DecodeULaw(codes[i]), dec[i], "µ-law n=%d dn=%d i=%d", n, dn, i)
			}
			require.Equal(t, want, DecodeALawTo(dec, codes))
			for i := range want {
				require.Equal(t, DecodeALaw(codes[i]), dec[i], "A-law n=%d dn=%d i=%d", n, dn, i)
			}
			for i := want; i < dn; i++ {
				require.Zero(t, dec[i], "past the count must be untouched")
				require.Zero(t, enc[i], "past the count must be untouched")
			}
		}
	}
}

// Each channel of interleaved µ-law stereo is its samples encoded, every
// other byte: the first writer zeroes the other channel, a keeping writer
// leaves it, silence is µ-law silence, and the bytes after the frames are
// untouched. Lengths not a multiple of the four frames a store holds take
// the tail loop.
func TestEncodeULawStereoChannel(t *testing.T) {
	left := []int16{0, 1, -1, 32767, -32768, 1000, 7, -7, 300}
	right := []int16{-5, 77, -32768, 0, 12345, -999, 8, 9, -300}
	for n := range len(left) + 1 {
		l, r := left[:n], right[:n]
		buf := make([]byte, 2*n+3)
		for i := range buf {
			buf[i] = 0xAA
		}
		require.Equal(t, n, EncodeULawStereoChannelTo(buf, false, false, l))
		for i := range n {
			require.Equal(t, EncodeULaw(l[i]), buf[2*i], "n %d left %d", n, i)
			require.Equal(t, byte(0), buf[2*i+1], "n %d right %d zeroed", n, i)
		}
		require.Equal(t, n, EncodeULawStereoChannelTo(buf, true, true, r))
		for i := range n {
			require.Equal(t, EncodeULaw(l[i]), buf[2*i], "n %d left %d", n, i)
			require.Equal(t, EncodeULaw(r[i]), buf[2*i+1], "n %d right %d", n, i)
		}
		require.Equal(t, []byte{0xAA, 0xAA, 0xAA}, buf[2*n:], "n %d: bytes after the frames untouched", n)
		require.Equal(t, n, EncodeULawStereoChannelTo(buf[:2*n], false, true, nil))
		for i := range n {
			require.Equal(t, EncodeULaw(0), buf[2*i], "n %d left %d silent", n, i)
			require.Equal(t, EncodeULaw(r[i]), buf[2*i+1], "n %d right %d kept", n, i)
		}
	}
	require.Equal(t, 2, EncodeULawStereoChannelTo(make([]byte, 20), false, false, left[:2]), "the source bounds it")
	require.Equal(t, 1, EncodeULawStereoChannelTo(make([]byte, 3), true, false, left), "whole frames of dst only")
	require.Zero(t, EncodeULawStereoChannelTo(make([]byte, 1), false, false, nil))
}
