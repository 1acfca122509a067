package dsp

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// process runs in (a copy) through p frame by frame, feeding far (if not
// nil) one frame ahead of each near frame, and returns the output and the
// per-frame results.
func process(t testing.TB, p *Processor, in, far []int16) ([]int16, []Result) {
	t.Helper()
	out := append([]int16(nil), in...)
	n := len(out) / frameLen
	res := make([]Result, n)
	for f := range n {
		if far != nil {
			require.NoError(t, p.ProcessFar(far[f*frameLen:(f+1)*frameLen]))
		}
		r, err := p.ProcessNear(out[f*frameLen : (f+1)*frameLen])
		require.NoError(t, err)
		res[f] = r
	}
	return out, res
}

// energy is the sum of squares of x[a:b].
func energy(x []int16, a, b int) float64 {
	var s float64
	for _, v := range x[a:b] {
		s += float64(v) * float64(v)
	}
	return s
}

func TestNewErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg   Config
		field string
		err   error
	}{
		"rate 44100":        {Config{SampleRate: 44100}, "SampleRate", ErrSampleRate},
		"rate negative":     {Config{SampleRate: -8000}, "SampleRate", ErrSampleRate},
		"noise reduction":   {Config{NoiseReduction: 7}, "NoiseReduction", ErrConfig},
		"echo delay":        {Config{EchoCancellation: true, EchoDelay: 600 * time.Millisecond}, "EchoDelay", ErrConfig},
		"echo delay < 0":    {Config{EchoDelay: -time.Millisecond}, "EchoDelay", ErrConfig},
		"agc target":        {Config{AGC: true, AGCTargetLevel: 40}, "AGCTargetLevel", ErrConfig},
		"agc gain":          {Config{AGC: true, AGCMaxGain: 91}, "AGCMaxGain", ErrConfig},
		"vad likelihood":    {Config{VADLikelihood: 9}, "VADLikelihood", ErrConfig},
		"speech threshold":  {Config{SpeechThreshold: 1.5}, "SpeechThreshold", ErrConfig},
		"speech threshold0": {Config{SpeechThreshold: -0.1}, "SpeechThreshold", ErrConfig},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := New(tc.cfg)
			require.Nil(t, p)
			require.Error(t, err)
			require.True(t, errors.Is(err, tc.err), err)
			require.Contains(t, err.Error(), tc.field)
		})
	}
}

func TestProcessorRates(t *testing.T) {
	for _, rate := range []int{8000, 16000, 32000, 48000} {
		t.Run(fmtRate(rate), func(t *testing.T) {
			p, err := New(Config{SampleRate: rate, NoiseReduction: NearField, EchoCancellation: true,
				AGC: true, HighPass: true, APMVoiceDetection: true, EchoDelay: 60 * time.Millisecond})
			require.NoError(t, err)
			defer p.Close()
			n := rate / 50
			frame := make([]int16, n)
			require.NoError(t, p.ProcessFar(frame))
			_, err = p.ProcessNear(frame)
			require.NoError(t, err)
			// 10 ms and 30 ms frames are accepted too; 15 ms is not.
			_, err = p.ProcessNear(frame[:n/2])
			require.NoError(t, err)
			_, err = p.ProcessNear(make([]int16, 3*n/2))
			require.NoError(t, err)
			_, err = p.ProcessNear(frame[:3*n/4])
			require.ErrorIs(t, err, ErrFrameSize)
			require.ErrorIs(t, p.ProcessFar(frame[:1]), ErrFrameSize)
			_, err = p.ProcessNear(nil)
			require.ErrorIs(t, err, ErrFrameSize)
		})
	}
}

// fmtRate names a rate subtest.
func fmtRate(rate int) string {
	return map[int]string{8000: "8k", 16000: "16k", 32000: "32k", 48000: "48k"}[rate]
}

func TestProcessorClose(t *testing.T) {
	for _, cfg := range []Config{{}, {EchoCancellation: true}} {
		p, err := New(cfg)
		require.NoError(t, err)
		require.NoError(t, p.Close())
		require.NoError(t, p.Close())
		_, err = p.ProcessNear(make([]int16, frameLen))
		require.ErrorIs(t, err, ErrClosed)
		if cfg.EchoCancellation {
			require.ErrorIs(t, p.ProcessFar(make([]int16, frameLen)), ErrClosed)
		}
	}
}

// Close may come from another goroutine while frames are processed (a
// call ending while the pacer works): the frames after it get ErrClosed,
// and under -race neither side races, with or without an APM.
func TestProcessorCloseWhileProcessing(t *testing.T) {
	for _, cfg := range []Config{{}, {EchoCancellation: true}} {
		p, err := New(cfg)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			frame := make([]int16, frameLen)
			for {
				if _, err := p.ProcessNear(frame); err != nil {
					done <- err
					return
				}
			}
		}()
		time.Sleep(5 * time.Millisecond)
		require.NoError(t, p.Close())
		require.ErrorIs(t, <-done, ErrClosed)
	}
}

func TestProcessorDefaults(t *testing.T) {
	p, err := New(Config{})
	require.NoError(t, err)
	defer p.Close()
	c := p.Config()
	require.Equal(t, 16000, c.SampleRate)
	require.Equal(t, VADLow, c.VADLikelihood)
	require.Equal(t, float32(0.5), c.SpeechThreshold)
	require.Equal(t, 3, c.AGCTargetLevel)
	require.Equal(t, 20, c.AGCMaxGain)
	require.Error(t, p.SetEchoDelay(time.Second))
	require.NoError(t, p.SetEchoDelay(100*time.Millisecond))
}

// noisySpeech is vadSpeech in pink noise at the given SNR, with its truth.
func noisySpeech(t testing.TB, snr float64) (clean, in []int16, truth []bool) {
	sp := vadSpeech(t)
	noise := pinkishNoise(len(sp), activeRMS(sp)*math.Pow(10, -snr/20), 5)
	return sp, toInt16(mix(toFloat(sp), noise)), speechTruth(sp)
}

func TestProcessorVAD(t *testing.T) {
	// Speech decisions through the full processor, and the APM's own
	// detector alongside for comparison.
	_, in, truth := noisySpeech(t, 5)
	cr := care(truth)
	for _, ns := range []NoiseReduction{NoiseReductionOff, NearField, FarField} {
		t.Run(ns.String(), func(t *testing.T) {
			p, err := New(Config{NoiseReduction: ns, APMVoiceDetection: true})
			require.NoError(t, err)
			defer p.Close()
			_, res := process(t, p, in, nil)
			var ours, apm scorer
			for f, r := range res {
				if f >= 10 && cr[f] {
					ours.add(truth[f], r.Speech)
					apm.add(truth[f], r.APMVoice)
				}
			}
			t.Logf("pink noise 5 dB SNR, noise reduction %v: Speech %v; APM VAD %v", ns, ours, apm)
			require.GreaterOrEqual(t, ours.recall(), 0.9)
			require.LessOrEqual(t, ours.falseAlarm(), 0.05)
		})
	}
}

func TestNoiseSuppression(t *testing.T) {
	// Pink and white noise at 10 dB SNR under speech: measure the noise
	// power removed in the pauses (after 1 s to converge) and the change of
	// power in the speech frames.
	for _, nz := range []struct {
		name string
		gen  func(int, float64, uint64) []float64
	}{{"white", whiteNoise}, {"pink", pinkishNoise}} {
		t.Run(nz.name, func(t *testing.T) {
			sp := vadSpeech(t)
			truth := speechTruth(sp)
			cr := care(truth)
			in := toInt16(mix(toFloat(sp), nz.gen(len(sp), activeRMS(sp)*math.Pow(10, -10.0/20), 5)))
			reduction := map[NoiseReduction]float64{}
			for _, ns := range []NoiseReduction{NearField, FarField} {
				p, err := New(Config{NoiseReduction: ns})
				require.NoError(t, err)
				out, _ := process(t, p, in, nil)
				require.NoError(t, p.Close())
				var nIn, nOut, sIn, sOut float64
				for f := 50; f < len(truth); f++ {
					a, b := f*frameLen, (f+1)*frameLen
					switch {
					case !truth[f] && cr[f]:
						nIn += energy(in, a, b)
						nOut += energy(out, a, b)
					case truth[f]:
						sIn += energy(in, a, b)
						sOut += energy(out, a, b)
					}
				}
				reduction[ns] = 10 * math.Log10(nIn/nOut)
				speech := 10 * math.Log10(sOut/sIn)
				t.Logf("%s noise, %v: noise reduced %.1f dB, speech frames changed %.1f dB", nz.name, ns, reduction[ns], speech)
				require.Greater(t, speech, -3.0, "speech kept")
			}
			require.GreaterOrEqual(t, reduction[NearField], 8.0)
			require.GreaterOrEqual(t, reduction[FarField], reduction[NearField]+5)
		})
	}
}

// echoOf returns the echo of far: delayed by delay samples, through a short
// decaying room response, scaled by gain dB.
func echoOf(far []int16, delay int, gainDB float64) []float64 {
	taps := []float64{1, 0.5, -0.3, 0.2, 0.1}
	g := math.Pow(10, gainDB/20)
	out := make([]float64, len(far))
	for i := range out {
		var s float64
		for k, h := range taps {
			if j := i - delay - 8*k; j >= 0 {
				s += h * float64(far[j])
			}
		}
		out[i] = g * s
	}
	return out
}

func TestEchoCancellation(t *testing.T) {
	// The agent's utterance plays three times; its echo returns delayed by
	// the network and attenuated 10 dB through a short room response, over
	// a little line noise. The caller talks over the third (double talk).
	agent := loadWAV(t, "agent16k.wav")
	caller := loadWAV(t, "caller16k.wav")
	gap := 4000
	far := concat(agent, silence(gap), agent, silence(gap), agent, silence(20000))
	callerAt := 2*(len(agent)+gap) + 8000
	callerSig := make([]float64, len(far))
	for i, v := range caller {
		callerSig[callerAt+i] = float64(v) * 0.5
	}
	callerTruth := speechTruth(toInt16(callerSig))
	second := len(agent) + gap // start of the second utterance
	for _, tc := range []struct {
		name  string
		delay time.Duration // true echo delay
		hint  time.Duration // Config.EchoDelay
		ns    NoiseReduction
	}{
		{"40ms", 40 * time.Millisecond, 40 * time.Millisecond, NoiseReductionOff},
		{"120ms", 120 * time.Millisecond, 120 * time.Millisecond, NoiseReductionOff},
		{"120ms hint 40ms", 120 * time.Millisecond, 40 * time.Millisecond, NoiseReductionOff},
		{"300ms", 300 * time.Millisecond, 300 * time.Millisecond, NoiseReductionOff},
		{"450ms", 450 * time.Millisecond, 450 * time.Millisecond, NoiseReductionOff},
		{"120ms far_field", 120 * time.Millisecond, 120 * time.Millisecond, FarField},
	} {
		t.Run(tc.name, func(t *testing.T) {
			echo := echoOf(far, int(tc.delay/time.Millisecond)*16, -10)
			echoOnly := mix(echo, whiteNoise(len(far), 10, 3))
			near := toInt16(mix(echoOnly, callerSig))
			p, err := New(Config{EchoCancellation: true, EchoDelay: tc.hint, NoiseReduction: tc.ns})
			require.NoError(t, err)
			defer p.Close()
			out, res := process(t, p, near, far)

			// ERLE over the second utterance, which holds echo only.
			a, b := second, second+len(agent)
			erle := 10 * math.Log10(energy(near, a, b)/energy(out, a, b))
			// The caller's speech during double talk.
			dt := 10 * math.Log10(energy(out, callerAt, callerAt+len(caller))/
				energy(toInt16(callerSig), callerAt, callerAt+len(caller)))
			// Frames after the first second where only echo plays but
			// Speech is set: false barge-ins.
			falseSpeech, echoFrames, callerFound, callerFrames := 0, 0, 0, 0
			for f := 50; f < len(res); f++ {
				if callerTruth[f] {
					callerFrames++
					if res[f].Speech {
						callerFound++
					}
					continue
				}
				echoFrames++
				if res[f].Speech {
					falseSpeech++
				}
			}
			t.Logf("echo %v (hint %v, %v): ERLE %.1f dB; caller during double talk %.1f dB; "+
				"Speech on %d of %d echo-only frames, on %d of %d caller frames",
				tc.delay, tc.hint, tc.ns, erle, dt, falseSpeech, echoFrames, callerFound, callerFrames)
			require.GreaterOrEqual(t, erle, 15.0)
			require.Greater(t, dt, -8.0, "caller speech kept during double talk")
			require.GreaterOrEqual(t, float64(callerFound)/float64(callerFrames), 0.8, "caller found")
			require.LessOrEqual(t, float64(falseSpeech)/float64(echoFrames), 0.1, "residual echo taken for speech")
		})
	}
}

func TestEchoDelayMatters(t *testing.T) {
	// An echo delay hint 120 ms too long leaves the echo in place.
	agent := loadWAV(t, "agent16k.wav")
	far := concat(agent, agent)
	near := toInt16(mix(echoOf(far, 300*16, -10), whiteNoise(len(far), 10, 3)))
	p, err := New(Config{EchoCancellation: true, EchoDelay: 420 * time.Millisecond})
	require.NoError(t, err)
	defer p.Close()
	out, _ := process(t, p, near, far)
	erle := 10 * math.Log10(energy(near, len(agent), len(near))/energy(out, len(agent), len(out)))
	t.Logf("echo 300 ms, hint 420 ms: ERLE %.1f dB", erle)
	require.Less(t, erle, 10.0)
}

func TestEchoCancellationOff(t *testing.T) {
	// Without AEC, ProcessFar is accepted and ignored, and the echo passes.
	agent := loadWAV(t, "agent16k.wav")
	near := toInt16(echoOf(agent, 960, -10))
	p, err := New(Config{NoiseReduction: NearField})
	require.NoError(t, err)
	defer p.Close()
	out, _ := process(t, p, near, agent)
	erle := 10 * math.Log10(energy(near, 16000, len(near))/energy(out, 16000, len(out)))
	require.Less(t, erle, 3.0)
}

func TestAGC(t *testing.T) {
	// Speech at about -41 dBFS over a -80 dBFS floor; the AGC brings it up.
	sp := concat(loadWAV(t, "caller16k.wav"), loadWAV(t, "agent16k.wav"), loadWAV(t, "caller16k.wav"), loadWAV(t, "agent16k.wav"))
	q := toFloat(sp)
	for i := range q {
		q[i] *= 0.1
	}
	in := toInt16(mix(q, whiteNoise(len(q), 3, 1)))
	p, err := New(Config{AGC: true})
	require.NoError(t, err)
	defer p.Close()
	out, _ := process(t, p, in, nil)
	half := len(in) / 2
	gain := 10 * math.Log10(energy(out, half, len(out))/energy(in, half, len(in)))
	peak := 0
	for _, v := range out {
		peak = max(peak, int(v), -int(v))
	}
	t.Logf("AGC: input %.1f dBFS, gain %.1f dB, output peak %d", 20*math.Log10(rms16(in[half:])/32768), gain, peak)
	require.GreaterOrEqual(t, gain, 10.0)
	require.Less(t, peak, 32767, "limiter keeps it from clipping")
}

func TestProcessorConcurrentFarNear(t *testing.T) {
	// Send and receive paths on two goroutines; run with -race.
	p, err := New(Config{EchoCancellation: true, NoiseReduction: NearField, EchoDelay: 80 * time.Millisecond})
	require.NoError(t, err)
	defer p.Close()
	far := toInt16(whiteNoise(100*frameLen, 2000, 1))
	near := toInt16(whiteNoise(100*frameLen, 500, 2))
	var wg sync.WaitGroup
	wg.Go(func() {
		for f := range 100 {
			if err := p.ProcessFar(far[f*frameLen : (f+1)*frameLen]); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() {
		for f := range 100 {
			if _, err := p.ProcessNear(near[f*frameLen : (f+1)*frameLen]); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
}

func TestProcessorZeroAlloc(t *testing.T) {
	for name, cfg := range benchConfigs {
		t.Run(name, func(t *testing.T) {
			p, err := New(cfg)
			require.NoError(t, err)
			defer p.Close()
			n := p.Config().SampleRate / 50
			far := toInt16(whiteNoise(n, 2000, 1))
			near := toInt16(whiteNoise(n, 500, 2))
			allocs := testing.AllocsPerRun(100, func() {
				if err := p.ProcessFar(far); err != nil {
					t.Fatal(err)
				}
				if _, err := p.ProcessNear(near); err != nil {
					t.Fatal(err)
				}
			})
			require.Zero(t, allocs)
		})
	}
}

// benchConfigs are the configurations benchmarked per 20 ms frame.
var benchConfigs = map[string]Config{
	"VAD":      {},
	"APMVAD":   {APMVoiceDetection: true},
	"NS":       {NoiseReduction: NearField},
	"NSFar":    {NoiseReduction: FarField},
	"AEC+NS":   {EchoCancellation: true, NoiseReduction: NearField, EchoDelay: 100 * time.Millisecond},
	"Full":     {EchoCancellation: true, NoiseReduction: FarField, EchoDelay: 100 * time.Millisecond, AGC: true, HighPass: true, APMVoiceDetection: true},
	"Full48k":  {SampleRate: 48000, EchoCancellation: true, NoiseReduction: FarField, EchoDelay: 100 * time.Millisecond, AGC: true, HighPass: true},
	"AEC+NS8k": {SampleRate: 8000, EchoCancellation: true, NoiseReduction: NearField, EchoDelay: 100 * time.Millisecond},
}

// benchSignals returns a second of far (the agent) and near (its echo, the
// caller and line noise) audio at rate, from the 16 kHz test clips (sample
// repetition or dropping for other rates: crude, but the cost is what is
// measured here).
func benchSignals(b *testing.B, rate int) (far, near []int16) {
	agent := loadWAV(b, "agent16k.wav")[:16000]
	caller := loadWAV(b, "caller16k.wav")[:16000]
	n16 := toInt16(mix(mix(echoOf(agent, 1600, -10), toFloat(caller)), whiteNoise(16000, 100, 1)))
	conv := func(x []int16) []int16 {
		out := make([]int16, rate)
		for i := range out {
			out[i] = x[i*16000/rate]
		}
		return out
	}
	return conv(agent), conv(n16)
}

func BenchmarkDSPProcessor(b *testing.B) {
	for _, name := range []string{"VAD", "APMVAD", "NS", "NSFar", "AEC+NS", "Full", "AEC+NS8k", "Full48k"} {
		cfg := benchConfigs[name]
		b.Run(name, func(b *testing.B) {
			p, err := New(cfg)
			require.NoError(b, err)
			defer p.Close()
			rate := p.Config().SampleRate
			n := rate / 50
			far, near := benchSignals(b, rate)
			frame := make([]int16, n)
			b.ReportAllocs()
			off := 0
			for b.Loop() {
				if err := p.ProcessFar(far[off : off+n]); err != nil {
					b.Fatal(err)
				}
				copy(frame, near[off:off+n])
				if _, err := p.ProcessNear(frame); err != nil {
					b.Fatal(err)
				}
				if off += n; off == len(near) {
					off = 0
				}
			}
		})
	}
}
