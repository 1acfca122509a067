package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage/sqltest"
)

// The short scorecard: a real `voiced serve` (this tree's, offline
// providers) scored over the realtime WebSocket in real time on the two
// cases issue 31 says must never fail: the agent's own audio fed back at
// -10 dB, 0-300 ms late, never interrupts it, and a backchannel never
// stops it and loses no words.
func TestScorecardEchoAndBackchannel(t *testing.T) {
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		sqltest.Unavailable(t, "espeak-ng", err)
	}
	bin := filepath.Join(t.TempDir(), "voiced")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/voiced/voiced/cmd/voiced").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	file := filepath.Join(t.TempDir(), "score.json")
	var stdout, stderr bytes.Buffer
	code, err := run(ctx, []string{"-bin", bin, "-items", "4", "-parallel", "4", "-conditions", "echo -10 dB,backchannel",
		"-cache", t.TempDir(), "-json", file}, &stdout, &stderr)
	require.NoError(t, err, "%s", stderr.String())
	require.Equal(t, 0, code, "%s", stderr.String())
	t.Logf("%s", stdout.String())
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Rows, 2)
	// Real-time streaming on a loaded machine: an echo trial in which the
	// server's audio stalled (more than 150 ms between two frames) has its
	// echo come back later than the engine played it (the client plays
	// late frames late), which is not the case under test, so those are
	// reported and left out; at least one must have run clean. A
	// backchannel must never stop the agent, stall or not.
	clean := 0
	for _, r := range rep.Results {
		require.Empty(t, r.Err, "%+v", r)
		require.Zero(t, r.ClosedNoReason, "%+v", r)
		// Each trial heard the agent's whole clean rendering (a scorer
		// that heard nothing would pass the checks below).
		require.Greater(t, r.RefFrames, 100, "%+v", r)
		switch r.Cond {
		case "echo -10 dB":
			if r.MaxGapMS > 150 {
				t.Logf("left out, the server's audio stalled: %+v", r)
				continue
			}
			clean++
			require.False(t, r.Stopped || r.Paused, "echo interrupted the agent: %+v", r)
			require.Zero(t, r.SpeechStarted, "echo was heard as the caller: %+v", r)
		case "backchannel":
			require.False(t, r.Stopped, "a backchannel stopped the agent: %+v", r)
			require.True(t, r.Intact, "a backchannel cost words: %+v", r)
		default:
			t.Fatalf("unexpected condition %q", r.Cond)
		}
	}
	require.Positive(t, clean, "no echo trial ran without a stall: the machine is too loaded to score real time")
}

// quietAt finds a pause inserted into the rendering, ignores the
// rendering's own pauses and a frame of jitter, and says where the pause
// began.
func TestQuietAtFindsInsertedPause(t *testing.T) {
	loudF, quietF := make([]int16, frame), make([]int16, frame)
	for i := range loudF {
		loudF[i] = 3000
	}
	ref := []bool{}
	for range 30 {
		ref = append(ref, true)
	}
	for range 6 { // the rendering's own pause: 120 ms
		ref = append(ref, false)
	}
	for range 30 {
		ref = append(ref, true)
	}
	play := func(pattern []bool, gapAt, gap int) []recvFrame {
		var out []recvFrame
		pos := 1000
		for i, l := range pattern {
			if i == gapAt {
				pos += gap * frame // nothing played: a gap in the deltas
			}
			f := quietF
			if l {
				f = loudF
			}
			out = append(out, recvFrame{Pos: pos, PCM: f})
			pos += frame
		}
		return out
	}
	// The clean rendering, with one frame of edge jitter: no pause.
	jitter := append([]bool(nil), ref...)
	jitter[30], jitter[29] = true, false
	require.Equal(t, pause{at: -1}, quietAt(play(jitter, -1, 0), newRendering(ref), 0))
	// Quiet for 300 ms in the middle of a word from frame 10.
	paused := append(append(append([]bool(nil), ref[:10]...), make([]bool, 15)...), ref[10:]...)
	require.Equal(t, pause{at: 1000 + 10*frame, frames: 15}, quietAt(play(paused, -1, 0), newRendering(ref), 0))
	// The same pause as a gap in the deltas.
	require.Equal(t, pause{at: 1000 + 10*frame, frames: 15, gap: true}, quietAt(play(ref, 10, 15), newRendering(ref), 0))
	// A pause before from is not one after it.
	require.Equal(t, pause{at: -1}, quietAt(play(paused, -1, 0), newRendering(ref), 1000+40*frame))
	// A second rendering that pauses there as long: no pause.
	require.Equal(t, pause{at: -1}, quietAt(play(paused, -1, 0), newRendering(ref, paused), 0))
}

// The corpus is the seed's: the same items twice, other items for another
// seed.
func TestItemsAreReproducible(t *testing.T) {
	for _, c := range conditions {
		a, b := items(c, 10, 31), items(c, 10, 31)
		require.Equal(t, a, b, c.Name)
		require.NotEqual(t, a, items(c, 10, 32), c.Name)
	}
	echo := items(conditions[0], 40, 1)
	require.Equal(t, time.Duration(0), echo[0].Delay)
	require.Equal(t, 300*time.Millisecond, echo[39].Delay)
}

// A/B: B worse than A beyond the tolerance on any goal is a regression;
// within it, none.
func TestCompareFlagsRegressions(t *testing.T) {
	a := []row{
		{Condition: "echo -10 dB", Kind: kindEcho, Items: 40, Rate: 0},
		{Condition: "barge-in quiet", Kind: kindBargeIn, Items: 40, Rate: 0, QuietP50: 700, QuietP99: 900},
		{Condition: "latency x10", Kind: kindLatency, Items: 40, LatencyP50: 2000, LatencyP99: 3000},
	}
	b := []row{
		{Condition: "echo -10 dB", Kind: kindEcho, Items: 40, Rate: 0.025},
		{Condition: "barge-in quiet", Kind: kindBargeIn, Items: 40, Rate: 0, QuietP50: 750, QuietP99: 1200},
		{Condition: "latency x10", Kind: kindLatency, Items: 40, LatencyP50: 1500, LatencyP99: -1},
	}
	regs := compare(a, b, 0.05, 100)
	require.Equal(t, []regression{
		{"barge-in quiet", "quiet p99 ms", 900, 1200},
		{"latency x10", "latency p99 ms", 3000, -1},
	}, regs)
	require.Empty(t, compare(a, a, 0, 0))
	b[0].Rate = 0.1
	require.Contains(t, compare(a, b, 0.05, 100), regression{"echo -10 dB", "rate", 0, 0.1})
}

// The end-of-turn and latency goals follow the turn detection scored.
func TestGoalsFollowTurnDetection(t *testing.T) {
	for turn, want := range map[string]goals{
		"": {700, 800, 1200, false},
		`{"type":"server_vad","silence_duration_ms":300}`: {500, 800, 1200, false},
		`{"type":"semantic_vad","eagerness":"high"}`:      {400, 700, 1200, true},
	} {
		g, err := goalsFor(turn)
		require.NoError(t, err, turn)
		require.Equal(t, want, g, turn)
	}
	for _, bad := range []string{`{"type":"none"}`, `not json`} {
		_, err := goalsFor(bad)
		require.Error(t, err, bad)
	}
}

// The semantic_vad rows carry a valid turn_detection object, and their
// latency row also holds the end of turn of its complete sentences to
// 400 ms.
func TestSemanticRows(t *testing.T) {
	var lat condition
	for _, c := range pick("semantic") {
		g, err := goalsFor(c.Turn)
		require.NoError(t, err, c.Name)
		require.True(t, g.Semantic, c.Name)
		if c.Kind == kindLatency {
			lat = c
		}
	}
	require.Equal(t, "semantic latency x10", lat.Name)
	g, err := goalsFor(lat.Turn)
	require.NoError(t, err)
	rs := func(eot float64) []result {
		out := make([]result, 40)
		for i := range out {
			out[i] = result{Cond: lat.Name, LatencyMS: 600, EoTMS: eot, QuietMS: -1}
		}
		return out
	}
	require.True(t, summarize(lat, rs(350), g).Met)
	slow := summarize(lat, rs(450), g)
	require.False(t, slow.Met)
	require.Equal(t, 450.0, slow.EoTP50)
	// server_vad's latency row has no end-of-turn bound.
	srv, err := goalsFor("")
	require.NoError(t, err)
	require.True(t, summarize(condition{Name: "latency x10", Kind: kindLatency}, rs(450), srv).Met)
}

// A negative -duration is refused before anything starts.
func TestSoakDurationFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code, err := run(context.Background(), []string{"-duration", "-1s", "-cache", t.TempDir()}, &stdout, &stderr)
	require.Equal(t, 2, code)
	require.ErrorContains(t, err, "-duration must not be negative")
}

// outcome: a phone agent that paused, resumed and then stopped within the
// window stopped (the barge-in was heard, late), with its quiet time from
// the first pause; a stop after the window leaves the pause; an agent
// that resumed and then ended early, words missing, stopped at its end.
func TestOutcomeStopAfterResumedPause(t *testing.T) {
	ref := make([]bool, 200)
	for i := range ref {
		ref[i] = true
	}
	// 20 loud, a 300 ms pause, 20 loud (resumed), quiet 1.2 s, the rest.
	var pat []bool
	add := func(n int, l bool) {
		for range n {
			pat = append(pat, l)
		}
	}
	add(20, true)
	add(15, false)
	add(20, true)
	add(60, false)
	add(160, true)
	frames := playPattern(pat)
	pauseAt, stopAt := 1000+20*frame, 1000+55*frame
	r := newRendering(ref)
	first, p := outcome(frames, r, 0, -1, nil)
	require.Equal(t, pause{at: pauseAt, frames: 15}, first)
	require.Equal(t, pause{at: stopAt, frames: 60}, p, "the stop after the resumed pause decides")
	first, p = outcome(frames, r, 0, stopAt-1, nil)
	require.Equal(t, first, p, "a stop after the window is not the stimulus's doing")
	require.Equal(t, pauseAt, p.at)

	// Resumed, then ended early: its last loud frame is the stop.
	short := playPattern(pat[:55])
	end := &pause{at: 1000 + 55*frame, frames: 1 << 20}
	first, p = outcome(short, r, 0, -1, end)
	require.Equal(t, pauseAt, first.at)
	require.Equal(t, *end, p)
	// No pause at all, words missing: the end is both.
	first, p = outcome(playPattern(pat[:20]), r, 0, -1, end)
	require.Equal(t, *end, first)
	require.Equal(t, *end, p)
	// Spoke on: nothing.
	first, p = outcome(playPattern(ref), r, 0, -1, nil)
	require.Equal(t, pause{at: -1}, first)
	require.Equal(t, pause{at: -1}, p)
}

// newRendering keeps, after each loud frame, the longest pause any
// rendering makes there, and the fewest loud frames any has.
func TestNewRenderingMerges(t *testing.T) {
	a := []bool{false, true, true, false, false, true, true, true}         // 2 loud, 2 quiet, 3 loud
	b := []bool{true, true, false, false, false, false, true, true, false} // 2 loud, 4 quiet, 2 loud, 1 quiet
	r := newRendering(a, b)
	require.Equal(t, []int{1, 0, 4, 0, 1, 0}, r.gaps)
	require.Equal(t, []int{1, 0, 4, 4, 4, 4, 0, 0, 1}, r.quiet, "by time: the longest quiet run over each frame")
	require.Equal(t, 4, r.loud)
	require.Equal(t, a, r.mask)
	one := newRendering(a)
	require.Equal(t, []int{1, 0, 2, 0, 0, 0}, one.gaps)
	require.Equal(t, 5, one.loud)
}

// A phone response in a shorter rendering of its text is no stop; one a
// barge-in cut off is.
func TestEndedEarly(t *testing.T) {
	for _, c := range []struct {
		loud, ref int
		want      bool
	}{{224, 232, false}, {227, 232, false}, {233, 227, false}, {200, 232, true}, {49, 245, true}} {
		if got := endedEarly(c.loud, c.ref); got != c.want {
			t.Errorf("endedEarly(%d, %d) = %v, want %v", c.loud, c.ref, got, c.want)
		}
	}
}

// A text rendered in its louder form (the gaps between words filled) is
// ahead of the reference by loud frames at the sentence's end: its pause
// there is the rendering's own by time. A real pause is still one, and
// after it only loud frames align.
func TestQuietAtAlignsFormsByTime(t *testing.T) {
	run := func(p []bool, n int, l bool) []bool {
		for range n {
			p = append(p, l)
		}
		return p
	}
	// Reference: 10 words of 4 loud frames 2 quiet apart, a 15-frame
	// sentence end, 40 loud.
	var ref, loud []bool
	for range 10 {
		ref = run(run(ref, 4, true), 2, false)
		loud = run(loud, 6, true) // the louder form: no gaps
	}
	ref = run(run(ref, 15, false), 40, true)
	loud = run(run(loud, 15, false), 40, true)
	r := newRendering(ref)
	require.Equal(t, pause{at: -1}, quietAt(playPattern(loud), r, 0), "the sentence end, 20 loud frames ahead")

	// A real 20-frame pause in the louder form's words: found, and the
	// sentence end after it is aligned by loud frames alone.
	paused := append(run(append([]bool(nil), loud[:20]...), 20, false), loud[20:]...)
	require.Equal(t, pause{at: 1000 + 20*frame, frames: 20}, quietAt(playPattern(paused), r, 0))
	require.Equal(t, 1000+80*frame, quietAt(playPattern(paused), r, 1000+45*frame).at,
		"after a pause, the sentence end 20 loud frames ahead of the reference's is no longer the rendering's by time")
}

// playPattern plays a loud mask as received frames, one 20 ms frame each
// from position 1000: loud ones at 3000, quiet ones silent.
func playPattern(pattern []bool) []recvFrame {
	loud, quiet := make([]int16, frame), make([]int16, frame)
	for i := range loud {
		loud[i] = 3000
	}
	var out []recvFrame
	for i, l := range pattern {
		f := quiet
		if l {
			f = loud
		}
		out = append(out, recvFrame{Pos: 1000 + i*frame, PCM: f})
	}
	return out
}
