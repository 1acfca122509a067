package load

import (
	"slices"
	"time"

	"github.com/voiced/voiced/cmd/voicebench/internal/procstat"
	"github.com/voiced/voiced/cmd/voicebench/internal/rtpstat"
)

// CallResult is what one call measured. Times are in milliseconds in
// JSON; delays are -1 when they could not be recovered (the call was not
// probed, or no onset came back).
type CallResult struct {
	Index     int           `json:"index"`
	Codec     string        `json:"codec"`
	Start     time.Time     `json:"start"`
	Setup     time.Duration `json:"-"`
	Duration  time.Duration `json:"-"`
	Err       string        `json:"error,omitempty"`
	HangupErr string        `json:"hangup_error,omitempty"`
	EndedBy   string        `json:"ended_by,omitempty"`
	Sent      uint64        `json:"packets_sent"`
	rtpstat.Summary
	Foreign uint64 `json:"packets_other_ssrc,omitempty"`
	OtherPT uint64 `json:"packets_other_payload_type,omitempty"`
	Probed  bool   `json:"probed"`
	// Onset lags, one per prompt that came back.
	Lags []time.Duration `json:"-"`
	// SetupMs .. ResponseMs are the JSON forms of the durations.
	SetupMs      float64   `json:"setup_ms"`
	DurationMs   float64   `json:"duration_ms"`
	LagsMs       []float64 `json:"lags_ms,omitempty"`
	OneWayMs     float64   `json:"one_way_delay_ms"`
	ResponseMs   float64   `json:"response_ms"`
	FirstAudioMs float64   `json:"first_audio_ms"`
	R            float64   `json:"r_factor"`
	MOS          float64   `json:"mos"`
}

// OK reports whether the call set up and lasted until voicebench ended it.
func (r *CallResult) OK() bool { return r.Err == "" }

// fillResult derives a call's figures; the caller holds the receive lane's
// mutex.
func (g *Generator) fillResult(c *call, r *CallResult) {
	var first int64
	if c.media != nil {
		r.Summary = c.media.Stats()
		lags, at := c.media.Audio()
		r.Lags, r.Probed = lags, true
		if !at.IsZero() {
			first = at.UnixNano()
		}
	} else {
		rx := &c.rx
		r.Summary = rx.stream.Summary()
		r.Foreign, r.OtherPT, r.Probed = rx.foreign, rx.otherPT, c.probed
		r.Lags = append([]time.Duration(nil), rx.lags...)
		first = rx.firstAudio
	}
	if first != 0 {
		r.FirstAudioMs = ms(time.Duration(first - c.answeredAt))
	}
	var oneWay time.Duration
	if len(r.Lags) > 0 {
		lag := median(r.Lags)
		switch g.cfg.Topology {
		case Echo:
			oneWay = lag / 2
			r.OneWayMs = ms(oneWay)
		case Relay:
			oneWay = lag
			r.OneWayMs = ms(oneWay)
		case Agent:
			r.ResponseMs = ms(lag - (g.cfg.Source.SpeechEnd() - g.cfg.Source.OnsetTime(8000)))
		}
	}
	if r.Received > 0 {
		r.R, r.MOS = r.Summary.MOS(r.Codec, oneWay)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// Window is one measurement window at steady load.
type Window struct {
	Start    time.Time     `json:"start"`
	Length   time.Duration `json:"-"`
	LengthS  float64       `json:"length_s"`
	Calls    int           `json:"calls"`
	Failures int64         `json:"setup_failures"`
	Sent     uint64        `json:"packets_sent"`
	Received uint64        `json:"packets_received"`
	Expected uint64        `json:"packets_expected"`
	Lost     uint64        `json:"packets_lost"`
	LossPct  float64       `json:"loss_percent"`
	// Per-packet transit difference |D| (RFC 3550 6.4.1) over the window.
	JitterP50Ms float64 `json:"jitter_d_p50_ms"`
	JitterP99Ms float64 `json:"jitter_d_p99_ms"`
	JitterMaxMs float64 `json:"jitter_d_max_ms"`
	// Per-call RFC 3550 interarrival jitter J at the window's end.
	CallJitterP99Ms float64 `json:"call_jitter_p99_ms"`
	// The target's CPU: percent of one core, and per packet it received.
	TargetCPUPct      float64   `json:"target_cpu_percent"`
	TargetUsPerPacket float64   `json:"target_cpu_us_per_packet"`
	TargetUsPerCallS  float64   `json:"target_cpu_us_per_call_second"`
	GeneratorCPUPct   float64   `json:"generator_cpu_percent"`
	HostCPUPct        float64   `json:"host_cpu_percent"`
	CoreCPUPct        []float64 `json:"core_cpu_percent"`
	// The time a virtual machine's hypervisor took from its cores in the
	// window (steal in /proc/stat): all cores, and each. A host that
	// steals stalls the target and the generator alike, which shows as
	// jitter and late ticks that neither caused.
	HostStealPct float64   `json:"host_steal_percent"`
	CoreStealPct []float64 `json:"core_steal_percent"`
	// The generator's own pacing in the window: how late its ticks
	// started (p99 and max) and ticks it skipped (a stall over 100 ms).
	PacerLateP99Ms float64 `json:"generator_pacer_late_p99_ms"`
	PacerLateMaxMs float64 `json:"generator_pacer_late_max_ms"`
	PacerSkipped   uint64  `json:"generator_pacer_skipped"`

	Jitter rtpstat.Histogram `json:"-"`
}

// MaxCoreSteal returns the most steal of any one core in the window, in
// percent of that core's time, and the core's number (-1 with none).
func (w *Window) MaxCoreSteal() (pct float64, core int) {
	core = -1
	for i, v := range w.CoreStealPct {
		if core < 0 || v > pct {
			pct, core = v, i
		}
	}
	return pct, core
}

func (g *Generator) window(a, b *snap) Window {
	w := Window{Start: a.at, Length: b.at.Sub(a.at), Calls: b.calls, Failures: b.failed - a.failed,
		Sent: b.sent - a.sent, Jitter: b.hist}
	w.LengthS = w.Length.Seconds()
	for c, e := range b.perCall {
		s := a.perCall[c]
		w.Received += e.Received - s.Received
		w.Expected += e.Expected - s.Expected
	}
	if w.Expected > w.Received {
		w.Lost = w.Expected - w.Received
	}
	if w.Expected > 0 {
		w.LossPct = 100 * float64(w.Lost) / float64(w.Expected)
	}
	w.JitterP50Ms = ms(time.Duration(w.Jitter.Quantile(0.5)))
	w.JitterP99Ms = ms(time.Duration(w.Jitter.Quantile(0.99)))
	w.JitterMaxMs = ms(time.Duration(w.Jitter.Max()))
	if len(b.jitterRF) > 0 {
		j := slices.Clone(b.jitterRF)
		slices.Sort(j)
		w.CallJitterP99Ms = j[min(len(j)-1, int(float64(len(j))*0.99))]
	}
	secs := w.Length.Seconds()
	if cpu := b.targets - a.targets; secs > 0 {
		w.TargetCPUPct = 100 * cpu.Seconds() / secs
		if w.Sent > 0 {
			w.TargetUsPerPacket = float64(cpu.Microseconds()) / float64(w.Sent)
		}
		if w.Calls > 0 {
			w.TargetUsPerCallS = float64(cpu.Microseconds()) / (float64(w.Calls) * secs)
		}
		w.GeneratorCPUPct = 100 * (b.self - a.self).Seconds() / secs
	}
	if a.hostErr == nil && b.hostErr == nil {
		w.HostCPUPct, w.CoreCPUPct = procstat.Percent(a.host, b.host)
		w.HostStealPct, w.CoreStealPct = procstat.StealPercent(a.host, b.host)
	}
	w.PacerLateP99Ms = ms(time.Duration(b.late.Quantile(0.99)))
	w.PacerLateMaxMs = ms(time.Duration(b.late.Max()))
	w.PacerSkipped = b.pacer.Skipped - a.pacer.Skipped
	return w
}
