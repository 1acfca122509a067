package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/voiced/voiced/cmd/voicebench/internal/chart"
	"github.com/voiced/voiced/cmd/voicebench/internal/report"
)

// system is one name's runs (repeats of the same configuration, taken in
// the interleaved order of the comparison).
type system struct {
	name string
	runs []*report.Report
	dirs []string
}

// runCompare reads result directories and writes a side-by-side table,
// the requested ratios and a combined CPU-against-concurrency chart.
func runCompare(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "Markdown file to write (default: stdout); the chart goes beside it")
	title := fs.String("title", "Side by side", "heading of the section")
	var ratios stringList
	fs.Var(&ratios, "ratio", "ratio to report as NUMERATOR:DENOMINATOR system names (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var systems []*system
	byName := map[string]*system{}
	for _, a := range fs.Args() {
		name, dir, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("argument %q: want NAME=RESULT-DIR", a)
		}
		r, err := readReport(dir)
		if err != nil {
			return err
		}
		s := byName[name]
		if s == nil {
			s = &system{name: name}
			byName[name] = s
			systems = append(systems, s)
		}
		s.runs = append(s.runs, r)
		s.dirs = append(s.dirs, dir)
	}
	if len(systems) == 0 {
		return errors.New("compare: no results given")
	}
	var md bytes.Buffer
	writeComparison(&md, *title, systems, ratios, byName)
	if *out == "" {
		_, err := stdout.Write(md.Bytes())
		return err
	}
	if c := cpuChart(systems); c != nil {
		var svg bytes.Buffer
		if err := c.WriteSVG(&svg); err == nil {
			name := strings.TrimSuffix(filepath.Base(*out), filepath.Ext(*out)) + "-cpu.svg"
			if err := os.WriteFile(filepath.Join(filepath.Dir(*out), name), svg.Bytes(), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(&md, "\n![CPU against concurrency](%s)\n", name)
		}
	}
	return os.WriteFile(*out, md.Bytes(), 0o644)
}

type stringList []string

// String implements flag.Value.
func (l *stringList) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value.
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func readReport(dir string) (*report.Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return nil, err
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &r, nil
}

// figures are one run's headline numbers.
type figures struct {
	calls                    int
	cpuPct, usPacket, usCall float64
	loss, p99D               float64
	steal                    float64 // the most of one core
	maxN                     int
	findMax                  bool
}

func figuresOf(r *report.Report) figures {
	f := figures{maxN: r.MaxSustained, findMax: len(r.Steps) > 0}
	w := r.Window
	if f.findMax {
		// The last passing step is the run's steady state at its best.
		for i := range r.Steps {
			if r.Steps[i].Pass {
				w = &r.Steps[i].Window
			}
		}
	}
	if w != nil {
		f.calls, f.cpuPct, f.usPacket, f.usCall, f.loss, f.p99D = w.Calls, w.TargetCPUPct, w.TargetUsPerPacket, w.TargetUsPerCallS, w.LossPct, w.JitterP99Ms
		f.steal, _ = w.MaxCoreSteal()
	}
	return f
}

// mean and spread of a figure over a system's runs. A --find-max run
// that sustained nothing has no window to take figures from and is left
// out (its largest N, 0, still counts in bestCell).
func stat(s *system, get func(figures) float64) (mean, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	n := 0
	for _, r := range s.runs {
		f := figuresOf(r)
		if f.findMax && f.maxN == 0 {
			continue
		}
		v := get(f)
		mean += v
		lo, hi = min(lo, v), max(hi, v)
		n++
	}
	if n == 0 {
		return 0, 0, 0
	}
	return mean / float64(n), lo, hi
}

func cell(s *system, get func(figures) float64, format string) string {
	m, lo, hi := stat(s, get)
	if len(s.runs) == 1 || lo == hi {
		return fmt.Sprintf(format, m)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", m, lo, hi)
}

func writeComparison(w io.Writer, title string, systems []*system, ratios []string, byName map[string]*system) {
	fmt.Fprintf(w, "## %s\n\n", title)
	fmt.Fprintln(w, "Each row is the mean of its runs (range in parentheses), taken interleaved in one session; the largest")
	fmt.Fprintln(w, "sustained N is the best round's (a host stall can only lower a round's figure), ratios of N likewise.")
	fmt.Fprintln(w, "Host steal is the most CPU time a virtual machine's hypervisor took from any one core in the window.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| system | target | codec | runs | calls | target CPU % of a core | µs per packet in | µs per call-second | loss % | p99 \\|D\\| ms | host steal % | largest sustained N |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range systems {
		r := s.runs[0]
		maxN := "–"
		if slices.ContainsFunc(s.runs, func(r *report.Report) bool { return len(r.Steps) > 0 }) {
			maxN = bestCell(s)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.name, r.Settings.Target, r.Settings.Codec, len(s.runs),
			cell(s, func(f figures) float64 { return float64(f.calls) }, "%.0f"),
			cell(s, func(f figures) float64 { return f.cpuPct }, "%.1f"),
			cell(s, func(f figures) float64 { return f.usPacket }, "%.2f"),
			cell(s, func(f figures) float64 { return f.usCall }, "%.1f"),
			cell(s, func(f figures) float64 { return f.loss }, "%.4f"),
			cell(s, func(f figures) float64 { return f.p99D }, "%.3f"),
			cell(s, func(f figures) float64 { return f.steal }, "%.1f"),
			maxN)
	}
	if len(ratios) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| ratio | CPU µs per packet | largest sustained N |")
		fmt.Fprintln(w, "|---|---|---|")
		for _, ratio := range ratios {
			a, b, _ := strings.Cut(ratio, ":")
			sa, sb := byName[a], byName[b]
			if sa == nil || sb == nil {
				fmt.Fprintf(w, "| %s / %s | not measured | not measured |\n", a, b)
				continue
			}
			ua, _, _ := stat(sa, func(f figures) float64 { return f.usPacket })
			ub, _, _ := stat(sb, func(f figures) float64 { return f.usPacket })
			_, _, na := stat(sa, func(f figures) float64 { return float64(f.maxN) })
			_, _, nb := stat(sb, func(f figures) float64 { return float64(f.maxN) })
			fmt.Fprintf(w, "| %s / %s | %s | %s |\n", a, b, ratioText(ua, ub), ratioText(na, nb))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Runs:")
	fmt.Fprintln(w)
	for _, s := range systems {
		for i, r := range s.runs {
			fmt.Fprintf(w, "- %s #%d (`%s`): `%s`\n", s.name, i+1, s.dirs[i], r.Command)
		}
	}
}

// bestCell shows the largest sustained N of a system's rounds: a host
// stall can only lower a round's figure, so the best round is the one
// closest to what the system carries; every round's value follows.
func bestCell(s *system) string {
	best, same := 0, true
	var all []string
	below := 0 // the smallest first step of a round that failed it
	for i, r := range s.runs {
		n := figuresOf(r).maxN
		best = max(best, n)
		same = same && (i == 0 || n == figuresOf(s.runs[0]).maxN)
		v := fmt.Sprint(n)
		if b := r.Below(); b > 0 {
			v = fmt.Sprintf("< %d", b)
			if below == 0 || b < below {
				below = b
			}
		}
		all = append(all, v)
	}
	switch {
	case best == 0 && below > 0 && same:
		return fmt.Sprintf("< %d", below)
	case same:
		return fmt.Sprint(best)
	}
	return fmt.Sprintf("%d (rounds: %s)", best, strings.Join(all, ", "))
}

func ratioText(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// cpuChart draws every find-max system's CPU against concurrency.
func cpuChart(systems []*system) *chart.Chart {
	c := &chart.Chart{Title: "Target CPU against concurrency", XLabel: "concurrent calls", YLabel: "CPU % of one core"}
	for _, s := range systems {
		i := slices.IndexFunc(s.runs, func(r *report.Report) bool { return len(r.Steps) > 0 })
		if i < 0 {
			continue
		}
		r := s.runs[i]
		var x, y []float64
		for _, st := range report.FinalSteps(r.Steps) {
			x = append(x, float64(st.Calls))
			y = append(y, st.Window.TargetCPUPct)
		}
		c.Series = append(c.Series, chart.Series{Name: s.name, X: x, Y: y})
	}
	if len(c.Series) == 0 {
		return nil
	}
	return c
}
