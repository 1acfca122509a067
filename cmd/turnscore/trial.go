package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

// result is one trial's outcome, as seen from the wire.
type result struct {
	Cond  string `json:"condition"`
	Index int    `json:"index"`
	Err   string `json:"error,omitempty"`
	// The item: echo delay, hesitation gap, stimulus onset after the
	// agent's first audio (ms).
	DelayMS int `json:"delay_ms,omitempty"`
	GapMS   int `json:"gap_ms,omitempty"`
	AtMS    int `json:"at_ms,omitempty"`

	// Trials over the agent's speech.
	Stopped       bool    `json:"stopped"`        // the agent's response ended cancelled, or went quiet for good
	Unfinished    bool    `json:"unfinished"`     // ... without a response.done (6 s without its audio)
	Paused        bool    `json:"paused"`         // its audio went quiet where it speaks, after the stimulus
	Intact        bool    `json:"intact"`         // completed with every word (loud frame) of the clean rendering
	SpeechStarted int     `json:"speech_started"` // speech_started events during the response
	QuietMS       float64 `json:"quiet_ms"`       // stimulus onset to the agent going quiet (-1: it did not)
	PauseMS       int     `json:"pause_ms"`       // the pause's length (to the next loud frame or the end)
	PauseStall    bool    `json:"pause_stall"`    // ... in which no audio came at all: the server stalled
	MaxGapMS      float64 `json:"max_gap_ms"`     // the longest wait between two frames of the agent's audio
	LoudFrames    int     `json:"loud_frames"`
	RefFrames     int     `json:"ref_frames"`

	// Hesitation trials.
	CutOff bool    `json:"cut_off"`
	EoTMS  float64 `json:"end_of_turn_ms"` // end of speech to speech_stopped (-1: none)

	// Latency trials.
	LatencyMS  float64 `json:"latency_ms"` // end of speech to the first agent audio (-1: no answer)
	Empty      bool    `json:"empty"`      // the clean turn got no transcript or no answer
	Transcript string  `json:"transcript,omitempty"`

	Closed         string `json:"closed_by_server,omitempty"`
	ClosedNoReason bool   `json:"closed_without_reason"`
}

// intactSlack is how many fewer loud frames than the clean rendering a
// response may have and still count as every word played: renderings
// differ by up to about 4 where a word's edge crosses loudDB; a short word
// is 5 or more.
const intactSlack = 6

// endSlack is how many fewer loud frames than the clean rendering a phone
// response may have before its end counts as a stop for good: the server
// renders one text in up to three lengths (224, 227 and 232-233 loud
// frames in one run), and a response in the shortest form against a
// reference in the longest looked like a stop in its last 200 ms. A
// barge-in that stopped the agent leaves a second or more unsaid.
const endSlack = 15

// endedEarly reports whether a phone response of loud loud frames left
// part of its text unsaid, against a clean rendering of ref loud frames.
func endedEarly(loud, ref int) bool { return loud < ref-endSlack }

// loudDB is the level above which a 20 ms frame of agent audio is speech.
const loudDB = -45.0

// reference is the clean renderings of each agent text.
type reference map[int]rendering

// rendering is what the clean renderings of one agent text say: gaps[l]
// is the longest pause any of them makes after its l-th loud frame, loud
// the fewest loud frames any has, mask the first one's loud frames (for
// the debug print). espeak-ng renders a text the same way within a frame
// nearly always, but now and then a rendering pauses 300 ms less at a
// sentence's end: as the only reference, it made every trial of that
// text "pause" there.
//
// quiet[t] is the longest quiet run of any of them that covers its t-th
// frame from the first: a second alignment, by time. The server renders
// one text in more than one form (a louder one fills 1-3 frame gaps
// between words, so it counts up to a dozen more loud frames by the first
// sentence's end), and against a reference in the other form a trial's
// sentence-end pause fell outside the ±3 loud frames gaps looks at: the
// phone echo rows counted 2-6 such "pauses" of 15-17 frames per run.
// Time aligns them until the trial's first pause, loud frames after it.
type rendering struct {
	gaps  []int
	quiet []int
	loud  int
	mask  []bool
}

// refRenderings is how many clean renderings of each agent text a run
// takes.
const refRenderings = 2

// newRendering merges the loud frames of one or more clean renderings.
func newRendering(masks ...[]bool) rendering {
	r := rendering{gaps: []int{0}}
	for i, m := range masks {
		// g[l] is this rendering's pause after its l-th loud frame.
		g := []int{0}
		for _, loud := range m {
			if loud {
				g = append(g, 0)
			} else {
				g[len(g)-1]++
			}
		}
		for len(r.gaps) < len(g) {
			r.gaps = append(r.gaps, 0)
		}
		for l, n := range g {
			r.gaps[l] = max(r.gaps[l], n)
		}
		for len(r.quiet) < len(m) {
			r.quiet = append(r.quiet, 0)
		}
		// The same pauses by time: each run of g[l] quiet frames, then
		// the next loud one.
		t := 0
		for _, n := range g {
			for k := t; k < t+n; k++ {
				r.quiet[k] = max(r.quiet[k], n)
			}
			t += n + 1
		}
		if i == 0 {
			r.mask, r.loud = m, len(g)-1
		}
		r.loud = min(r.loud, len(g)-1)
	}
	return r
}

// runner runs trials against one server.
type runner struct {
	addr, key string
	voices    *voices
	refs      reference
	turn      string // turn_detection JSON ("" = server_vad defaults)
	sip       string // the node's SIP address: score phone calls ("": the realtime WebSocket)
}

func (r *runner) run(ctx context.Context, it item) result {
	res := result{Cond: it.Cond.Name, Index: it.Index, QuietMS: -1, EoTMS: -1, LatencyMS: -1,
		DelayMS: int(it.Delay.Milliseconds()), GapMS: int(it.Gap.Milliseconds())}
	if it.Stim != "" && it.Cond.Kind != kindHesitation {
		res.AtMS = int(it.At.Milliseconds())
	}
	var s *session
	var err error
	if r.sip != "" {
		s, err = dialSIP(ctx, r.sip, sipNumber(it.AgentText))
	} else {
		turn := r.turn
		if it.Cond.Turn != "" {
			turn = it.Cond.Turn
		}
		s, err = dial(ctx, r.addr, r.key, turn)
	}
	if err != nil {
		res.Err = err.Error()
		return res
	}
	switch it.Cond.Kind {
	case kindHesitation, kindLatency:
		err = r.callerTurn(ctx, s, it, &res)
	default:
		err = r.overAgent(ctx, s, it, &res, nil)
	}
	closed, reason := s.close()
	if closed != "" {
		res.Closed = closed
		res.ClosedNoReason = !reason
		if !reason {
			// An error event before the close is a reason too.
			evs, _ := s.snapshot()
			for _, e := range evs {
				if e.Type == "error" {
					res.ClosedNoReason = false
				}
			}
		}
	}
	if err != nil && res.Err == "" {
		res.Err = err.Error()
	}
	return res
}

// noiseOf is the steady noise a condition plays under everything, n
// samples long (nil: none).
func (r *runner) noiseOf(c condition, rng *rand.Rand, n int) ([]float64, error) {
	switch c.Noise {
	case "":
		return nil, nil
	case "pink":
		return pink(rng, n, speechDBFS-c.SNR), nil
	case "babble":
		return r.voices.babble(rng, n, speechDBFS-c.SNR)
	}
	return nil, fmt.Errorf("unknown noise %q", c.Noise)
}

// room is the echo's impulse response relative to its direct path, at
// 1 ms spacing: a handset or speakerphone's short reflections.
var room = []float64{1, 0, 0.3, 0, 0, 0.15, 0, 0, 0, 0.08}

const maxTicks = 50 * 40 // no trial streams longer than 40 s

// overAgent makes the agent speak agentTexts[it.AgentText] (a text turn
// the echo model repeats) while the microphone carries line noise, the
// condition's steady noise, the agent's own audio fed back (echo
// conditions) and the stimulus at it.At after the agent's first audio.
// With loud non-nil it is a reference run: the clean rendering's loud
// frames are stored there.
func (r *runner) overAgent(ctx context.Context, s *session, it item, res *result, loud *[]bool) error {
	rng := rand.New(rand.NewPCG(it.Seed, 7))
	noise, err := r.noiseOf(it.Cond, rng, rate*40)
	if err != nil {
		return err
	}
	var stim []float64
	switch it.Cond.Kind {
	case kindBackchannel, kindBargeIn:
		p, err := r.voices.speech(it.Stim, it.StimVoice)
		if err != nil {
			return err
		}
		stim = floats(p)
	case kindBurst:
		stim = burst(rng, it.Stim)
	}
	gain := 0.0
	if it.Cond.Kind == kindEcho {
		gain = math.Pow(10, it.Cond.EchoDB/20)
	}
	delay := int(it.Delay.Seconds() * rate)
	floorG := math.Pow(10, floorDBFS/20) * 32768

	const askTick = 10
	respID := ""
	firstPos, stimPos := -1, -1
	doneTick := -1
	status, reason := "", ""
	echoBuf := make([]int16, frame+len(room)*rate/1000)
	if r.sip != "" {
		respID = "sip" // the agent speaks first; no events on a phone call
	}
	var lastLoud time.Duration
	seen := 0 // frames already looked at for lastLoud
	mic := func(k int) []int16 {
		if k == askTick && r.sip == "" {
			text := agentTexts[it.AgentText]
			if err := s.send(`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":` +
				strconv.Quote(text) + `}]}}`); err == nil {
				_ = s.send(`{"type":"response.create"}`)
			}
		}
		pos := k * frame
		out := make([]int16, frame)
		if gain > 0 {
			// echoBuf[j] is what played at pos - delay - (len(room)-1) ms + j.
			back := delay + (len(room)-1)*rate/1000
			s.playedInto(echoBuf, pos-back)
		}
		for j := range out {
			x := floorG * rng.NormFloat64()
			if noise != nil {
				x += noise[(pos+j)%len(noise)]
			}
			if stimPos >= 0 && stim != nil {
				if i := pos + j - stimPos; i >= 0 && i < len(stim) {
					x += stim[i]
				}
			}
			if gain > 0 {
				var e float64
				base := j + (len(room)-1)*rate/1000
				for t, h := range room {
					if h != 0 {
						e += h * float64(echoBuf[base-t*rate/1000])
					}
				}
				x += gain * e
			}
			out[j] = clip(x)
		}
		return out
	}
	stop := func(k int) bool {
		evs, frames := s.snapshot()
		if k > askTick && respID == "" {
			for _, e := range evs {
				if e.Type == "response.created" && e.At >= time.Duration(askTick)*20*time.Millisecond-20*time.Millisecond {
					respID = e.ResponseID
					break
				}
			}
		}
		if respID != "" && firstPos < 0 {
			for _, f := range frames {
				if f.ResponseID == respID && (r.sip == "" || dbfs(f.PCM) > loudDB) {
					firstPos = f.Pos
					if it.Cond.Kind != kindEcho && it.Cond.Kind != kindNoise && loud == nil {
						stimPos = firstPos + int(it.At.Seconds()*rate)
					}
					break
				}
			}
		}
		if respID != "" && doneTick < 0 {
			for _, e := range evs {
				if e.Type == "response.done" && e.ResponseID == respID {
					doneTick, status, reason = k, e.Status, e.Reason
				}
			}
		}
		if r.sip != "" {
			// A phone call says nothing of the response: it is over when
			// the agent has been quiet for 2.5 s.
			for ; seen < len(frames); seen++ {
				if dbfs(frames[seen].PCM) > loudDB {
					lastLoud = frames[seen].At
				}
			}
			if firstPos >= 0 && s.now()-lastLoud > 2500*time.Millisecond {
				return true
			}
			return k >= maxTicks
		}
		if doneTick < 0 && firstPos >= 0 {
			// The agent quiet for 6 s with its response still open: it
			// stopped for good (a turn that never ends holds it).
			var last time.Duration
			for _, f := range frames {
				if f.ResponseID == respID {
					last = f.At
				}
			}
			if s.now()-last > 6*time.Second {
				return true
			}
		}
		return (doneTick >= 0 && k >= doneTick+25) || k >= maxTicks
	}
	if err := s.stream(ctx, mic, stop); err != nil {
		return err
	}
	if doneTick < 0 && os.Getenv("TURNSCORE_DEBUG") != "" {
		evs, frames := s.snapshot()
		for _, e := range evs {
			fmt.Fprintf(os.Stderr, "  %6.2f %s %s %s %s %q\n", e.At.Seconds(), e.Type, e.ResponseID, e.Status, e.Reason, e.Transcript+e.Raw)
		}
		fmt.Fprintf(os.Stderr, "  %d frames; %s\n", len(frames), playString(frames))
	}
	if doneTick < 0 && firstPos < 0 {
		return fmt.Errorf("no response.done for the agent's turn within %d s (response %q)", maxTicks/50, respID)
	}
	if r.sip != "" {
		return r.overAgentSIP(s, it, res, loud, firstPos, stimPos, len(stim))
	}
	evs, frames := s.snapshot()
	var mine []recvFrame
	for _, f := range frames {
		if f.ResponseID == respID {
			mine = append(mine, f)
		}
	}
	if len(mine) == 0 {
		return fmt.Errorf("the agent's response %s (%s %s) carried no audio", respID, status, reason)
	}
	if loud != nil {
		for _, f := range mine {
			*loud = append(*loud, dbfs(f.PCM) > loudDB)
		}
		if status != "completed" {
			return fmt.Errorf("reference rendering ended %s (%s)", status, reason)
		}
		return nil
	}
	var created, done time.Duration
	for _, e := range evs {
		if e.ResponseID == respID && e.Type == "response.created" {
			created = e.At
		}
		if e.ResponseID == respID && e.Type == "response.done" {
			done = e.At
		}
	}
	if doneTick < 0 {
		done = s.now()
	}
	for _, e := range evs {
		if e.Type == "input_audio_buffer.speech_started" && e.At >= created && e.At <= done {
			res.SpeechStarted++
		}
	}
	for i := 1; i < len(mine); i++ {
		res.MaxGapMS = max(res.MaxGapMS, float64(mine[i].At-mine[i-1].At)/float64(time.Millisecond))
	}
	res.Unfinished = doneTick < 0
	if res.Unfinished && res.SpeechStarted == 0 {
		// Quiet for 6 s with neither a barge-in nor an end: the server
		// fell behind (an overloaded machine), not a turn-taking outcome.
		return fmt.Errorf("stalled: no agent audio for 6 s, no speech_started, no response.done (longest wait between frames %.0f ms)", res.MaxGapMS)
	}
	res.Stopped = status == "cancelled" || res.Unfinished
	ref := r.refs[it.AgentText]
	res.RefFrames = ref.loud
	for _, f := range mine {
		if dbfs(f.PCM) > loudDB {
			res.LoudFrames++
		}
	}
	res.Intact = status == "completed" && res.LoudFrames >= res.RefFrames-intactSlack
	// From the stimulus (or, for echo and steady noise, the agent's first
	// audio) on: the first 20 ms where the agent is quiet but its clean
	// rendering speaks is where it paused.
	from := stimPos
	if from < 0 {
		from = firstPos
	}
	q := -1
	if from >= 0 {
		p := quietAt(mine, ref, from)
		q = p.at
		if q >= 0 {
			res.PauseMS, res.PauseStall = p.frames*20, p.gap
			// No audio in it, but the engine said it paused: a pause.
			for _, e := range evs {
				if e.Type == "voiced.output_audio.paused" && e.ResponseID == respID {
					res.PauseStall = false
				}
			}
		}
	}
	if os.Getenv("TURNSCORE_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "%s #%d %s q=%d from=%d first=%d\n ref %s\n got %s\n", it.Cond.Name, it.Index, status, q, from, firstPos, loudString(ref.mask), playString(mine))
	}
	if q < 0 && res.Stopped {
		// Stopped: quiet from the end of its last loud frame.
		for _, f := range mine {
			if dbfs(f.PCM) > loudDB {
				q = f.Pos + len(f.PCM)
			}
		}
	}
	if q >= 0 {
		res.Paused = !res.Stopped
		if stimPos >= 0 && q >= stimPos {
			res.QuietMS = float64(q-stimPos) * 1000 / rate
		}
	}
	return nil
}

// overAgentSIP reads a phone call's outcome from its audio alone, from
// the agent's first loud frame (outcome): a pause that lasts a second or
// runs to the end is a stop, a shorter one a pause it resumed from unless
// a stop follows it within stopWindow of the stimulus's end.
func (r *runner) overAgentSIP(s *session, it item, res *result, loud *[]bool, firstPos, stimPos, stimLen int) error {
	_, frames := s.snapshot()
	if firstPos < 0 {
		return fmt.Errorf("the agent said nothing in %d s", maxTicks/50)
	}
	var mine []recvFrame
	lastLoud := -1
	for _, f := range frames {
		if f.Pos >= firstPos {
			mine = append(mine, f)
			if dbfs(f.PCM) > loudDB {
				lastLoud = len(mine)
			}
		}
	}
	if loud != nil {
		for _, f := range mine[:lastLoud] {
			*loud = append(*loud, dbfs(f.PCM) > loudDB)
		}
		return nil
	}
	ref := r.refs[it.AgentText]
	res.RefFrames = ref.loud
	for _, f := range mine {
		if dbfs(f.PCM) > loudDB {
			res.LoudFrames++
		}
	}
	from := stimPos
	if from < 0 {
		from = firstPos
	}
	// It ended early (quiet from its last loud frame) if words are
	// missing that no pause inside what it said accounts for.
	last := mine[lastLoud-1]
	var end *pause
	if endedEarly(res.LoudFrames, res.RefFrames) {
		end = &pause{at: last.Pos + len(last.PCM), frames: 1 << 20}
	}
	until := -1
	if stimPos >= 0 && stimLen > 0 {
		until = stimPos + stimLen + stopWindow*rate/1000
	}
	first, p := outcome(mine[:lastLoud], ref, from, until, end)
	if os.Getenv("TURNSCORE_DEBUG") != "" && p.at >= 0 {
		fmt.Fprintf(os.Stderr, "%s #%d pause at %d ms for %d frames\n ref %s\n got %s\n", it.Cond.Name, it.Index, (p.at-firstPos)*1000/rate, p.frames, loudString(ref.mask), playString(mine[:lastLoud]))
	}
	if p.at >= 0 {
		res.PauseMS, res.PauseStall = p.frames*20, p.gap
		res.Stopped = p.frames >= stopFrames
		res.Paused = !res.Stopped
		if stimPos >= 0 && first.at >= stimPos {
			res.QuietMS = float64(first.at-stimPos) * 1000 / rate
		}
	}
	res.Intact = !res.Stopped && res.LoudFrames >= res.RefFrames-intactSlack
	return nil
}

// stopFrames is how long a phone agent's quiet stretch lasts (frames) to
// be a stop rather than a pause it resumed from, and stopWindow how long
// after the stimulus ends (ms) a stop still counts as its doing.
const (
	stopFrames = 50
	stopWindow = 1500
)

// outcome is what the agent did from from on: its first pause (first)
// and the pause that decided the trial (p): the first pause, or, when it
// resumed from that one, the first stop after it that began before until
// (a sample position; -1: any time), so a barge-in the agent paused for,
// resumed from and then stopped for is heard, late, and a noise that made
// it do so stopped it. end, when not nil, is where it ended early (its
// last loud frame, words missing), which stands for a stop no pause
// inside what it said shows. Both are pause{at: -1} when it spoke on.
func outcome(frames []recvFrame, ref rendering, from, until int, end *pause) (first, p pause) {
	p = quietAt(frames, ref, from)
	if p.at < 0 && end != nil {
		return *end, *end
	}
	first = p
	for p.at >= 0 && p.frames < stopFrames {
		q := quietAt(frames, ref, p.at+p.frames*frame)
		if q.at < 0 && end != nil {
			q = *end
		}
		if q.at < 0 || (until >= 0 && q.at > until) {
			break
		}
		p = q
	}
	if p.frames < stopFrames {
		p = first // no stop: the first pause is the trial's
	}
	return first, p
}

// pauseSlack is how much longer than the clean rendering's own pause a
// quiet stretch must be to count as the agent pausing: renderings differ
// by a frame or two where a word's edge crosses loudDB.
const pauseSlack = 5 // frames

// timeSlack is how far (frames) from a quiet run's start, by time, the
// clean rendering's own pause may start and still account for it: the
// forms of one text drift apart by a frame or two per second.
const timeSlack = 5

// pause is a quiet stretch where the clean rendering speaks.
type pause struct {
	at     int  // where it began (no earlier than from), -1: no pause
	frames int  // how long it lasted (to the next loud frame or the end)
	gap    bool // nothing was played in it: no deltas came (a stall)
}

// quietAt finds where the agent paused: frames at their play positions
// (gaps play nothing) against the clean rendering's loud frames. A quiet
// stretch longer, by pauseSlack, than the rendering's own pause at the
// same point of the text (its longest within 3 loud frames either side)
// and, until the first such stretch, at the same time (within timeSlack
// frames) is a pause; quietAt returns the first at or after from.
func quietAt(frames []recvFrame, ref rendering, from int) pause {
	gaps := ref.gaps
	allowed := func(l int) int {
		m := 0
		for i := max(0, l-3); i <= min(len(gaps)-1, l+3); i++ {
			m = max(m, gaps[i])
		}
		return m + pauseSlack
	}
	// byTime is the same for a quiet run that starts t frames after the
	// first: the rendering's own pause within timeSlack frames of it,
	// until the trial's first pause shifts its time.
	byTime := func(t int) int {
		m := 0
		for i := max(0, t-timeSlack); i <= min(len(ref.quiet)-1, t+timeSlack); i++ {
			m = max(m, ref.quiet[i])
		}
		return m + pauseSlack
	}
	shifted := false
	found := pause{at: -1}
	loud, run, runStart, gapFrames := 0, 0, -1, 0
	// slot takes the next 20 ms; true when a found pause has ended.
	slot := func(pos int, isLoud, gap bool) bool {
		if isLoud {
			loud++
			run, runStart, gapFrames = 0, -1, 0
			return found.at >= 0
		}
		if runStart < 0 {
			runStart = pos
		}
		run++
		if gap {
			gapFrames++
		}
		if run > allowed(loud) && (shifted || run > byTime((runStart-frames[0].Pos)/frame)) {
			if found.at < 0 && pos >= from {
				found.at = max(runStart, from)
			}
			shifted = true
		}
		if found.at >= 0 {
			found.frames, found.gap = run, gapFrames*2 > run
		}
		return false
	}
	pos := frames[0].Pos
	for _, f := range frames {
		for ; f.Pos > pos+frame/2; pos += frame {
			if slot(pos, false, true) {
				return found
			}
		}
		if slot(f.Pos, dbfs(f.PCM) > loudDB, false) {
			return found
		}
		pos = f.Pos + len(f.PCM)
	}
	return found
}

func floats(p []int16) []float64 {
	out := make([]float64, len(p))
	for i, s := range p {
		out[i] = float64(s)
	}
	return out
}

// callerTurn streams one caller turn (a hesitation utterance, or a clean
// one for the latency condition) over line noise and measures the turn's
// end and the answer.
func (r *runner) callerTurn(ctx context.Context, s *session, it item, res *result) error {
	rng := rand.New(rand.NewPCG(it.Seed, 9))
	var speech []float64
	var p2on int // where the part after the hesitation starts
	const at = 15 * frame
	if it.Cond.Kind == kindHesitation {
		n, _ := strconv.Atoi(it.Stim)
		a, err := r.voices.speech(hesitations[n][0], it.StimVoice)
		if err != nil {
			return err
		}
		b, err := r.voices.speech(hesitations[n][1], it.StimVoice)
		if err != nil {
			return err
		}
		gap := int(it.Gap.Seconds() * rate)
		speech = append(append(floats(a), make([]float64, gap)...), floats(b)...)
		p2on = at + len(a) + gap
	} else {
		p, err := r.voices.speech(cleanTurns[it.Turns[0]], it.StimVoice)
		if err != nil {
			return err
		}
		speech = floats(p)
	}
	end := at + len(speech)
	endAt := time.Duration(end) * time.Second / rate
	floorG := math.Pow(10, floorDBFS/20) * 32768
	answered := -1
	mic := func(k int) []int16 {
		pos := k * frame
		out := make([]int16, frame)
		for j := range out {
			x := floorG * rng.NormFloat64()
			if i := pos + j - at; i >= 0 && i < len(speech) {
				x += speech[i]
			}
			out[j] = clip(x)
		}
		return out
	}
	stop := func(k int) bool {
		if k*frame < end {
			return false
		}
		evs, _ := s.snapshot()
		if answered < 0 {
			for _, e := range evs {
				if e.Type == "response.done" && e.At > endAt {
					answered = k
				}
			}
		}
		return (answered >= 0 && k >= answered+10) || k*frame >= end+8*rate
	}
	if err := s.stream(ctx, mic, stop); err != nil && !errors.Is(err, errServerClosed) {
		return err
	}
	evs, frames := s.snapshot()
	p2ms := p2on * 1000 / rate
	for _, e := range evs {
		if e.Type != "input_audio_buffer.speech_stopped" {
			continue
		}
		if it.Cond.Kind == kindHesitation && e.At < endAt && e.AudioMS < p2ms {
			res.CutOff = true
		}
		if e.At >= endAt-100*time.Millisecond && res.EoTMS < 0 {
			res.EoTMS = float64(e.At-endAt) / float64(time.Millisecond)
		}
	}
	if it.Cond.Kind == kindHesitation {
		return nil
	}
	// The answer: the first response created after the caller began.
	startAt := time.Duration(at) * time.Second / rate
	resp := ""
	for _, e := range evs {
		if e.Type == "response.created" && e.At > startAt && resp == "" {
			resp = e.ResponseID
		}
		if e.Type == "conversation.item.input_audio_transcription.completed" {
			res.Transcript = e.Transcript
		}
	}
	for _, f := range frames {
		if resp != "" && f.ResponseID == resp {
			res.LatencyMS = float64(f.At-endAt) / float64(time.Millisecond)
			break
		}
	}
	res.Empty = res.LatencyMS < 0
	return nil
}

func loudString(ref []bool) string {
	b := make([]byte, len(ref))
	for i, l := range ref {
		b[i] = '_'
		if l {
			b[i] = '#'
		}
	}
	return string(b)
}

// playString draws frames as played: # loud, _ quiet, . nothing played.
func playString(frames []recvFrame) string {
	var b []byte
	if len(frames) == 0 {
		return ""
	}
	pos := frames[0].Pos
	for _, f := range frames {
		for ; f.Pos > pos+frame/2; pos += frame {
			b = append(b, '.')
		}
		if dbfs(f.PCM) > loudDB {
			b = append(b, '#')
		} else {
			b = append(b, '_')
		}
		pos = f.Pos + len(f.PCM)
	}
	return string(b)
}
