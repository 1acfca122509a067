package sim

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
