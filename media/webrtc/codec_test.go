package webrtc

import (
	"bytes"
	"math"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/opus"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media/quality"
)

// espeak16k is espeak-ng speech at the engine's 16 kHz.
func espeak16k(t *testing.T) []int16 {
	t.Helper()
	bin, err := exec.LookPath("espeak-ng")
	ciRequires(t, err == nil, "espeak-ng")
	out, err := exec.Command(bin, "--stdout", "-s", "150",
		"Hello, I would like to book a table for two people tonight. Could you tell me whether the terrace is still open, and how much the parking costs?").Output()
	require.NoError(t, err)
	f, pcm, err := wav.ReadAll(bytes.NewReader(out))
	if len(pcm) == 0 {
		require.NoError(t, err)
	}
	r, err := resample.New(f.SampleRate, 16000, resample.QualityHigh)
	require.NoError(t, err)
	defer r.Close()
	dst := make([]int16, len(pcm)*16000/f.SampleRate+1024)
	n, err := r.ProcessTo(dst, pcm)
	require.NoError(t, err)
	return dst[:n]
}

// roundTrip encodes pcm (16 kHz) 20 ms at a time with cfg and decodes it
// at 16 kHz, as a browser would (Opus decoders take any rate).
func roundTrip(t *testing.T, cfg opus.EncoderConfig, pcm []int16) (out []int16, bytes int) {
	t.Helper()
	enc, err := opus.NewEncoder(cfg)
	require.NoError(t, err)
	dec, err := opus.NewDecoder(16000, 1)
	require.NoError(t, err)
	buf, frame := make([]byte, opus.MaxPacketSize), make([]int16, 320)
	for i := 0; i+320 <= len(pcm); i += 320 {
		n, err := enc.EncodeTo(buf, pcm[i:i+320])
		require.NoError(t, err)
		bytes += n
		k, err := dec.DecodeTo(frame, buf[:n])
		require.NoError(t, err)
		out = append(out, frame[:k]...)
	}
	return out, bytes
}

// speechFidelity compares got with ref after aligning the codec delay:
// the SNR over the whole signal and per 20 ms frame of speech (segmental,
// each frame clamped to -10..35 dB), and the log-spectral distance of
// those frames (RMS over 50 Hz bins to 8 kHz of the dB difference of
// Hann-windowed spectra), all in dB.
func speechFidelity(ref, got []int16) (snr, segSNR, lsd float64) {
	delay, best := 0, math.Inf(-1)
	for d := range 480 {
		var c float64
		for i := 0; i < len(ref) && i+d < len(got); i++ {
			c += float64(ref[i]) * float64(got[i+d])
		}
		if c > best {
			best, delay = c, d
		}
	}
	const n = 320
	var win, cs, sn [n]float64
	for k := range n {
		win[k] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(k)/n)
		sn[k], cs[k] = math.Sincos(2 * math.Pi * float64(k) / n)
	}
	var sig, noise, segs, lsds float64
	frames := 0
	for i := 0; i+n <= len(ref) && i+n+delay <= len(got); i += n {
		var s, e float64
		for k := i; k < i+n; k++ {
			r, g := float64(ref[k]), float64(got[k+delay])
			s += r * r
			e += (r - g) * (r - g)
		}
		sig, noise = sig+s, noise+e
		if s/n < 100*100 {
			continue // a pause
		}
		frames++
		segs += math.Max(-10, math.Min(35, 10*math.Log10(s/math.Max(e, 1))))
		var acc float64
		for b := 1; b < n/2; b++ {
			var ar, ai, gr, gi float64
			for k := range n {
				r, g, j := win[k]*float64(ref[i+k]), win[k]*float64(got[i+k+delay]), b*k%n
				ar, ai, gr, gi = ar+r*cs[j], ai-r*sn[j], gr+g*cs[j], gi-g*sn[j]
			}
			d := 10 * math.Log10((ar*ar+ai*ai+1e3)/(gr*gr+gi*gi+1e3))
			acc += d * d
		}
		lsds += math.Sqrt(acc / (n/2 - 1))
	}
	return 10 * math.Log10(sig/noise), segs / float64(frames), lsds / float64(frames)
}

// TestNodeEncoderQuality measures the node's encoders on espeak-ng speech
// round-tripped at 16 kHz: the CELT low-delay stream it starts with (32
// kb/s, complexity 1) must be at least as faithful as the SILK stream with
// FEC sized for 10% loss at 24 kb/s it used to send all the time, and the
// SILK+FEC stream it turns to after reported loss must stay usable.
func TestNodeEncoderQuality(t *testing.T) {
	pcm := espeak16k(t)
	s := &Session{srv: &Server{cfg: Config{}.withDefaults()}, m: &quality.Metrics{}}
	type figs struct{ snr, seg, lsd, kbps float64 }
	measure := func(name string, cfg opus.EncoderConfig) figs {
		got, n := roundTrip(t, cfg, pcm)
		var f figs
		f.snr, f.seg, f.lsd = speechFidelity(pcm, got)
		f.kbps = float64(n*8) / (float64(len(pcm)) / 16000) / 1000
		t.Logf("%-36s SNR %5.1f dB, segmental SNR %5.1f dB, log-spectral distance %5.2f dB, %4.1f kb/s", name, f.snr, f.seg, f.lsd, f.kbps)
		return f
	}
	old := measure("before: SILK 24 kb/s c1, FEC for 10%", opus.EncoderConfig{SampleRate: 16000, Bitrate: 24000, Complexity: 1, FEC: true, DTX: true})
	celt := measure("now: CELT 32 kb/s c1 (no loss)", s.encoderConfig(false))
	silk := measure("now: SILK 32 kb/s c1, FEC (after loss)", s.encoderConfig(true))
	require.True(t, s.encoderConfig(false).LowDelay)
	require.True(t, s.encoderConfig(true).FEC)
	require.GreaterOrEqual(t, celt.seg, old.seg)
	require.GreaterOrEqual(t, celt.snr, old.snr)
	require.LessOrEqual(t, celt.lsd, old.lsd)
	require.Greater(t, celt.seg, 10.0)
	require.Greater(t, silk.seg, 5.0)
	require.Less(t, silk.lsd, old.lsd)
}
