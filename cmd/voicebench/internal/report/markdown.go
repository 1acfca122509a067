package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Markdown writes the human summary; charts are the chart file names to
// link.
func (r *Report) Markdown(w io.Writer, charts []string) {
	s, set := &r.Summary, r.Settings
	fmt.Fprintf(w, "# voicebench: %s against %s\n\n", set.Mode, set.Target)
	fmt.Fprintf(w, "Command: `%s`  \n", r.Command)
	fmt.Fprintf(w, "Started %s on %s (%d cores, %s GiB, kernel %s, %s, load average %s).\n\n",
		r.Started.Format("2006-01-02 15:04:05 MST"), r.Machine.CPU, r.Machine.Cores, trimFloat(r.Machine.MemoryGiB), r.Machine.Kernel, r.Machine.Go, r.Machine.LoadAvg)
	fmt.Fprintf(w, "Codec %s, topology %s, %d calls at %s calls/s, hold %ss, %d lanes, %d send phases, prompt %s.\n\n",
		set.Codec, set.Topology, set.Calls, trimFloat(set.Rate), trimFloat(set.HoldS), set.Lanes, set.Phases, set.Prompt)

	if len(r.Steps) > 0 {
		fmt.Fprintf(w, "## Find the knee\n\nBound: %s. **Largest sustained: %s.**\n\n", r.Bound, r.Knee())
		fmt.Fprintln(w, "| calls | pass | loss % | p99 |D| ms | max |D| ms | target CPU % | target µs/packet | voicebench CPU % | host steal % (most of one core) | reason |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
		for _, st := range r.Steps {
			x := st.Window
			calls := fmt.Sprint(st.Calls)
			if st.Retry {
				calls += " (again)"
			}
			steal, _ := x.MaxCoreSteal()
			fmt.Fprintf(w, "| %s | %s | %.4f | %.3f | %.3f | %.1f | %.2f | %.1f | %.1f | %s |\n", calls, yes(st.Pass), x.LossPct, x.JitterP99Ms, x.JitterMaxMs,
				x.TargetCPUPct, x.TargetUsPerPacket, x.GeneratorCPUPct, steal, st.Reason)
		}
		fmt.Fprintln(w)
	}
	if x := r.Window; x != nil {
		fmt.Fprintf(w, "## Steady state (%ss window at %d calls)\n\n", trimFloat(x.LengthS), x.Calls)
		steal, _ := x.MaxCoreSteal()
		fmt.Fprintln(w, "| packets sent | received | lost | loss % | p50 / p99 / max |D| ms | per-call J p99 ms | target CPU % | target µs/packet | voicebench CPU % | host CPU % | host steal % (most of one core) | voicebench pacer late p99 ms |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
		fmt.Fprintf(w, "| %d | %d | %d | %.4f | %.3f / %.3f / %.3f | %.3f | %.1f | %.2f | %.1f | %.1f | %.1f | %.2f |\n\n", x.Sent, x.Received, x.Lost, x.LossPct,
			x.JitterP50Ms, x.JitterP99Ms, x.JitterMaxMs, x.CallJitterP99Ms, x.TargetCPUPct, x.TargetUsPerPacket, x.GeneratorCPUPct, x.HostCPUPct, steal, x.PacerLateP99Ms)
	}
	fmt.Fprintf(w, "## Calls\n\n%d attempted, %d up until the end, %d failed; %d packets sent, %d received, %d lost (%.4f%%).\n\n",
		s.Attempted, s.OK, s.Failed, s.Sent, s.Received, s.Lost, s.LossPct)
	if len(s.Errors) > 0 {
		keys := make([]string, 0, len(s.Errors))
		for k := range s.Errors {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "- %d × %s\n", s.Errors[k], k)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "| per call | n | min | p50 | p95 | p99 | max | mean |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	row := func(name string, d Dist) {
		if d.N == 0 {
			fmt.Fprintf(w, "| %s | 0 | | | | | | |\n", name)
			return
		}
		fmt.Fprintf(w, "| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", name, d.N, d.Min, d.P50, d.P95, d.P99, d.Max, d.Mean)
	}
	row("setup ms", s.Setup)
	row("interarrival jitter J ms", s.Jitter)
	row("one-way delay ms", s.OneWay)
	row("agent response ms", s.Response)
	row("first audio ms", s.FirstAudio)
	row("MOS (E-model)", s.MOS)
	if s.JitterD.N > 0 {
		fmt.Fprintf(w, "\nPer-packet transit difference |D|: p50 %.3f ms, p95 %.3f ms, p99 %.3f ms, max %.3f ms over %d packets.\n",
			s.JitterD.P50, s.JitterD.P95, s.JitterD.P99, s.JitterD.Max, s.JitterD.N)
	}
	if len(charts) > 0 {
		fmt.Fprintln(w, "\n## Charts")
		fmt.Fprintln(w)
		for _, c := range charts {
			fmt.Fprintf(w, "![%s](%s)\n", strings.TrimSuffix(c, ".svg"), c)
		}
	}
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

func trimFloat(f float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
}
