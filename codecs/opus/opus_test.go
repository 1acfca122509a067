package opus

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// encodeAll encodes pcm in 20 ms frames and returns the packets.
func encodeAll(t testing.TB, e *Encoder, pcm []int16) [][]byte {
	t.Helper()
	frame := e.Config().SampleRate / 50
	var pkts [][]byte
	buf := make([]byte, MaxPacketSize)
	for off := 0; off+frame <= len(pcm); off += frame {
		n, err := e.EncodeTo(buf, pcm[off:off+frame])
		require.NoError(t, err)
		pkts = append(pkts, append([]byte(nil), buf[:n]...))
	}
	return pkts
}

// decodeAll decodes every packet in turn (nil: conceal a 20 ms loss).
func decodeAll(t testing.TB, d *Decoder, pkts [][]byte) []int16 {
	t.Helper()
	frame := d.SampleRate() / 50
	out := make([]int16, 0, len(pkts)*frame)
	buf := make([]int16, 5760)
	for _, p := range pkts {
		var n int
		var err error
		if p == nil {
			n, err = d.ConcealTo(buf, frame)
		} else {
			n, err = d.DecodeTo(buf, p)
		}
		require.NoError(t, err)
		require.Equal(t, frame, n)
		out = append(out, buf[:n]...)
	}
	return out
}

// TestRoundTrip encodes a tone and a voice-like signal and checks that the
// decoded audio matches the input after the codec delay: the encoder's
// 6.5 ms lookahead in VOIP mode. The delay is measured on the voice (a
// tone's correlation repeats every period) within a few samples, since the
// codec's phase response shifts the best match slightly; the tone is
// compared at the best lag within that window.
func TestRoundTrip(t *testing.T) {
	for _, rate := range []int{16000, 48000} {
		for _, sig := range []struct {
			name     string
			pcm      []int16
			minCorr  float64
			minSNRdB float64
		}{
			{"tone440", sine(440, 12000, rate, rate), 0.999, 25},
			{"voice", voice(rate, rate), 0.93, 8},
		} {
			t.Run(fmt.Sprintf("%dHz/%s", rate, sig.name), func(t *testing.T) {
				e, err := NewEncoder(EncoderConfig{SampleRate: rate, Bitrate: 32000})
				require.NoError(t, err)
				d, err := NewDecoder(rate, 1)
				require.NoError(t, err)
				out := decodeAll(t, d, encodeAll(t, e, sig.pcm))
				require.Len(t, out, len(sig.pcm))

				want := 13 * rate / 2000 // 6.5 ms
				slack := rate / 6000     // 0.17 ms
				lag, corr := bestLag(sig.pcm, out, want-slack, want+slack)
				start, n := len(out)/4, len(out)/2
				in, got := sig.pcm[start:start+n], out[start+lag:start+lag+n]
				snr := 10 * math.Log10(energy(in)/diffEnergy(in, got))
				t.Logf("delay %d samples (%.2f ms), correlation %.4f, SNR %.1f dB", lag, 1000*float64(lag)/float64(rate), corr, snr)
				if sig.name == "voice" {
					full, _ := bestLag(sig.pcm, out, 0, rate/50)
					require.InDelta(t, want, full, float64(slack), "6.5 ms lookahead")
				}
				require.Greater(t, corr, sig.minCorr)
				require.Greater(t, snr, sig.minSNRdB)
			})
		}
	}
}
