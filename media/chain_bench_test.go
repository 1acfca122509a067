package media_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/codecs/resample"
	"github.com/voiced/voiced/media/dsp"
)

// The two per-frame media chains of DESIGN.md section 3 at their cheapest
// (telephony, G.711), measured per 20 ms frame. The goal for each is under
// 5 µs per frame, so a core can carry thousands of calls' codec work.

// chainAudio is one second of a voice-like signal at rate: a 140 Hz
// harmonic series with falling amplitudes, syllable-rate (4 Hz) amplitude
// modulation and a little noise.
func chainAudio(rate int) []int16 {
	rng := rand.New(rand.NewPCG(3, 4))
	s := make([]int16, rate)
	for i := range s {
		t := float64(i) / float64(rate)
		v := 0.0
		for h := 1; float64(h)*140 < float64(rate)/2 && h < 25; h++ {
			v += math.Sin(2*math.Pi*140*float64(h)*t) / float64(h)
		}
		env := 0.55 + 0.45*math.Sin(2*math.Pi*4*t)
		s[i] = int16(3000*v*env + 100*rng.NormFloat64())
	}
	return s
}

// inbound is the receive chain of one call: PCMU payload -> PCM16 8 kHz ->
// 16 kHz -> speech decision.
type inbound struct {
	rs     *resample.Resampler
	vad    *dsp.VAD       // the light VAD, or nil
	proc   *dsp.Processor // the full processor, or nil
	pcm8   []int16
	pcm16  []int16
	speech int
}

// newInbound builds the chain with the light VAD, or with a dsp.Processor
// configured by cfg when cfg is not nil.
func newInbound(t testing.TB, q resample.Quality, cfg *dsp.Config) *inbound {
	rs, err := resample.New(8000, 16000, q)
	require.NoError(t, err)
	c := &inbound{rs: rs, pcm8: make([]int16, 160), pcm16: make([]int16, 320)}
	if cfg != nil {
		c.proc, err = dsp.New(*cfg)
	} else {
		c.vad, err = dsp.NewVAD(dsp.VADConfig{})
	}
	require.NoError(t, err)
	return c
}

// close releases the chain's C and filter state.
func (c *inbound) close() {
	c.rs.Close()
	if c.proc != nil {
		c.proc.Close()
	}
}

// frame runs one 160-byte PCMU payload through the chain and returns the
// number of 16 kHz samples produced.
func (c *inbound) frame(payload []byte) (int, error) {
	g711.DecodeULawTo(c.pcm8, payload)
	n, err := c.rs.ProcessTo(c.pcm16, c.pcm8)
	if err != nil {
		return 0, err
	}
	var speech bool
	if c.proc != nil {
		r, err := c.proc.ProcessNear(c.pcm16[:n])
		if err != nil {
			return 0, err
		}
		speech = r.Speech
	} else {
		speech = c.vad.Process(c.pcm16[:n]).Speech
	}
	if speech {
		c.speech++
	}
	return n, nil
}

// outbound is the send chain of one call: 24 kHz TTS PCM -> 8 kHz -> PCMU.
type outbound struct {
	rs      *resample.Resampler
	pcm8    []int16
	payload []byte
}

// newOutbound builds the send chain.
func newOutbound(t testing.TB, q resample.Quality) *outbound {
	rs, err := resample.New(24000, 8000, q)
	require.NoError(t, err)
	return &outbound{rs: rs, pcm8: make([]int16, 160), payload: make([]byte, 160)}
}

// frame converts 480 TTS samples into a 160-byte PCMU payload, returning
// the payload length.
func (c *outbound) frame(tts []int16) (int, error) {
	n, err := c.rs.ProcessTo(c.pcm8, tts)
	if err != nil {
		return 0, err
	}
	return g711.EncodeULawTo(c.payload, c.pcm8[:n]), nil
}

// pcmuFrames is chainAudio at 8 kHz as 50 PCMU payloads of 20 ms.
func pcmuFrames() [][]byte {
	pcm := chainAudio(8000)
	out := make([][]byte, 50)
	for i := range out {
		out[i] = make([]byte, 160)
		g711.EncodeULawTo(out[i], pcm[i*160:(i+1)*160])
	}
	return out
}

// inboundConfigs are the speech detectors measured in the inbound chain:
// the light VAD alone, and the dsp.Processor with the APM's voice detector
// and with noise suppression (both also run the light VAD on their output).
var inboundConfigs = []struct {
	name string
	cfg  *dsp.Config
}{
	{"LightVAD", nil},
	{"APMVAD", &dsp.Config{APMVoiceDetection: true}},
	{"NearFieldNS", &dsp.Config{NoiseReduction: dsp.NearField}},
}

// qualities are the resampler settings measured: QualityLow passes 3.2 kHz
// at 8 kHz with 60 dB rejection, enough for G.711's 3.4 kHz band and ~38 dB
// SNR, at about a third of QualityHigh's cost.
var qualities = []resample.Quality{resample.QualityHigh, resample.QualityLow}

func TestChainInbound(t *testing.T) {
	for _, tc := range inboundConfigs {
		t.Run(tc.name, func(t *testing.T) {
			c := newInbound(t, resample.QualityLow, tc.cfg)
			defer c.close()
			// Half a second of line noise, then the voiced signal: no
			// speech in the noise, speech in most of the voice.
			noise := make([]byte, 160)
			rng := rand.New(rand.NewPCG(5, 6))
			for range 25 {
				for i := range noise {
					noise[i] = g711.EncodeULaw(int16(30 * rng.NormFloat64()))
				}
				n, err := c.frame(noise)
				require.NoError(t, err)
				require.Equal(t, 320, n)
			}
			require.Zero(t, c.speech, "speech frames in line noise")
			frames := pcmuFrames()
			for _, p := range frames {
				n, err := c.frame(p)
				require.NoError(t, err)
				require.Equal(t, 320, n)
			}
			t.Logf("%d of %d voiced frames detected as speech", c.speech, len(frames))
			require.GreaterOrEqual(t, c.speech, 40, "voiced frames detected as speech")
			i := 0
			allocs := testing.AllocsPerRun(200, func() {
				if _, err := c.frame(frames[i%len(frames)]); err != nil {
					t.Fatal(err)
				}
				i++
			})
			require.Zero(t, allocs)
		})
	}
}

func TestChainOutbound(t *testing.T) {
	c := newOutbound(t, resample.QualityLow)
	defer c.rs.Close()
	tts := chainAudio(24000)
	var energy float64
	for f := range 50 {
		n, err := c.frame(tts[f*480 : (f+1)*480])
		require.NoError(t, err)
		require.Equal(t, 160, n)
		for _, b := range c.payload {
			v := float64(g711.DecodeULaw(b))
			energy += v * v
		}
	}
	// The payloads carry the signal (about -20 dBFS), not silence.
	require.Greater(t, math.Sqrt(energy/(50*160)), 1000.0)
	f := 0
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.frame(tts[f*480 : (f+1)*480]); err != nil {
			t.Fatal(err)
		}
		f = (f + 1) % 50
	})
	require.Zero(t, allocs)
}

func BenchmarkChainInbound(b *testing.B) {
	for _, q := range qualities {
		for _, tc := range inboundConfigs {
			b.Run(q.String()+"/"+tc.name, func(b *testing.B) {
				c := newInbound(b, q, tc.cfg)
				defer c.close()
				frames := pcmuFrames()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := c.frame(frames[i]); err != nil {
						b.Fatal(err)
					}
					if i++; i == len(frames) {
						i = 0
					}
				}
			})
		}
	}
}

func BenchmarkChainOutbound(b *testing.B) {
	for _, q := range qualities {
		b.Run(q.String(), func(b *testing.B) {
			c := newOutbound(b, q)
			defer c.rs.Close()
			tts := chainAudio(24000)
			b.ReportAllocs()
			f := 0
			for b.Loop() {
				if _, err := c.frame(tts[f*480 : (f+1)*480]); err != nil {
					b.Fatal(err)
				}
				if f++; f == 50 {
					f = 0
				}
			}
		})
	}
}
