// Package report turns a voicebench run into its outputs: results.json
// (everything, per call), summary.md (the figures a person reads), and
// SVG charts of the latency and jitter distributions and of CPU against
// concurrency.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/voiced/voiced/cmd/voicebench/internal/chart"
	"github.com/voiced/voiced/cmd/voicebench/internal/load"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtpstat"
)

// Settings are the run's parameters as reported.
type Settings struct {
	Mode     string  `json:"mode"`
	Target   string  `json:"target"`
	Codec    string  `json:"codec"`
	Topology string  `json:"topology"`
	Calls    int     `json:"calls"`
	Rate     float64 `json:"rate_cps"`
	HoldS    float64 `json:"hold_s"`
	CallS    float64 `json:"call_duration_s"`
	Lanes    int     `json:"lanes"`
	Phases   int     `json:"phases"`
	Prompt   string  `json:"prompt"`
	FindMax  bool    `json:"find_max"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU       string  `json:"cpu"`
	Cores     int     `json:"cores"`
	Kernel    string  `json:"kernel"`
	Go        string  `json:"go"`
	LoadAvg   string  `json:"load_avg"`
	MemoryGiB float64 `json:"memory_gib"`
}

// Sample is one second of the run: concurrency and CPU.
type Sample struct {
	T            float64 `json:"t_s"`
	Calls        int64   `json:"calls"`
	TargetCPUPct float64 `json:"target_cpu_percent"`
	HostCPUPct   float64 `json:"host_cpu_percent"`
	GenCPUPct    float64 `json:"generator_cpu_percent"`
}

// Step is one measurement window of --find-max. Retry marks a second
// window at the same concurrency after the first failed.
type Step struct {
	Calls  int         `json:"calls"`
	Retry  bool        `json:"retry,omitempty"`
	Pass   bool        `json:"pass"`
	Reason string      `json:"reason,omitempty"`
	Window load.Window `json:"window"`
}

// FinalSteps returns the last window of each concurrency level: a window
// that failed and was measured again is left out.
func FinalSteps(steps []Step) []Step {
	var out []Step
	for i, st := range steps {
		if i+1 < len(steps) && steps[i+1].Calls == st.Calls {
			continue
		}
		out = append(out, st)
	}
	return out
}

// Report is a whole run.
type Report struct {
	Command  string    `json:"command"`
	Started  time.Time `json:"started"`
	Settings Settings  `json:"settings"`
	Machine  Machine   `json:"machine"`
	// Window is the steady-state measurement (plain runs).
	Window *load.Window `json:"window,omitempty"`
	// Steps and MaxSustained are --find-max's. MaxSustained is 0 when the
	// first step (--start) already failed: the knee is below it (Knee).
	Steps        []Step            `json:"steps,omitempty"`
	MaxSustained int               `json:"max_sustained_calls,omitempty"`
	Bound        string            `json:"bound,omitempty"`
	Summary      Summary           `json:"summary"`
	Samples      []Sample          `json:"samples"`
	JitterBins   []rtpstat.Bin     `json:"jitter_d_bins_ns"`
	Calls        []load.CallResult `json:"calls"`
	// OmitCalls leaves Calls out of results.json (the summary and charts
	// still use them).
	OmitCalls bool               `json:"-"`
	jitter    *rtpstat.Histogram `json:"-"`
}

// Summary aggregates the calls.
type Summary struct {
	Attempted  int            `json:"attempted"`
	OK         int            `json:"ok"`
	Failed     int            `json:"failed"`
	Sent       uint64         `json:"packets_sent"`
	Received   uint64         `json:"packets_received"`
	Lost       uint64         `json:"packets_lost"`
	Expected   uint64         `json:"packets_expected"`
	LossPct    float64        `json:"loss_percent"`
	Setup      Dist           `json:"setup_ms"`
	Jitter     Dist           `json:"call_jitter_ms"`
	JitterD    Dist           `json:"packet_jitter_d_ms"`
	OneWay     Dist           `json:"one_way_delay_ms"`
	Response   Dist           `json:"response_ms"`
	FirstAudio Dist           `json:"first_audio_ms"`
	MOS        Dist           `json:"mos"`
	Errors     map[string]int `json:"errors,omitempty"`
}

// Dist is a distribution's summary; N is 0 when there were no values.
type Dist struct {
	N    int     `json:"n"`
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// NewDist summarizes values (nearest-rank percentiles).
func NewDist(v []float64) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	var sum float64
	for _, x := range s {
		sum += x
	}
	return Dist{N: len(s), Min: s[0], P50: q(0.5), P95: q(0.95), P99: q(0.99), Max: s[len(s)-1], Mean: sum / float64(len(s))}
}

// New builds a report from a run's results and its |D| histogram.
func New(settings Settings, calls []load.CallResult, jitter *rtpstat.Histogram) *Report {
	r := &Report{Command: strings.Join(os.Args, " "), Settings: settings, Machine: ReadMachine(), Calls: calls, jitter: jitter}
	if r.Calls == nil {
		r.Calls = []load.CallResult{}
	}
	if jitter != nil {
		r.JitterBins = jitter.Bins(64)
	}
	s := &r.Summary
	s.Attempted = len(calls)
	var setup, jit, oneWay, resp, first, mos []float64
	for _, c := range calls {
		if c.OK() {
			s.OK++
		} else {
			s.Failed++
			if s.Errors == nil {
				s.Errors = map[string]int{}
			}
			s.Errors[c.Err]++
		}
		s.Sent += c.Sent
		s.Received += c.Received
		s.Lost += c.Lost
		s.Expected += c.Expected
		if c.Received == 0 {
			if c.OK() {
				setup = append(setup, c.SetupMs)
			}
			continue
		}
		setup = append(setup, c.SetupMs)
		jit = append(jit, c.JitterMs)
		mos = append(mos, c.MOS)
		if c.OneWayMs >= 0 {
			oneWay = append(oneWay, c.OneWayMs)
		}
		if c.ResponseMs >= 0 {
			resp = append(resp, c.ResponseMs)
		}
		if c.FirstAudioMs >= 0 {
			first = append(first, c.FirstAudioMs)
		}
	}
	if s.Expected > 0 {
		s.LossPct = 100 * float64(s.Lost) / float64(s.Expected)
	}
	s.Setup, s.Jitter, s.OneWay, s.Response, s.FirstAudio, s.MOS = NewDist(setup), NewDist(jit), NewDist(oneWay), NewDist(resp), NewDist(first), NewDist(mos)
	if jitter != nil && jitter.Count() > 0 {
		s.JitterD = Dist{N: int(jitter.Count()), P50: ns2ms(jitter.Quantile(0.5)), P95: ns2ms(jitter.Quantile(0.95)),
			P99: ns2ms(jitter.Quantile(0.99)), Max: ns2ms(jitter.Max()), Mean: jitter.Mean() / 1e6}
	}
	return r
}

func ns2ms(v int64) float64 { return float64(v) / 1e6 }

// WriteFiles writes results.json, summary.md and the charts into dir.
func (r *Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out := *r
	if r.OmitCalls {
		out.Calls = []load.CallResult{}
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	charts := r.Charts()
	names := make([]string, 0, len(charts))
	for name, c := range charts {
		var buf bytes.Buffer
		if err := c.WriteSVG(&buf); err != nil {
			continue // a chart with no data is left out
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var md bytes.Buffer
	r.Markdown(&md, names)
	return os.WriteFile(filepath.Join(dir, "summary.md"), md.Bytes(), 0o644)
}

// ReadMachine describes this machine from /proc.
func ReadMachine() Machine {
	// runtime.NumCPU counts only the cores voicebench may run on (one,
	// when pinned); the machine's are counted from /proc/cpuinfo.
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		cores := 0
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			switch {
			case !ok:
			case strings.TrimSpace(k) == "processor":
				cores++
			case strings.TrimSpace(k) == "model name" && m.CPU == "":
				m.CPU = strings.TrimSpace(v)
			}
		}
		if cores > 0 {
			m.Cores = cores
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %f kB", &kb); err == nil {
			m.MemoryGiB = float64(int(kb/1024/1024*10+0.5)) / 10
		}
	}
	return m
}

// Charts returns the run's charts by file name.
func (r *Report) Charts() map[string]*chart.Chart {
	out := map[string]*chart.Chart{}
	delay := &chart.Chart{Title: "Latency distribution", XLabel: "ms", YLabel: "% of calls", Kind: chart.Step, LogX: true, YMin: 0, YMax: 100}
	add := func(name string, v []float64) {
		if len(v) > 0 {
			x, y := chart.CDF(v)
			delay.Series = append(delay.Series, chart.Series{Name: name, X: x, Y: y})
		}
	}
	var setup, oneWay, resp, first []float64
	for _, c := range r.Calls {
		if c.SetupMs > 0 && c.OK() {
			setup = append(setup, c.SetupMs)
		}
		if c.OneWayMs >= 0 {
			oneWay = append(oneWay, c.OneWayMs)
		}
		if c.ResponseMs >= 0 {
			resp = append(resp, c.ResponseMs)
		}
		if c.FirstAudioMs >= 0 {
			first = append(first, c.FirstAudioMs)
		}
	}
	add("one-way delay", oneWay)
	add("agent response", resp)
	add("call setup", setup)
	add("first audio", first)
	out["latency.svg"] = delay

	jit := &chart.Chart{Title: "Jitter distribution", XLabel: "ms", YLabel: "% of packets / calls", Kind: chart.Step, LogX: true, YMin: 0, YMax: 100}
	if len(r.JitterBins) > 0 {
		var total uint64
		for _, b := range r.JitterBins {
			total += b.Count
		}
		var x, y []float64
		var cum uint64
		for _, b := range r.JitterBins {
			cum += b.Count
			x = append(x, max(float64(b.Hi)/1e6, 0.001))
			y = append(y, 100*float64(cum)/float64(total))
		}
		jit.Series = append(jit.Series, chart.Series{Name: "per-packet |D| (RFC 3550)", X: x, Y: y})
	}
	var j []float64
	for _, c := range r.Calls {
		if c.Received > 0 {
			j = append(j, max(c.JitterMs, 0.001))
		}
	}
	if len(j) > 0 {
		x, y := chart.CDF(j)
		jit.Series = append(jit.Series, chart.Series{Name: "per-call jitter J", X: x, Y: y})
	}
	out["jitter.svg"] = jit

	cpu := &chart.Chart{Title: "CPU against concurrency", XLabel: "concurrent calls", YLabel: "CPU % (of one core)"}
	var xs, tgt, host, gen []float64
	if len(r.Steps) == 0 {
		cpu.Kind = chart.Scatter // one-second samples, not a curve
	}
	if len(r.Steps) > 0 {
		for _, s := range FinalSteps(r.Steps) {
			xs = append(xs, float64(s.Calls))
			tgt = append(tgt, s.Window.TargetCPUPct)
			host = append(host, s.Window.HostCPUPct*float64(max(r.Machine.Cores, 1)))
			gen = append(gen, s.Window.GeneratorCPUPct)
		}
	} else {
		for _, s := range r.Samples {
			xs = append(xs, float64(s.Calls))
			tgt = append(tgt, s.TargetCPUPct)
			host = append(host, s.HostCPUPct*float64(max(r.Machine.Cores, 1)))
			gen = append(gen, s.GenCPUPct)
		}
	}
	if len(xs) > 0 {
		if r.hasTargetCPU() {
			cpu.Series = append(cpu.Series, chart.Series{Name: "target", X: xs, Y: tgt})
		}
		cpu.Series = append(cpu.Series, chart.Series{Name: "voicebench", X: xs, Y: gen}, chart.Series{Name: "host (all cores)", X: xs, Y: host})
	}
	out["cpu.svg"] = cpu
	return out
}

func (r *Report) hasTargetCPU() bool {
	for _, s := range r.Steps {
		if s.Window.TargetCPUPct > 0 {
			return true
		}
	}
	for _, s := range r.Samples {
		if s.TargetCPUPct > 0 {
			return true
		}
	}
	return r.Window != nil && r.Window.TargetCPUPct > 0
}

// Knee is --find-max's answer in words: "N calls", or, when the first
// step already failed, "below N calls (...)": the search only steps up,
// so a knee below --start is not located, and 0 would read as a target
// that carries nothing.
func (r *Report) Knee() string {
	if n := r.Below(); n > 0 {
		return fmt.Sprintf("below %d calls (the first step failed; search again with a lower --start)", n)
	}
	return fmt.Sprintf("%d calls", r.MaxSustained)
}

// Below is the first step's calls when --find-max failed it (the knee is
// below that), else 0.
func (r *Report) Below() int {
	if r.MaxSustained == 0 && len(r.Steps) > 0 {
		return r.Steps[0].Calls
	}
	return 0
}
