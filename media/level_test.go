package media

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func sineFrame(n int, amp, cycles float64) []int16 {
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(math.Round(amp * math.Sin(2*math.Pi*cycles*float64(i)/float64(n))))
	}
	return s
}

func TestRMSAndDBFS(t *testing.T) {
	require.Zero(t, RMS(nil))
	require.Equal(t, math.Inf(-1), DBFS(nil))
	require.Equal(t, math.Inf(-1), DBFS(make([]int16, 160)))

	square := make([]int16, 320)
	for i := range square {
		square[i] = -32768
	}
	require.Equal(t, 32768.0, RMS(square))
	require.Equal(t, 0.0, DBFS(square))

	require.Equal(t, 1000.0, RMS([]int16{1000, -1000, 1000, -1000}))
	require.InDelta(t, 20*math.Log10(1000.0/32768), DBFS([]int16{-1000, 1000}), 1e-12)

	// A sine over whole periods has RMS amplitude/sqrt(2).
	s := sineFrame(960, 32767, 12)
	require.InDelta(t, 32767/math.Sqrt2, RMS(s), 0.5)
	require.InDelta(t, -3.0103, DBFS(s), 0.001)
	require.InDelta(t, -23.0103, DBFS(sineFrame(960, 3276.7, 5)), 0.01)
}

// TestDBFSMatchesSox compares DBFS with the "RMS lev dB" of `sox stats`,
// which shares its reference (a full-scale square wave).
func TestDBFSMatchesSox(t *testing.T) {
	sox, err := exec.LookPath("sox")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sox is required with CI=true: %v", err)
		}
		t.Skip("sox not installed")
	}
	re := regexp.MustCompile(`RMS lev dB\s+(-?[0-9.]+)`)
	dir := t.TempDir()
	for i, frame := range [][]int16{
		sineFrame(320, 32767, 7),
		sineFrame(320, 1234, 3),
		{100, -3000, 25000, -32768, 7, 0, 0, 12},
	} {
		path := filepath.Join(dir, strconv.Itoa(i)+".raw")
		b := make([]byte, 0, 2*len(frame))
		for _, v := range frame {
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		}
		require.NoError(t, os.WriteFile(path, b, 0o644))
		out, err := exec.Command(sox, "-t", "raw", "-r", "16000", "-e", "signed-integer", "-b", "16", "-c", "1", "-L", path, "-n", "stats").CombinedOutput()
		require.NoError(t, err, "%s", out)
		m := re.FindSubmatch(out)
		require.NotNil(t, m, "no RMS level in: %s", out)
		want, err := strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		require.InDelta(t, want, DBFS(frame), 0.006, "frame %d (sox prints two decimals)", i)
	}
}
