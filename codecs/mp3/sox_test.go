package mp3

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// soxWithMP3 returns the sox binary when it is installed with MP3 support
// (Debian: sox and libsox-fmt-mp3). Otherwise the test is skipped, or with
// CI=true fails.
func soxWithMP3(t *testing.T) string {
	t.Helper()
	missing := func(why string) string {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (required with CI=true; install sox and libsox-fmt-mp3)", why)
		}
		t.Skip(why)
		return ""
	}
	sox, err := exec.LookPath("sox")
	if err != nil {
		return missing("sox not installed")
	}
	out, _ := exec.Command(sox, "-h").CombinedOutput()
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "AUDIO FILE FORMATS:") && strings.Contains(line+" ", " mp3 ") {
			return sox
		}
	}
	return missing("sox cannot read mp3 (libsox-fmt-mp3 missing)")
}

// TestSoxDecodesTone has SoX (libmad) decode our stream and checks rate,
// channels, length and that what comes out is the tone that went in.
func TestSoxDecodesTone(t *testing.T) {
	sox := soxWithMP3(t)
	soxi := filepath.Join(filepath.Dir(sox), "soxi")
	dir := t.TempDir()
	for _, cfg := range []Config{
		{SampleRate: 8000, Channels: 1},
		{SampleRate: 16000, Channels: 1, BitrateKbps: 32},
		{SampleRate: 44100, Channels: 2, BitrateKbps: 128},
	} {
		t.Run(fmt.Sprintf("%d_%dch", cfg.SampleRate, cfg.Channels), func(t *testing.T) {
			in := sine(cfg.SampleRate, cfg.Channels, 440, 1)
			mp3, err := EncodeAll(cfg, in)
			require.NoError(t, err)
			frames, err := parseStream(mp3)
			require.NoError(t, err)
			path := filepath.Join(dir, fmt.Sprintf("tone_%d_%d.mp3", cfg.SampleRate, cfg.Channels))
			require.NoError(t, os.WriteFile(path, mp3, 0o644))

			info := func(flag string) string {
				out, err := exec.Command(soxi, flag, path).CombinedOutput()
				require.NoError(t, err, "soxi %s: %s", flag, out)
				return strings.TrimSpace(string(out))
			}
			require.Equal(t, "mp3", info("-t"))
			require.Equal(t, fmt.Sprint(cfg.SampleRate), info("-r"))
			require.Equal(t, fmt.Sprint(cfg.Channels), info("-c"))

			raw := filepath.Join(dir, "out.s16")
			out, err := exec.Command(sox, "-V1", path, "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", raw).CombinedOutput()
			require.NoError(t, err, "sox decode: %s", out)
			b, err := os.ReadFile(raw)
			require.NoError(t, err)
			dec := make([]int16, len(b)/2)
			for i := range dec {
				dec[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
			}
			perCh := len(dec) / cfg.Channels
			// The duration the headers give, less one frame that SoX's
			// libmad reader holds back.
			require.Equal(t, (len(frames)-1)*frames[0].samples, perCh)

			// Align the first channel with the input, then measure the SNR
			// over the middle of the tone. A pure tone correlates equally
			// well one period later, so the onset (the first sample past a
			// quarter of full amplitude; pre-echo stays below that) picks
			// the period and correlation refines it within half a period.
			left := func(s []int16, i int) float64 { return float64(s[i*cfg.Channels]) }
			onset := 0
			for onset < perCh && math.Abs(left(dec, onset)) < 4096 {
				onset++
			}
			start, n := cfg.SampleRate/5, cfg.SampleRate/2
			half := cfg.SampleRate / 440 / 2
			bestLag, best := 0, math.Inf(-1)
			for lag := max(onset-half, 0); lag <= onset+half; lag++ {
				var c float64
				for i := start; i < start+n; i++ {
					c += left(in, i) * left(dec, i+lag)
				}
				if c > best {
					bestLag, best = lag, c
				}
			}
			var sig, noise float64
			for i := start; i < start+n; i++ {
				x, y := left(in, i), left(dec, i+bestLag)
				sig += x * x
				noise += (x - y) * (x - y)
			}
			snr := 10 * math.Log10(sig/noise)
			t.Logf("delay %d samples, SNR %.1f dB", bestLag, snr)
			// LAME's encoder delay (576) plus the Layer III decoder delay
			// (529).
			require.InDelta(t, 1105, bestLag, 50, "delay of LAME plus the decoder")
			require.Greater(t, snr, 15.0)
		})
	}
}
