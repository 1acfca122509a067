package amd_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/codecs/g711"
	"github.com/voiced/voiced/media/amd"
	"github.com/voiced/voiced/media/amd/amdtest"
)

// TestAccuracy runs a matrix of espeak-ng answers through the detector
// at 8 kHz after G.711 (as a PCMU call arrives) and at 16 kHz, over
// lines with white noise at -65 to -25 dBFS (speech and beeps are about
// -15 dBFS), and reports how many it gets right and how long
// each verdict takes. Persons say a short greeting and wait; machines
// play a greeting, then beep (a different tone for each voice).
func TestAccuracy(t *testing.T) {
	humans := []string{"Hello?", "Yes?", "Hello, who is this?", "Hi, this is Mary.", "Speaking.", "Good morning."}
	machines := []string{amdtest.Greeting,
		"You have reached the Smith family. We cannot come to the phone right now, so please leave a message.",
		"The person you are calling is not available. At the tone, please record your message."}
	voices := []string{"", "en+f3", "en-us+m3"}
	beeps := []float64{1000, 850, 1400}
	type key struct {
		rate  int
		noise float64
	}
	// espeak-ng speaks each text once per voice and rate.
	type said struct {
		text, voice string
		rate        int
	}
	cache := map[said][]int16{}
	speech := func(text, voice string, rate int) []int16 {
		k := said{text, voice, rate}
		if cache[k] == nil {
			cache[k] = amdtest.Speech(t, text, voice, rate)
		}
		return cache[k]
	}
	var humanMS, machineMS []int
	right, total := 0, 0
	wrong := []string{}
	for _, k := range []key{{16000, -65}, {16000, -45}, {8000, -65}, {8000, -45}, {16000, -30}, {8000, -30}, {16000, -25}} {
		prep := func(pcm []int16) []int16 {
			pcm = amdtest.AddNoise(pcm, k.noise, 5)
			if k.rate == 8000 {
				b := make([]byte, len(pcm))
				g711.EncodeULawTo(b, pcm)
				g711.DecodeULawTo(pcm, b)
			}
			return pcm
		}
		for vi, v := range voices {
			for _, h := range humans {
				o := run(t, amd.Config{SampleRate: k.rate}, prep(amdtest.Concat(amdtest.Silence(pad, k.rate), speech(h, v, k.rate),
					amdtest.Silence(4*time.Second, k.rate))))
				total++
				if o.result == amd.Human {
					right++
					humanMS = append(humanMS, int(o.finalAt.Milliseconds()))
				} else {
					wrong = append(wrong, fmt.Sprintf("%d Hz %v dB %q %q: %v", k.rate, k.noise, v, h, o.result))
				}
			}
			for _, m := range machines {
				o := run(t, amd.Config{SampleRate: k.rate}, prep(amdtest.Concat(amdtest.Silence(pad, k.rate), speech(m, v, k.rate),
					amdtest.Silence(500*time.Millisecond, k.rate), amdtest.Tone(beeps[vi], 300*time.Millisecond, -14, k.rate),
					amdtest.Silence(3*time.Second, k.rate))))
				total++
				if o.first == amd.Machine && o.result == amd.Beep {
					right++
					machineMS = append(machineMS, int(o.machineAt.Milliseconds()))
				} else {
					wrong = append(wrong, fmt.Sprintf("%d Hz %v dB %q %.20q: first %v, then %v", k.rate, k.noise, v, m, o.first, o.result))
				}
			}
		}
	}
	pct := func(ms []int, p float64) int {
		if len(ms) == 0 {
			return 0
		}
		sort.Ints(ms)
		return ms[min(len(ms)-1, int(p*float64(len(ms))))]
	}
	t.Logf("accuracy %d/%d; human verdict after the answer: median %d ms, max %d ms; machine verdict: median %d ms, max %d ms",
		right, total, pct(humanMS, 0.5), pct(humanMS, 1), pct(machineMS, 0.5), pct(machineMS, 1))
	for _, w := range wrong {
		t.Logf("wrong: %s", w)
	}
	require.GreaterOrEqual(t, right*100, total*95, "at least 95%% right")
}
