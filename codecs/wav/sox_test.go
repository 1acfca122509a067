package wav

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "regenerate the sox-made files in testdata")

// soxFixtures are WAV files made by SoX and their samples as decoded by
// SoX; the commands are the ones in testdata/README.md.
var soxFixtures = []struct {
	name   string
	format Format
	make   []string // sox arguments that write <name>.wav (appended after -D -V1)
}{
	{"sox_ulaw_mono", Format{ULaw, 8000, 1}, []string{"-n", "-r", "8000", "-c", "1", "-e", "u-law", "%s", "synth", "0.250125", "sine", "440"}},
	{"sox_alaw_stereo", Format{ALaw, 8000, 2}, []string{"-n", "-r", "8000", "-c", "2", "-e", "a-law", "%s", "synth", "0.1", "sine", "440", "sine", "660"}},
	{"sox_pcm16_mono", Format{PCM16, 16000, 1}, []string{"-n", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", "%s", "synth", "0.1", "sine", "440"}},
	{"sox_pcm16_stereo", Format{PCM16, 44100, 2}, []string{"-n", "-r", "44100", "-c", "2", "-b", "16", "-e", "signed-integer", "%s", "synth", "0.1", "sine", "440", "sine", "660"}},
}

// soxTool returns the path of a SoX program, or "" when it is missing;
// with CI=true a missing program fails the test instead.
func soxTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required with CI=true: %v", name, err)
		}
		return ""
	}
	return p
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	require.NoError(t, err, "%s %s: %s", bin, strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// soxMake writes fixture files into dir with sox: name.wav and name.s16
// (the samples sox decodes from it, interleaved little-endian int16).
func soxMake(t *testing.T, sox, dir, name string, makeArgs []string) {
	t.Helper()
	wavPath := filepath.Join(dir, name+".wav")
	args := []string{"-D", "-V1"}
	for _, a := range makeArgs {
		if a == "%s" {
			a = wavPath
		}
		args = append(args, a)
	}
	run(t, sox, args...)
	run(t, sox, "-D", "-V1", wavPath, "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", filepath.Join(dir, name+".s16"))
}

func readS16(t *testing.T, path string) []int16 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, "regenerate with: go test -tags nolibopusfile ./codecs/wav/ -run TestSoxFixtures -update")
	s := make([]int16, len(b)/2)
	for i := range s {
		s[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return s
}

// TestSoxFixturesUpToDate re-makes the fixtures with the installed sox and
// compares them with the committed ones; -update rewrites them.
func TestSoxFixturesUpToDate(t *testing.T) {
	sox := soxTool(t, "sox")
	if sox == "" {
		require.False(t, *update, "-update needs sox")
		t.Skip("sox not installed: TestReadsSoxFiles still checks the committed files")
	}
	dir := t.TempDir()
	if *update {
		dir = "testdata"
	}
	for _, fx := range soxFixtures {
		soxMake(t, sox, dir, fx.name, fx.make)
		for _, ext := range []string{".wav", ".s16"} {
			fresh, err := os.ReadFile(filepath.Join(dir, fx.name+ext))
			require.NoError(t, err)
			committed, err := os.ReadFile(filepath.Join("testdata", fx.name+ext))
			require.NoError(t, err, "regenerate with -update")
			require.Equal(t, committed, fresh, "%s%s differs from what sox makes now", fx.name, ext)
		}
	}
}

// TestReadsSoxFiles reads the committed SoX-made files and compares the
// samples with SoX's own decoding of them.
func TestReadsSoxFiles(t *testing.T) {
	for _, fx := range soxFixtures {
		t.Run(fx.name, func(t *testing.T) {
			want := readS16(t, filepath.Join("testdata", fx.name+".s16"))
			b, err := os.ReadFile(filepath.Join("testdata", fx.name+".wav"))
			require.NoError(t, err)
			f, got, err := ReadAll(bytes.NewReader(b))
			require.NoError(t, err)
			require.Equal(t, fx.format, f)
			require.NotEmpty(t, want)
			require.Equal(t, want, got)

			// Writing the samples back gives SoX's file byte for byte:
			// same header layout, pad byte and G.711 codes.
			again, err := Encode(f, got)
			require.NoError(t, err)
			require.Equal(t, b, again)
		})
	}
}

// TestSoxReadsOurFiles writes files with Encode and Writer and checks that
// soxi reports their format and length and that sox decodes the same
// samples.
func TestSoxReadsOurFiles(t *testing.T) {
	sox, soxi := soxTool(t, "sox"), soxTool(t, "soxi")
	if sox == "" || soxi == "" {
		t.Skip("sox/soxi not installed (set CI=true to make this a failure)")
	}
	encName := map[Encoding]string{PCM16: "Signed Integer PCM", ULaw: "u-law", ALaw: "A-law"}
	dir := t.TempDir()
	for _, tc := range []struct {
		f      Format
		frames int
		writer bool
	}{
		{Format{PCM16, 8000, 1}, 1600, false},
		{Format{PCM16, 48000, 2}, 4800, true},
		{Format{PCM16, 22050, 1}, 2205, true},
		{Format{ULaw, 8000, 1}, 1601, true}, // odd: pad byte
		{Format{ULaw, 8000, 2}, 800, false},
		{Format{ALaw, 8000, 1}, 801, false},
		{Format{ALaw, 16000, 2}, 1600, true},
	} {
		name := fmt.Sprintf("%s_%d_%dch_%d_writer=%v", tc.f.Encoding, tc.f.SampleRate, tc.f.Channels, tc.frames, tc.writer)
		t.Run(name, func(t *testing.T) {
			in := tone(tc.f.SampleRate, tc.f.Channels, tc.frames)
			path := filepath.Join(dir, name+".wav")
			if tc.writer {
				file, err := os.Create(path)
				require.NoError(t, err)
				w, err := NewWriter(file, tc.f)
				require.NoError(t, err)
				require.NoError(t, w.WriteSamples(in))
				require.NoError(t, w.Close())
				require.NoError(t, file.Close())
			} else {
				b, err := Encode(tc.f, in)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(path, b, 0o644))
			}
			require.Equal(t, "wav", run(t, soxi, "-t", path))
			require.Equal(t, fmt.Sprint(tc.f.SampleRate), run(t, soxi, "-r", path))
			require.Equal(t, fmt.Sprint(tc.f.Channels), run(t, soxi, "-c", path))
			require.Equal(t, fmt.Sprint(tc.frames), run(t, soxi, "-s", path))
			require.Contains(t, run(t, soxi, "-e", path), encName[tc.f.Encoding])
			// soxi prints no warning for a well-formed file.
			out := run(t, soxi, path)
			require.NotContains(t, out, "WARN")

			raw := filepath.Join(dir, name+".s16")
			run(t, sox, "-D", "-V2", path, "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", raw)
			require.Equal(t, expected(tc.f.Encoding, in), readS16(t, raw))
		})
	}
}
