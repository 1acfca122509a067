package quality

import (
	"slices"
	"sync"
	"time"
)

// Latency measures an agent's response latency over a call: from the end
// of each caller turn to the first audio of the agent's answer, fed with
// the conversation engine's turn times (media/agent's Turn: a caller
// turn's End is when the caller stopped speaking, an agent turn's Start
// when its first audio played). An agent turn answers the latest caller
// turn that ended before its first audio and is still unanswered; caller
// turns that ended later wait for a later agent turn (talk-over, a cut
// answer). The turns may be fed in any order: the engine reports an agent
// turn when it ends, often after the caller's next turn was reported.
// Safe for concurrent use; it is fed once per turn.
type Latency struct {
	mu      sync.Mutex
	pending []time.Time // ends of the caller's unanswered turns
	samples []time.Duration
}

// CallerTurn records a caller turn that ended at end.
func (l *Latency) CallerTurn(end time.Time) {
	l.mu.Lock()
	l.pending = append(l.pending, end)
	l.mu.Unlock()
}

// AgentTurn records an agent turn whose first audio played at start.
func (l *Latency) AgentTurn(start time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var latest time.Time
	kept := l.pending[:0]
	for _, end := range l.pending {
		switch {
		case end.After(start):
			kept = append(kept, end)
		case end.After(latest):
			latest = end
		}
	}
	if !latest.IsZero() {
		l.samples = append(l.samples, start.Sub(latest))
	}
	l.pending = kept
}

// LatencySummary is the distribution of a call's response latencies
// (nearest-rank percentiles).
type LatencySummary struct {
	P50, P95, Max time.Duration
	Turns         int
}

// Summary returns the latencies so far; Turns is 0 when no caller turn
// was answered.
func (l *Latency) Summary() LatencySummary {
	l.mu.Lock()
	s := slices.Clone(l.samples)
	l.mu.Unlock()
	if len(s) == 0 {
		return LatencySummary{}
	}
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1 // ceil(p n) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return LatencySummary{P50: rank(0.50), P95: rank(0.95), Max: s[len(s)-1], Turns: len(s)}
}
