package rtp

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/resample"
)

// toneFit fits a sine of frequency f to x (a whole second at rate, so the
// tone has whole periods and its sine and cosine are orthogonal) and
// returns its amplitude and the ratio in dB of its power to everything
// else: G.711 noise, resampler aliases and images, ripple.
func toneFit(x []int16, f float64, rate int) (amp, snr float64) {
	var a, b float64
	for i, v := range x {
		s, c := math.Sincos(2 * math.Pi * f * float64(i) / float64(rate))
		a += float64(v) * s
		b += float64(v) * c
	}
	n := float64(len(x))
	a, b = 2*a/n, 2*b/n
	var res float64
	for i, v := range x {
		s, c := math.Sincos(2 * math.Pi * f * float64(i) / float64(rate))
		d := float64(v) - a*s - b*c
		res += d * d
	}
	amp = math.Hypot(a, b)
	return amp, 10 * math.Log10(amp*amp/2/(res/n))
}

func sine(f, amp float64, rate, n int) []int16 {
	x := make([]int16, n)
	for i := range x {
		x[i] = int16(math.Round(amp * math.Sin(2*math.Pi*f*float64(i)/float64(rate))))
	}
	return x
}

// g711Paths runs a tone through both directions of a G.711 call with the
// given resampling quality (and mu-law companding unless law is false)
// and returns, per direction, the gain in dB and
// the signal to noise-and-distortion ratio: send (16 kHz engine audio ->
// 8 kHz -> mu-law, measured as the peer decodes it) and receive (the peer's
// 8 kHz tone as mu-law -> decoded -> 16 kHz).
func g711Paths(t *testing.T, q resample.Quality, law bool, f, amp float64) (sendGain, sendSNR, recvGain, recvSNR float64) {
	return g711PathsRecv(t, q, q, law, f, amp)
}

// g711PathsRecv is g711Paths with qr for the receive direction.
func g711PathsRecv(t *testing.T, q, qr resample.Quality, law bool, f, amp float64) (sendGain, sendSNR, recvGain, recvSNR float64) {
	t.Helper()
	const skip = 10 // frames of filter start-up
	frames := 50 + skip
	down, err := resample.New(EngineRate, 8000, q)
	require.NoError(t, err)
	up, err := resample.New(8000, EngineRate, qr)
	require.NoError(t, err)
	defer down.Close()
	defer up.Close()

	src16 := sine(f, amp, EngineRate, frames*engineFrame)
	var got8 []int16
	pcm8, code, dec := make([]int16, 160), make([]byte, 160), make([]int16, 160)
	for i := range frames {
		n, err := down.ProcessTo(pcm8, src16[i*engineFrame:(i+1)*engineFrame])
		require.NoError(t, err)
		require.Equal(t, 160, n)
		copy(dec, pcm8)
		if law {
			g711.EncodeULawTo(code, pcm8)
			g711.DecodeULawTo(dec, code)
		}
		if i >= skip {
			got8 = append(got8, dec...)
		}
	}
	a, snr := toneFit(got8, f, 8000)
	sendGain, sendSNR = 20*math.Log10(a/amp), snr

	src8 := sine(f, amp, 8000, frames*160)
	var got16 []int16
	pcm16 := make([]int16, engineFrame)
	for i := range frames {
		copy(dec, src8[i*160:(i+1)*160])
		if law {
			g711.EncodeULawTo(code, dec)
			g711.DecodeULawTo(dec, code)
		}
		n, err := up.ProcessTo(pcm16, dec)
		require.NoError(t, err)
		require.Equal(t, engineFrame, n)
		if i >= skip {
			got16 = append(got16, pcm16...)
		}
	}
	a, snr = toneFit(got16, f, EngineRate)
	return sendGain, sendSNR, 20 * math.Log10(a/amp), snr
}

// TestG711ResampleQuality backs resampleQuality's choice of QualityLow for
// G.711. Over the telephone band (300-3400 Hz), at -10 and -30 dBFS, in
// both directions of a call: the resampler alone keeps the signal to
// noise-and-distortion ratio (SINAD) above 60 dB, far below the noise of
// G.711's companding, so a whole call leg (resampling plus mu-law) keeps
// its SINAD within a decibel and a half of the companding's own (35 to
// 38 dB; the test asks for 34); the gain stays within 0.1 dB up to 3 kHz
// and within 1 dB at 3.4 kHz. QualityHigh's figures are logged beside
// them.
func TestG711ResampleQuality(t *testing.T) {
	require.Equal(t, resample.QualityLow, resampleQuality(8000))
	require.Equal(t, resample.QualityHigh, resampleQuality(16000))
	for _, amp := range []float64{10362, 1036} { // -10 and -30 dBFS
		for _, f := range []float64{303, 1013, 2017, 2999, 3301, 3399} {
			_, ss, _, rs := g711Paths(t, resample.QualityLow, false, f, amp)
			sg, ssLaw, rg, rsLaw := g711Paths(t, resample.QualityLow, true, f, amp)
			_, ssH, _, rsH := g711Paths(t, resample.QualityHigh, false, f, amp)
			_, ssHLaw, _, rsHLaw := g711Paths(t, resample.QualityHigh, true, f, amp)
			t.Logf("%4.0f Hz %3.0f dBFS: send gain %+.3f dB, SINAD resampler %.1f dB (High %.1f), with mu-law %.1f dB (High %.1f); "+
				"receive gain %+.3f dB, SINAD resampler %.1f dB (High %.1f), with mu-law %.1f dB (High %.1f)",
				f, 20*math.Log10(amp/32768), sg, ss, ssH, ssLaw, ssHLaw, rg, rs, rsH, rsLaw, rsHLaw)
			require.Greater(t, ss, 60.0, "send SINAD at %v Hz", f)
			require.Greater(t, rs, 60.0, "receive SINAD at %v Hz", f)
			require.Greater(t, ssLaw, 34.0, "send SINAD with mu-law at %v Hz", f)
			require.Greater(t, rsLaw, 34.0, "receive SINAD with mu-law at %v Hz", f)
			lim := 0.1
			if f > 3000 {
				lim = 1
			}
			require.InDelta(t, 0, sg, lim, "send gain at %v Hz", f)
			require.InDelta(t, 0, rg, lim, "receive gain at %v Hz", f)
		}
	}
}

// TestG711ReceiveQuality backs receiveQuality's half-band filter
// (QualityPhone) for G.711's 8 to 16 kHz, against QualityLow on the same
// tones: over the telephone band at -10 and -30 dBFS the gain stays
// within 0.1 dB up to 3 kHz and 1 dB at 3.4 kHz, and the SINAD of a
// received call leg (mu-law then resampling) stays above 34 dB, within
// a decibel of QualityLow's; the resampler alone keeps above 60 dB up to
// 3.2 kHz (its passband), and above 40 dB at the band's top, where the
// images fall in the half-band's transition.
func TestG711ReceiveQuality(t *testing.T) {
	require.Equal(t, resample.QualityPhone, receiveQuality(8000, EngineRate))
	require.Equal(t, resample.QualityHigh, receiveQuality(16000, EngineRate))
	for _, amp := range []float64{10362, 1036} {
		for _, f := range []float64{303, 1013, 2017, 2999, 3199, 3301, 3399} {
			_, _, _, rs := g711PathsRecv(t, resample.QualityLow, resample.QualityPhone, false, f, amp)
			_, _, rg, rsLaw := g711PathsRecv(t, resample.QualityLow, resample.QualityPhone, true, f, amp)
			_, _, _, lowLaw := g711Paths(t, resample.QualityLow, true, f, amp)
			t.Logf("%4.0f Hz %3.0f dBFS: receive gain %+.3f dB, SINAD resampler %.1f dB, with mu-law %.1f dB (QualityLow %.1f)",
				f, 20*math.Log10(amp/32768), rg, rs, rsLaw, lowLaw)
			floor := 60.0
			if f > 3200 {
				floor = 40
			}
			require.Greater(t, rs, floor, "receive SINAD at %v Hz", f)
			require.Greater(t, rsLaw, 34.0, "receive SINAD with mu-law at %v Hz", f)
			require.Greater(t, rsLaw, lowLaw-1, "receive SINAD with mu-law at %v Hz against QualityLow", f)
			lim := 0.1
			if f > 3000 {
				lim = 1
			}
			require.InDelta(t, 0, rg, lim, "receive gain at %v Hz", f)
		}
	}
}
