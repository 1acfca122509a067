package coord

import (
	"context"
	"time"
)

// Node is a media node as it last reported itself.
type Node struct {
	// ID names the node uniquely and stably across its heartbeats (hostname or pod name).
	ID string
	// Addr is where the control plane and proxies reach the node (host:port).
	Addr string
	// Calls is the number of live calls and sessions the node holds.
	Calls int
	// CPU is the node's CPU use as a fraction of its capacity, 0..1.
	CPU float64
	// Draining marks a node that finishes its calls but takes no new ones.
	Draining bool
	// Seen is when the registry received the last heartbeat, on the registry's clock.
	// It is set by the registry; Heartbeat ignores it.
	Seen time.Time
}

// Registry tracks live media nodes. Safe for concurrent use.
type Registry interface {
	// Heartbeat records n (by n.ID) as live now with its current load, replacing what
	// the node reported before. Nodes call it every second.
	Heartbeat(ctx context.Context, n Node) error
	// Nodes lists the live nodes, draining ones included, sorted by ID.
	Nodes(ctx context.Context) ([]Node, error)
	// Leave removes a node at once, for a clean shutdown; unknown ids are not an error.
	Leave(ctx context.Context, id string) error
}

// Placer chooses the media node for a new outbound call or WebRTC/WebSocket session.
type Placer interface {
	// Pick returns a live, non-draining node chosen by [Choose], or [ErrNoNodes].
	Pick(ctx context.Context) (Node, error)
}

// Choose applies power-of-two-choices to nodes: it skips draining nodes, draws two
// distinct candidates with intn (uniform in [0, n)) and returns the less loaded one as
// ordered by [LessLoaded]. With one candidate it returns it; with none, [ErrNoNodes].
// Choosing between two random nodes rather than the global minimum avoids every
// replica sending its next calls to the same node between two heartbeats.
func Choose(nodes []Node, hotCPU float64, intn func(n int) int) (Node, error) {
	var buf [16]int
	idx := buf[:0]
	for i := range nodes {
		if !nodes[i].Draining {
			idx = append(idx, i)
		}
	}
	switch len(idx) {
	case 0:
		return Node{}, ErrNoNodes
	case 1:
		return nodes[idx[0]], nil
	}
	i := intn(len(idx))
	j := intn(len(idx) - 1)
	if j >= i {
		j++
	}
	a, b := nodes[idx[i]], nodes[idx[j]]
	if LessLoaded(b, a, hotCPU) {
		return b, nil
	}
	return a, nil
}

// LessLoaded reports whether a should take a new call rather than b. The score is
// lexicographic: a node below hotCPU beats a saturated one; then fewer calls wins (calls
// are the unit of work and the steadiest signal, CPU being sampled); then lower CPU.
// On a full tie it returns false, so [Choose] keeps its first draw, itself random.
func LessLoaded(a, b Node, hotCPU float64) bool {
	aHot, bHot := a.CPU >= hotCPU, b.CPU >= hotCPU
	if aHot != bHot {
		return bHot
	}
	if a.Calls != b.Calls {
		return a.Calls < b.Calls
	}
	return a.CPU < b.CPU
}
