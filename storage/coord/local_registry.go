package coord

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Heartbeat implements [Registry].
func (l *Local) Heartbeat(_ context.Context, n Node) error {
	if err := CheckKey("node id", n.ID, 0, false); err != nil {
		return err
	}
	now, err := l.begin()
	if err != nil {
		return err
	}
	defer l.mu.Unlock()
	n.Seen = now
	l.nodes[n.ID] = n
	return nil
}

// Nodes implements [Registry].
func (l *Local) Nodes(_ context.Context) ([]Node, error) {
	now, err := l.begin()
	if err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	return l.liveNodesLocked(now), nil
}

// Leave implements [Registry].
func (l *Local) Leave(_ context.Context, id string) error {
	if _, err := l.begin(); err != nil {
		return err
	}
	defer l.mu.Unlock()
	delete(l.nodes, id)
	return nil
}

// Pick implements [Placer].
func (l *Local) Pick(_ context.Context) (Node, error) {
	now, err := l.begin()
	if err != nil {
		return Node{}, err
	}
	nodes := l.liveNodesLocked(now)
	l.mu.Unlock()
	return Choose(nodes, l.cfg.HotCPU, l.cfg.Intn)
}

func (l *Local) liveNodesLocked(now time.Time) []Node {
	out := make([]Node, 0, len(l.nodes))
	for _, n := range l.nodes {
		if l.liveLocked(n, now) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (l *Local) liveLocked(n Node, now time.Time) bool {
	return now.Sub(n.Seen) < l.cfg.NodeTTL
}
