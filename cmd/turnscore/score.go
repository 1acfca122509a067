package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
)

// row is one condition's figures.
type row struct {
	Condition string `json:"condition"`
	Kind      kind   `json:"kind"`
	Items     int    `json:"items"`
	Errors    int    `json:"errors"`

	Stops         int `json:"stops"`          // responses cancelled or quiet for good
	Unfinished    int `json:"unfinished"`     // ... of which never ended (no response.done)
	Pauses        int `json:"pauses"`         // audio went quiet, response not cancelled (stalls excluded)
	Stalls        int `json:"stalls"`         // ... no audio came at all for a while: the server fell behind
	Intact        int `json:"intact"`         // non-stops that completed with every word
	SpeechStarted int `json:"speech_started"` // trials with a speech_started during the response

	GapP50 float64 `json:"longest_gap_p50_ms"` // the longest wait between two frames of agent audio, per trial
	GapMax float64 `json:"longest_gap_max_ms"`

	QuietP50 float64 `json:"quiet_p50_ms"` // barge-in: onset to quiet
	QuietP99 float64 `json:"quiet_p99_ms"`

	CutOffs int     `json:"cut_offs"`
	EoTP50  float64 `json:"end_of_turn_p50_ms"`

	LatencyP50 float64 `json:"latency_p50_ms"`
	LatencyP99 float64 `json:"latency_p99_ms"`
	Empty      int     `json:"empty"`

	ClosedNoReason int `json:"closed_without_reason"`

	// Rate is the condition's headline failure rate (lower is better):
	// echo: interruptions (stops or pauses); backchannel, bursts, noise:
	// stops; barge-in: missed; hesitation: cut-offs; latency: empties.
	Rate float64  `json:"rate"`
	Goal string   `json:"goal"`
	Met  bool     `json:"met"`
	Errs []string `json:"error_samples,omitempty"`
}

// pct is the q-quantile of xs (nearest rank), -1 when empty.
func pct(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// goals are issue 31's bounds that depend on the turn detection: end of
// turn (server_vad: its silence + 200 ms; semantic_vad: 400 ms) and the
// answer's latency p50 (800 ms; semantic_vad 700 ms) and p99 (1200 ms).
// Semantic is set for semantic_vad, whose end-of-turn bound also holds
// for the latency rows' complete sentences.
type goals struct {
	EoTMS, LatP50, LatP99 float64
	Semantic              bool
}

// goalsFor reads turn, a turn_detection object ("" for server_vad's
// defaults).
func goalsFor(turn string) (goals, error) {
	if turn == "" {
		return goals{700, 800, 1200, false}, nil
	}
	var td struct {
		Type              string `json:"type"`
		SilenceDurationMS int    `json:"silence_duration_ms"`
	}
	if err := json.Unmarshal([]byte(turn), &td); err != nil {
		return goals{}, fmt.Errorf("-turn-detection must be a turn_detection JSON object: %v", err)
	}
	switch td.Type {
	case "server_vad":
		silence := 500
		if td.SilenceDurationMS > 0 {
			silence = td.SilenceDurationMS
		}
		return goals{float64(silence + 200), 800, 1200, false}, nil
	case "semantic_vad":
		return goals{400, 700, 1200, true}, nil
	}
	return goals{}, fmt.Errorf("-turn-detection type %q: server_vad or semantic_vad", td.Type)
}

// summarize turns c's trials into its row and checks issue 31's goal.
func summarize(c condition, rs []result, g goals) row {
	w := row{Condition: c.Name, Kind: c.Kind, Items: len(rs)}
	var quiet, eot, lat, gaps []float64
	scored := 0
	for _, r := range rs {
		if r.ClosedNoReason {
			w.ClosedNoReason++
		}
		if r.Err != "" {
			w.Errors++
			if len(w.Errs) < 3 {
				w.Errs = append(w.Errs, r.Err)
			}
			continue
		}
		scored++
		if r.Unfinished {
			w.Unfinished++
		}
		if r.Stopped {
			w.Stops++
		} else {
			if r.Paused && r.PauseStall {
				w.Stalls++
			} else if r.Paused {
				w.Pauses++
			}
			if r.Intact {
				w.Intact++
			}
		}
		if r.SpeechStarted > 0 {
			w.SpeechStarted++
		}
		if r.QuietMS >= 0 {
			quiet = append(quiet, r.QuietMS)
		}
		if r.MaxGapMS > 0 {
			gaps = append(gaps, r.MaxGapMS)
		}
		if r.CutOff {
			w.CutOffs++
		}
		if r.EoTMS >= 0 {
			eot = append(eot, r.EoTMS)
		}
		if r.LatencyMS >= 0 {
			lat = append(lat, r.LatencyMS)
		}
		if r.Empty {
			w.Empty++
		}
	}
	w.QuietP50, w.QuietP99 = pct(quiet, 0.5), pct(quiet, 0.99)
	w.EoTP50 = pct(eot, 0.5)
	w.GapP50, w.GapMax = pct(gaps, 0.5), pct(gaps, 1)
	w.LatencyP50, w.LatencyP99 = pct(lat, 0.5), pct(lat, 0.99)
	n := float64(max(scored, 1))
	nonStops := scored - w.Stops
	switch c.Kind {
	case kindEcho:
		w.Rate = float64(w.Stops+w.Pauses) / n
		w.Goal = "0 interruptions"
		w.Met = w.Stops+w.Pauses == 0
	case kindBackchannel, kindBurst, kindNoise:
		w.Rate = float64(w.Stops) / n
		w.Goal = "stops < 2%, every non-stop intact"
		w.Met = w.Rate < 0.02 && w.Intact == nonStops
	case kindBargeIn:
		w.Rate = float64(scored-w.Stops) / n
		limit := 0.02
		if c.Noise != "" {
			limit = 0.05
		}
		w.Goal = fmt.Sprintf("missed < %.0f%%, quiet p50 <= 150 ms, p99 <= 250 ms", limit*100)
		w.Met = w.Rate < limit && w.QuietP50 >= 0 && w.QuietP50 <= 150 && w.QuietP99 <= 250
	case kindHesitation:
		w.Rate = float64(w.CutOffs) / n
		w.Goal = fmt.Sprintf("cut-offs < 3%%, end of turn p50 <= %.0f ms", g.EoTMS)
		w.Met = w.Rate < 0.03 && w.EoTP50 >= 0 && w.EoTP50 <= g.EoTMS
	case kindLatency:
		w.Rate = float64(w.Empty) / n
		w.Goal = fmt.Sprintf("p50 <= %.0f ms, p99 <= %.0f ms, no empty", g.LatP50, g.LatP99)
		w.Met = w.Empty == 0 && w.LatencyP50 >= 0 && w.LatencyP50 <= g.LatP50 && w.LatencyP99 <= g.LatP99
		if g.Semantic {
			w.Goal += fmt.Sprintf(", end of turn p50 <= %.0f ms", g.EoTMS)
			w.Met = w.Met && w.EoTP50 >= 0 && w.EoTP50 <= g.EoTMS
		}
	}
	if w.Errors > 0 || w.ClosedNoReason > 0 {
		w.Met = false
	}
	return w
}

func ms(x float64) string {
	if x < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", x)
}

// printTable writes the rows as a Markdown table.
func printTable(out io.Writer, rows []row) {
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "condition\titems\tstops\tpauses\tintact\tmissed\tquiet p50/p99 ms\tlongest gap p50/max ms\tcut-offs\tEoT p50 ms\tlatency p50/p99 ms\tempty\tclosed w/o reason\terrors\tgoal met")
	for _, w := range rows {
		missed := "-"
		if w.Kind == kindBargeIn {
			missed = fmt.Sprint(w.Items - w.Errors - w.Stops)
		}
		cut, eot := "-", "-"
		if w.Kind == kindHesitation {
			cut = fmt.Sprint(w.CutOffs)
		}
		if w.Kind == kindHesitation || w.Kind == kindLatency {
			eot = ms(w.EoTP50)
		}
		lat, empty := "-", "-"
		if w.Kind == kindLatency {
			lat, empty = ms(w.LatencyP50)+" / "+ms(w.LatencyP99), fmt.Sprint(w.Empty)
		}
		stops, pauses, intact, quiet, gap := "-", "-", "-", "-", "-"
		if w.Kind != kindHesitation && w.Kind != kindLatency {
			gap = ms(w.GapP50) + " / " + ms(w.GapMax)
			stops, pauses, intact = fmt.Sprint(w.Stops), fmt.Sprint(w.Pauses), fmt.Sprint(w.Intact)
			if w.Stalls > 0 {
				pauses += fmt.Sprintf(" (+%d stalls)", w.Stalls)
			}
			if w.Unfinished > 0 {
				stops += fmt.Sprintf(" (%d unfinished)", w.Unfinished)
			}
			quiet = ms(w.QuietP50) + " / " + ms(w.QuietP99)
		}
		met := "no"
		if w.Met {
			met = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", w.Condition, w.Items, stops, pauses, intact, missed, quiet, gap, cut, eot, lat, empty, w.ClosedNoReason, w.Errors, met)
	}
	_ = tw.Flush()
}

// regression is one goal where B did worse than A beyond the tolerance.
type regression struct {
	Condition string  `json:"condition"`
	Figure    string  `json:"figure"`
	A         float64 `json:"a"`
	B         float64 `json:"b"`
}

// compare lists where b is worse than a: a headline rate more than
// tolRate higher, a latency figure more than tolMS higher, more sessions
// closed without a reason, or more trials that failed to run.
func compare(a, b []row, tolRate, tolMS float64) []regression {
	var out []regression
	for i := range a {
		if i >= len(b) || a[i].Condition != b[i].Condition {
			break
		}
		x, y := a[i], b[i]
		worse := func(fig string, va, vb, tol float64) {
			// -1: no figure (no trial measured it).
			if vb < 0 && va >= 0 {
				out = append(out, regression{x.Condition, fig, va, vb})
				return
			}
			if va >= 0 && vb >= 0 && vb > va+tol {
				out = append(out, regression{x.Condition, fig, va, vb})
			}
		}
		worse("rate", x.Rate, y.Rate, tolRate)
		worse("closed without reason", float64(x.ClosedNoReason), float64(y.ClosedNoReason), 0)
		worse("errors", float64(x.Errors), float64(y.Errors), 0)
		switch x.Kind {
		case kindBargeIn:
			worse("quiet p50 ms", x.QuietP50, y.QuietP50, tolMS)
			worse("quiet p99 ms", x.QuietP99, y.QuietP99, tolMS)
		case kindHesitation:
			worse("end of turn p50 ms", x.EoTP50, y.EoTP50, tolMS)
		case kindLatency:
			worse("latency p50 ms", x.LatencyP50, y.LatencyP50, tolMS)
			worse("latency p99 ms", x.LatencyP99, y.LatencyP99, tolMS)
		case kindBackchannel, kindBurst, kindNoise:
			na, nb := float64(max(x.Items-x.Errors-x.Stops, 1)), float64(max(y.Items-y.Errors-y.Stops, 1))
			worse("non-stops not intact", 1-float64(x.Intact)/na, 1-float64(y.Intact)/nb, tolRate)
		}
	}
	return out
}
