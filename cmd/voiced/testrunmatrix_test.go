package main

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/sip/siptest"
)

// TestTestRunMatrixEndToEnd is issue 29's end-to-end test: two scenarios
// (each with a DTMF sequence) x two audio conditions (none; street at
// 5 dB) x two accents (en-US, en-GB), executed as one test run over
// telephony and one over the web (the realtime WebSocket): 16 real calls
// to the agent by the simulated caller, staggered and overlapping. For
// every run:
//   - it made a real call (its own call id, a simulation call with a
//     duration and a recording);
//   - the caller channel of the call's recording holds the mixed noise at
//     the requested SNR, measured from the recording within 2 dB (for
//     "none": no noise, the pauses are digital silence);
//   - the agent received the scenario's DTMF sequence as DTMF in the
//     call's history: RFC 4733 events on telephony, in-band tones heard
//     by the engine's detector on the web;
//   - it has a verdict and a grade.
func TestTestRunMatrixEndToEnd(t *testing.T) {
	siptest.Binary(t, "espeak-ng", "espeak-ng")
	t0 := time.Now()
	sv, ag, num := startSimulationServe(t)
	scenarios := map[string]string{} // id → DTMF sequence
	for _, sc := range []struct{ title, prompt, keys string }{
		{"Book a table", "You want a table for two tonight; the menu asks for your booking code.", "12#"},
		{"Opening hours", "You want to know when the shop opens; the menu asks for your branch.", "9*0"},
	} {
		st, s := sv.call("POST", fmt.Sprintf("/v1/agents/%d/test-scenarios", objID(ag)), fmt.Sprintf(
			`{"title":%q,"scenario_prompt":%q,"caller_behavior":{"dtmf_sequence":%q}}`, sc.title, sc.prompt, sc.keys))
		require.Equal(t, 201, st, "%v", s)
		scenarios[fmt.Sprint(s["id"])] = sc.keys
	}
	const matrix = `"matrix":{"audio_conditions":[{"noise_asset":"none"},{"noise_asset":"street","snr_db":5}],
		"speech_style":[{"accent":"en-US"},{"accent":"en-GB"}]},"stagger_seconds":1,"consent_to_charge":true`
	runs := map[string]map[string]any{}
	for _, body := range map[string]string{
		"telephony": fmt.Sprintf(`{"channel":"telephony","phone_number_id":%d,%s}`, objID(num), matrix),
		"web":       `{"channel":"web",` + matrix + `}`,
	} {
		st, tr := sv.call("POST", fmt.Sprintf("/v1/agents/%d/test-runs/execute", objID(ag)), body)
		require.Equal(t, 201, st, "%v", tr)
		require.Equal(t, float64(8), tr["total_count"], "2 scenarios x 2 conditions x 2 accents")
		runs[tr["channel"].(string)] = tr
	}
	require.Len(t, runs, 2)

	done := map[string]map[string]any{}
	require.Eventually(t, func() bool {
		for ch, tr := range runs {
			_, d := sv.call("GET", fmt.Sprintf("/v1/agents/%d/test-runs/%d", objID(ag), objID(tr)), "")
			if d["status"] != "completed" {
				return false
			}
			done[ch] = d
		}
		return true
	}, 300*time.Second, time.Second, "both test runs end")
	t.Logf("16 calls made, graded and judged %.0f s after the server started", time.Since(t0).Seconds())

	sims := map[any]map[string]any{}
	for _, r := range listOf(t, sv, "/v1/simulations?limit=50") {
		sims[r["id"]] = r
	}
	calls := map[any]bool{}
	passed := map[string]int{}
	for _, ch := range []string{"telephony", "web"} {
		d := done[ch]
		items := d["runs"].([]any)
		require.Len(t, items, 8)
		combos := map[string]bool{}
		for i, it := range items {
			item := it.(map[string]any)
			caller := item["caller"].(map[string]any)
			name := fmt.Sprintf("%s/%d %v/%v/%v", ch, i, caller["accent"], caller["noise_asset"], caller["dtmf_sequence"])
			combos[fmt.Sprint(item["scenario_id"], caller["accent"], caller["noise_asset"], caller["snr_db"])] = true
			keys := scenarios[fmt.Sprint(item["scenario_id"])]
			require.Equal(t, keys, caller["dtmf_sequence"], name)
			sim := sims[item["simulation_id"]]
			require.NotNil(t, sim, "%s is a simulation run", name)
			require.Equal(t, "completed", sim["status"], "%s: %v", name, sim)
			// A real call, judged and graded.
			require.NotNil(t, sim["call_id"], name)
			require.Equal(t, sim["call_id"], item["call_id"], name)
			require.False(t, calls[sim["call_id"]], "%s: a call of its own", name)
			calls[sim["call_id"]] = true
			// The verdict comes from the grade: the scripted judge calls
			// every conversation a success, but a call in which the agent
			// and caller never exchanged a turn (a 2-core machine shared
			// with other builds can starve one) is graded no_conversation
			// and fails; either is a verdict. unknown (no grade) is not.
			require.Contains(t, []any{"pass", "fail"}, item["verdict"], "%s: %v", name, item)
			if item["verdict"] == "pass" {
				require.Equal(t, "success", item["call_outcome"], name)
				require.NotNil(t, item["score"], name)
				passed[ch]++
			} else {
				t.Logf("%s: verdict fail, outcome %v; transcript %v", name, item["call_outcome"], sim["transcript"])
				require.NotNil(t, item["call_outcome"], name)
			}
			grade, _ := sim["grade"].(map[string]any)
			require.Equal(t, "completed", grade["status"], "%s: %v", name, sim["grade"])
			meta := sim["metadata"].(map[string]any)
			require.Equal(t, ch, meta["channel"], name)
			require.Contains(t, fmt.Sprint(meta["caller_voice"]), caller["accent"], name)
			require.Equal(t, keys, meta["dtmf"], name)
			require.Equal(t, map[string]string{"telephony": "rfc4733", "web": "inband"}[ch], meta["dtmf_via"], name)
			_, c := sv.call("GET", fmt.Sprintf("/v1/calls/%v", sim["call_id"]), "")
			require.Equal(t, true, c["is_simulation"], "%s: %v", name, c)
			require.Greater(t, c["duration_seconds"].(float64), 0.0, name)

			// The agent got the keys as DTMF.
			require.Equal(t, keys, historyDigits(t, sv, int64(sim["call_id"].(float64))), "%s: the agent received the keys as DTMF", name)

			// The noise, measured from the recording.
			snr, noise, quiet, median := spanSNR(t, sv, c, meta)
			if caller["noise_asset"] == "street" {
				require.GreaterOrEqual(t, quiet, 100, "%s: at least 2 s of noise alone, across its swells", name)
				t.Logf("%s: requested 5 dB SNR, measured %.2f dB from the recording (noise at %.1f dBFS)", name, snr, noise)
				require.InDelta(t, 5, snr, 2, name)
			} else {
				// No noise bed: most of the caller's channel is digital
				// silence (the caller speaks well under half the call; a
				// noise asset would fill every frame at -35 dBFS or more).
				// This needs no alignment, which a starved machine's jitter
				// can upset.
				t.Logf("%s: no noise requested; median frame %.1f dBFS, aligned pauses %.1f dBFS (%d frames), speech %.1f dB above them", name, median, noise, quiet, snr)
				require.Less(t, median, -70.0, "%s: no noise in the recording", name)
			}
		}
		require.Len(t, combos, 8, "%s: every combination ran once", ch)
		require.Equal(t, float64(passed[ch]), d["pass_count"], ch)
		require.Equal(t, float64(8-passed[ch]), d["fail_count"], ch)
		require.Equal(t, map[bool]string{true: "pass", false: "fail"}[passed[ch] == 8], d["verdict"], ch)
		t.Logf("%s: %d of 8 runs passed", ch, passed[ch])
	}
	require.Len(t, calls, 16)
	sv.stop(t)
}

// spanSNR measures the SNR of the caller channel of call c's recording
// from the spans the simulated caller reports in its run's metadata
// (caller_speech_ms, caller_tone_ms: when it sent speech and keys'
// tones, from its first frame). The spans are aligned on the recording
// by the contrast of its frames' amplitude inside and outside them, each
// utterance again within 500 ms (a jitter buffer's delay may move, and a
// telephony caller's audio pauses while RFC 4733 events go out); then
// speech power is the mean over the utterances' inner frames, noise
// power the mean over frames at least 100 ms from any speech or tone
// while the caller was on. It returns the SNR, the noise's dBFS and how
// many frames the noise was measured on, and the median frame's dBFS
// (alignment-free).
func spanSNR(t *testing.T, sv *served, c map[string]any, meta map[string]any) (snr, noiseDBFS float64, noiseFrames int, medianDBFS float64) {
	t.Helper()
	rec := callerFramePower(t, sv, c)
	flags := func(key string) []bool {
		var out []bool
		spans, _ := meta[key].([]any)
		for _, s := range spans {
			sp := s.([]any)
			from, to := int(sp[0].(float64))/20, int(sp[1].(float64))/20
			for len(out) < to {
				out = append(out, false)
			}
			for i := from; i < to; i++ {
				out[i] = true
			}
		}
		return out
	}
	speech, tone := flags("caller_speech_ms"), flags("caller_tone_ms")
	require.NotEmpty(t, speech, "the caller spoke: %v", meta)
	n := max(len(speech), len(tone))
	for len(speech) < n {
		speech = append(speech, false)
	}
	for len(tone) < n {
		tone = append(tone, false)
	}
	amp := func(j int) float64 { return math.Sqrt(rec[j]) }
	// contrast is the mean amplitude of the recording's frames under
	// speech frames [from, to) at lag, less that under the others.
	contrast := func(from, to, lag int) float64 {
		var in, out float64
		var nin, nout, want int
		for i := from; i < to; i++ {
			if speech[i] && !tone[i] {
				want++
			}
		}
		for i := from; i < to; i++ {
			j := i + lag
			if j < 0 || j >= len(rec) || tone[i] {
				continue
			}
			if speech[i] {
				in += amp(j)
				nin++
			} else {
				out += amp(j)
				nout++
			}
		}
		if nin == 0 || nout == 0 || 5*nin < 4*want {
			return math.Inf(-1) // most of the speech must fall in the recording
		}
		return in/float64(nin) - out/float64(nout)
	}
	best, lag := math.Inf(-1), 0
	// The recording starts as the call is answered, within a few frames of
	// the caller's first; 2 s later at most on a starved machine.
	for l := -10; l <= 100; l++ {
		if s := contrast(0, n, l); s > best {
			best, lag = s, l
		}
	}
	lags := make([]int, n)
	for i := range lags {
		lags[i] = lag
	}
	var utter []int                 // each utterance's lag
	heard := make([]bool, len(rec)) // recording frames within 100 ms of an utterance as aligned
	near := func(x []bool, i, d int) bool {
		for k := max(0, i-d); k <= min(n-1, i+d); k++ {
			if x[k] {
				return true
			}
		}
		return false
	}
	for i := 0; i < n; {
		if !speech[i] {
			i++
			continue
		}
		end := i
		for end < n && near(speech, end, 10) {
			end++
		}
		from, to := max(0, i-10), min(n, end)
		b, local := math.Inf(-1), lag
		// A delay grows at the keys (the audio paused for them), by up to
		// their 500 ms; jitter moves it a little either way.
		for l := lag - 5; l <= lag+30; l++ {
			if s := contrast(from, to, l); s > b {
				b, local = s, l
			}
		}
		for k := from; k < to; k++ {
			lags[k] = local
		}
		utter = append(utter, local)
		// Until the next utterance, its lag: a delay changes between
		// utterances (the keys), not within one.
		for k := to; k < n; k++ {
			lags[k] = local
		}
		if len(utter) == 1 {
			for k := 0; k < from; k++ {
				lags[k] = local
			}
		}
		for k := max(0, from+local-5); k < min(len(rec), to+local+5); k++ {
			heard[k] = true
		}
		i = end
	}
	var ps, pn float64
	var ns, nn int
	for i := 0; i < n; i++ {
		j := i + lags[i]
		if j < 0 || j >= len(rec) {
			continue
		}
		switch {
		case speech[i] && i > 0 && i+1 < n && speech[i-1] && speech[i+1]:
			ps += rec[j]
			ns++
		case !near(speech, i, 5) && !near(tone, i, 5) && !heard[j]:
			pn += rec[j]
			nn++
		}
	}
	t.Logf("recording %d frames; speech spans %v; tones %v; lags %d %v; %d speech and %d noise frames", len(rec), meta["caller_speech_ms"], meta["caller_tone_ms"], lag, utter, ns, nn)
	require.Positive(t, nn, "some of the caller without speech or tones")
	require.Greater(t, ns, 50, "at least 1 s of speech")
	ps, pn = ps/float64(ns), pn/float64(nn)
	full := 32768.0 * 32768.0
	t.Logf("lag %d frames (utterances %v); %d noise frames at %.1f dBFS, %d speech frames at %.1f dBFS", lag, utter, nn, 10*math.Log10(pn/full+1e-13), ns, 10*math.Log10(ps/full))
	sorted := slices.Clone(rec)
	slices.Sort(sorted)
	return 10 * math.Log10((ps-pn)/max(pn, 1e-3)), 10 * math.Log10(pn/full+1e-13), nn, 10 * math.Log10(sorted[len(sorted)/2]/full+1e-13)
}
