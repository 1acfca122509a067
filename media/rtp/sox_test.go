package rtp

import (
	"bytes"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/codecs/wav"
)

// soxAudio makes 16 kHz mono audio with sox's synth effect.
func soxAudio(t *testing.T, args ...string) []int16 {
	t.Helper()
	sox := needTool(t, "sox", "sox")
	file := filepath.Join(t.TempDir(), "in.wav")
	cmd := append([]string{"-n", "-r", "16000", "-b", "16", "-c", "1", "-e", "signed", file, "synth"}, args...)
	out, err := exec.Command(sox, cmd...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	f, pcm, err := wav.ReadAll(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, 16000, f.SampleRate)
	return pcm
}

// sendFile writes pcm through a.WriteFrame as fast as the queue takes it
// while b collects what arrives, and returns b's audio.
func sendFile(t *testing.T, a, b *Session, pcm []int16, listen time.Duration) []int16 {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i+320 <= len(pcm); {
			err := a.WriteFrame(pcm[i : i+320])
			switch {
			case err == nil:
				i += 320
			case errors.Is(err, ErrQueueFull):
				time.Sleep(5 * time.Millisecond)
			default:
				t.Error(err)
				return
			}
		}
	})
	got := collect(t, b, listen)
	wg.Wait()
	return got
}

// bestLag finds the delay of got against want by cross-correlation and
// returns it with the normalized correlation at that lag.
func bestLag(want, got []int16, maxLag int) (int, float64) {
	best, bestC := 0, -1.0
	for lag := 0; lag < maxLag && lag+len(want) <= len(got); lag += 1 {
		var c, ew, eg float64
		for i := 0; i < len(want); i += 2 {
			w, g := float64(want[i]), float64(got[lag+i])
			c += w * g
			ew += w * w
			eg += g * g
		}
		if n := c / math.Sqrt(ew*eg+1); n > bestC {
			best, bestC = lag, n
		}
	}
	return best, bestC
}

// TestSoxSweepThroughCall sends a sox-made 300-3400 Hz sweep from one
// session to the other over each codec and compares what comes out with
// what went in: the waveform survives (correlation) and the delay through
// encoder, packets, jitter buffer, decoder and resamplers is measured.
func TestSoxSweepThroughCall(t *testing.T) {
	in := soxAudio(t, "1", "sine", "300-3400", "vol", "0.5")
	for _, c := range []Codec{codecPCMU, codecPCMA, codecOpus} {
		t.Run(c.Name, func(t *testing.T) {
			a, b := pair(t, slack, c, Codec{})
			got := sendFile(t, a, b, in, 1600*time.Millisecond)
			// Skip the first 100 ms of the sweep (filter and codec start-up).
			want := in[1600:14400]
			lag, corr := bestLag(want, got, 1600+8000)
			// Reading and sending start together, so the audio starts this
			// far into what the reader got: the pacer's first send, the
			// network, the jitter buffer's target and the codec and
			// resampler delays (writing runs ahead and adds nothing).
			delay := time.Duration(lag-1600) * time.Second / 16000
			// On a loaded machine a late tick can cost a frame (concealed)
			// and shift what follows, so each 100 ms block is matched at
			// its own lag near the overall one and the median is judged.
			var blocks []float64
			for off := 0; off+1600 <= len(want); off += 1600 {
				lo := max(lag+off-480, 0)
				_, bc := bestLag(want[off:off+1600], got[lo:], 960)
				blocks = append(blocks, bc)
			}
			slices.Sort(blocks)
			median := blocks[len(blocks)/2]
			t.Logf("%s: correlation %.4f overall, median of 100 ms blocks %.4f (worst %.4f); audio starts %v into the reader's stream",
				c.Name, corr, median, blocks[0], delay)
			minCorr := 0.97
			if c.is(NameOpus) {
				minCorr = 0.85 // a perceptual codec keeps the sound, not the waveform
			}
			require.Greater(t, median, minCorr)
			require.Less(t, delay, 300*time.Millisecond)
		})
	}
}

// TestSoxMeasuresReceivedTone writes what a session received to a WAV file
// and lets sox measure it: a 1 kHz tone at half scale sent over PCMU comes
// out as a 1 kHz tone at the same level.
func TestSoxMeasuresReceivedTone(t *testing.T) {
	sox := needTool(t, "sox", "sox")
	in := soxAudio(t, "1.5", "sine", "1000", "vol", "0.5")
	a, b := pair(t, slack, codecPCMU, Codec{})
	got := sendFile(t, a, b, in, 2000*time.Millisecond)
	lag, _ := bestLag(in[1600:8000], got, 16000)
	seg := got[lag+1600 : lag+1600+16000]
	data, err := wav.Encode(wav.Format{Encoding: wav.PCM16, SampleRate: 16000, Channels: 1}, seg)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "out.wav")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	out, err := exec.Command(sox, file, "-n", "stat").CombinedOutput()
	require.NoError(t, err, "%s", out)
	stat := func(name string) float64 {
		m := regexp.MustCompile(name + `:\s+(-?[0-9.]+)`).FindSubmatch(out)
		require.NotNil(t, m, "%s in %s", name, out)
		v, err := strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		return v
	}
	t.Logf("sox stat of the received tone: rough frequency %.0f Hz, RMS %.4f", stat("Rough   frequency"), stat("RMS     amplitude"))
	require.InDelta(t, 1000, stat("Rough   frequency"), 15)
	require.InEpsilon(t, 0.3536, stat("RMS     amplitude"), 0.05)
}
