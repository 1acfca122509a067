package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/tts/espeak"
	"github.com/voiced/voiced/media/dtmf"
	"github.com/voiced/voiced/sip/siptest"
)

// Each noise asset is reproducible (the same samples every time), at
// RMS 1, different from the others, and has its character: car is
// low-frequency (most energy below 300 Hz), the others are not.
func TestAssets(t *testing.T) {
	seen := map[float64]string{}
	for _, name := range Assets {
		a, err := Asset(name, 8000)
		require.NoError(t, err)
		require.Len(t, a, assetSeconds*8000)
		var p float64
		for _, v := range a {
			p += v * v
		}
		require.InDelta(t, 1, p/float64(len(a)), 1e-9, name)
		assetMu.Lock()
		delete(assetCache, [2]any{name, 8000})
		assetMu.Unlock()
		b, err := Asset(name, 8000)
		require.NoError(t, err)
		require.Equal(t, a, b, "%s is generated the same every time", name)
		_, dup := seen[a[1000]]
		require.False(t, dup, "%s differs from %v", name, seen)
		seen[a[1000]] = name
		// The share of power below 300 Hz: a one-pole low-pass at 300 Hz.
		lp := newOnePole(300, 8000)
		var low float64
		for _, v := range a {
			y := lp.step(v)
			low += y * y
		}
		share := low / p
		t.Logf("%s: %.0f%% of the power below ~300 Hz", name, share*100)
		if name == "car" {
			require.Greater(t, share, 0.5)
		}
	}
	_, err := Asset("jungle", 8000)
	require.Error(t, err)
}

// The bot sends its speech at SpeechDBFS and the noise SNRDB below it,
// exactly, measured on what ReadFrame produced.
func TestBotMixesAtSNR(t *testing.T) {
	for _, snr := range []float64{0, 5, 10, 20} {
		b, err := newBot(Config{Scenario: Scenario{NoiseAsset: "cafe", SNRDB: snr}, KeepAudio: true}, 8000)
		require.NoError(t, err)
		// A clean "utterance": a 300 Hz tone at -20 dBFS RMS for 2 s.
		speech := make([]int16, 16000)
		for i := range speech {
			speech[i] = int16(math.Sqrt2 * 3277 * math.Sin(2*math.Pi*300*float64(i)/8000))
		}
		speech = level(speech, 160)
		b.say(speech)
		frame := make([]int16, 160)
		for range 400 + 200 { // 8 s of noise after the speech: one whole loop
			require.True(t, b.ReadFrame(frame))
		}
		var pn float64
		for _, v := range b.sent[16000 : 16000+64000] {
			pn += float64(v) * float64(v)
		}
		pn /= 64000
		ps, n := activePower(speech, 160)
		require.Equal(t, 100, n)
		require.InDelta(t, SpeechDBFS, 10*math.Log10(ps/(32768*32768)), 0.01)
		require.InDelta(t, snr, 10*math.Log10(ps/pn), 0.05, "SNR %v", snr)
		require.Equal(t, 100, countTrue(b.speech))
	}
}

func countTrue(b []bool) (n int) {
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func TestVoiceFor(t *testing.T) {
	for accent, want := range map[string]string{"": "en-us", "default": "en-us", "en-US": "en-us", "en-GB": "en-gb", "es-MX": "es-419",
		"en-IN": "en-gb", "en-AU": "en-gb", "fr-CA": "fr-fr"} {
		v := VoiceFor(accent)
		require.Equal(t, want, v.Voice, accent)
		mapped := accent == "en-IN" || accent == "en-AU" || accent == "fr-CA"
		require.Equal(t, mapped, v.Mapped, accent)
		require.Equal(t, mapped, v.Note != "", accent)
	}
	require.Less(t, Speed("slow"), 1.0)
	require.Greater(t, Speed("fast"), 1.0)
	require.Equal(t, 1.0, Speed("natural"))
}

// A light caller hesitates: fillers and repeats are added, the original
// words stay in order, and a seed gives the same text again.
func TestDisfluent(t *testing.T) {
	text := "I would like to move my appointment to Thursday afternoon please"
	a := Disfluent(text, rand.New(rand.NewPCG(1, 2)))
	require.Equal(t, a, Disfluent(text, rand.New(rand.NewPCG(1, 2))))
	require.Greater(t, len(strings.Fields(a)), len(strings.Fields(text)))
	require.True(t, strings.HasPrefix(a, strings.Split(a, " ")[0]) && isFiller(strings.Fields(a)[0]+" "+strings.Fields(a)[1]), a)
	rest := a
	for _, w := range strings.Fields(text) {
		i := strings.Index(rest, w)
		require.GreaterOrEqual(t, i, 0, "%q keeps %q in order", a, w)
		rest = rest[i+len(w):]
	}
}

func isFiller(s string) bool {
	for _, f := range fillers {
		if strings.HasPrefix(s, f) {
			return true
		}
	}
	return false
}

// In-band DTMF: each digit is its two Q.23 tones, 100 ms, then 60 ms quiet.
func TestInband(t *testing.T) {
	pcm := inband("1#", 8000)
	require.Len(t, pcm, 2*(800+480))
	goertzel := func(x []int16, f float64) float64 {
		w := 2 * math.Cos(2*math.Pi*f/8000)
		var s1, s2 float64
		for _, v := range x {
			s1, s2 = float64(v)+w*s1-s2, s1
		}
		return s1*s1 + s2*s2 - w*s1*s2
	}
	one := pcm[:800]
	require.Greater(t, goertzel(one, 697), 100*goertzel(one, 941))
	require.Greater(t, goertzel(one, 1209), 100*goertzel(one, 1477))
	hash := pcm[1280 : 1280+800]
	require.Greater(t, goertzel(hash, 941), 100*goertzel(hash, 697))
	require.Greater(t, goertzel(hash, 1477), 100*goertzel(hash, 1209))
}

// keysIn runs pcm (at rate) through the agent's in-band DTMF detector
// (media/dtmf) in 20 ms frames and returns the keys it recognised.
func keysIn(t *testing.T, pcm []int16, rate int) string {
	t.Helper()
	d, err := dtmf.New(rate)
	require.NoError(t, err)
	var keys strings.Builder
	f := d.FrameSamples()
	for i := 0; i+f <= len(pcm); i += f {
		if k := d.Process(pcm[i : i+f]); k != 0 {
			keys.WriteRune(k)
		}
	}
	return keys.String()
}

// botSends is everything a bot with sc's noise sends while it says each
// of pcms in turn, with a second of noise between them.
func botSends(t *testing.T, sc Scenario, rate int, pcms ...[]int16) []int16 {
	t.Helper()
	b, err := newBot(Config{Scenario: sc, KeepAudio: true}, rate)
	require.NoError(t, err)
	frame := make([]int16, rate/50)
	for _, p := range pcms {
		done := b.say(p)
		for sent := false; !sent; {
			b.ReadFrame(frame)
			select {
			case <-done:
				sent = true
			default:
			}
		}
		for range 50 {
			b.ReadFrame(frame)
		}
	}
	return b.sent
}

// TestInbandKeysAgainstSpeechAndNoise: the simulated caller's in-band
// keys are what the agent's detector recognises, every key of the pad,
// at 16 kHz (the realtime WebSocket) and 8 kHz, clean and under each
// noise asset at 10 and 5 dB SNR (the tests' street is at 5); and its speech (espeak-ng, in every
// accent's voice and pace, counting digits aloud included), alone and
// in each noise asset at 10, 5 and 0 dB, makes no key: no talk-off.
func TestInbandKeysAgainstSpeechAndNoise(t *testing.T) {
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	voice, err := espeak.New(espeak.Config{})
	require.NoError(t, err)
	defer voice.Close()
	lines := []string{
		"Hello, I would like to book a table for two tonight, at seven if you can.",
		"One two three four five six seven eight nine zero, star, pound. My number is 415 555 0100.",
		"Hmm, well, uh, could you tell me whether you have parking nearby? Thank you, goodbye!",
		"Ooooh, aaaah, eeeee, mmmmm, la la la la laaaa.",
	}
	const all = "123A456B789C*0#D"
	for _, rate := range []int{16000, 8000} {
		var speech [][]int16
		for _, accent := range []string{"en-US", "en-GB", "es-MX", "fr-CA"} {
			for _, pace := range []string{"natural", "slow", "fast"} {
				for _, line := range lines {
					pcm, err := synthesize(context.Background(), voice, VoiceFor(accent), Speed(pace), line, rate)
					require.NoError(t, err)
					speech = append(speech, pcm)
				}
			}
		}
		var n int
		for _, s := range speech {
			n += len(s)
		}
		t.Logf("%d Hz: %.0f s of speech", rate, float64(n)/float64(rate))
		require.Empty(t, keysIn(t, botSends(t, Scenario{}, rate, speech...), rate), "clean speech at %d Hz", rate)
		require.Equal(t, all, keysIn(t, botSends(t, Scenario{}, rate, inband(all, rate)), rate), "clean keys at %d Hz", rate)
		for _, asset := range Assets {
			for _, snr := range []float64{10, 5, 0} {
				sc := Scenario{NoiseAsset: asset, SNRDB: snr}
				require.Empty(t, keysIn(t, botSends(t, sc, rate, speech[:12]...), rate), "speech in %s at %v dB, %d Hz", asset, snr, rate)
				keys := keysIn(t, botSends(t, sc, rate, inband(all, rate)), rate)
				if snr < 5 {
					// Past the tests' conditions: the keys' tones are
					// then only 4 dB over the noise; say how many passed.
					t.Logf("keys in %s at %v dB, %d Hz: %q", asset, snr, rate, keys)
					continue
				}
				require.Equal(t, all, keys, "keys in %s at %v dB, %d Hz", asset, snr, rate)
			}
		}
	}
}
