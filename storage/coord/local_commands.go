package coord

import (
	"context"
	"slices"
	"sync"
)

// Send implements [Commander].
func (l *Local) Send(_ context.Context, nodeID string, cmd Command) (string, error) {
	if err := CheckKey("node id", nodeID, 0, false); err != nil {
		return "", err
	}
	if cmd.ID == "" {
		cmd.ID = NewToken()
	}
	cmd.Data = cloneBytes(cmd.Data)
	now, err := l.begin()
	if err != nil {
		return "", err
	}
	defer l.mu.Unlock()
	if n, ok := l.nodes[nodeID]; !ok || !l.liveLocked(n, now) {
		return "", ErrUnknownNode
	}
	for s := range l.subs[nodeID] {
		s.push(cmd, int(l.cfg.CommandMaxLen))
	}
	return cmd.ID, nil
}

// Commands implements [Commander].
func (l *Local) Commands(ctx context.Context, nodeID string) (Subscription, error) {
	if err := CheckKey("node id", nodeID, 0, false); err != nil {
		return nil, err
	}
	if _, err := l.begin(); err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	s := &localSub{
		wake: make(chan struct{}, 1),
		out:  make(chan Command),
		done: make(chan struct{}),
	}
	set := l.subs[nodeID]
	if set == nil {
		set = make(map[*localSub]struct{})
		l.subs[nodeID] = set
	}
	set[s] = struct{}{}
	l.subsWG.Add(1)
	s.exited.Add(1)
	go func() {
		defer l.subsWG.Done()
		defer s.exited.Done()
		defer close(s.out)
		defer l.unsubscribe(nodeID, s)
		s.run(ctx, l.closing)
	}()
	return s, nil
}

func (l *Local) unsubscribe(nodeID string, s *localSub) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.subs[nodeID], s)
	if len(l.subs[nodeID]) == 0 {
		delete(l.subs, nodeID)
	}
}

// localSub queues the commands for one subscriber so Send never blocks on a slow one;
// its goroutine moves them to the unbuffered out channel in order.
type localSub struct {
	mu    sync.Mutex
	queue []Command
	wake  chan struct{} // capacity 1: a pending "queue is not empty"

	out    chan Command
	done   chan struct{}
	close  sync.Once
	exited sync.WaitGroup
}

// push appends cmd, dropping the oldest beyond limit like a trimmed Redis stream.
func (s *localSub) push(cmd Command, limit int) {
	s.mu.Lock()
	s.queue = append(s.queue, cmd)
	if over := len(s.queue) - limit; over > 0 {
		s.queue = slices.Delete(s.queue, 0, over)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *localSub) pop() (Command, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return Command{}, false
	}
	c := s.queue[0]
	s.queue[0] = Command{}
	s.queue = s.queue[1:]
	return c, true
}

func (s *localSub) run(ctx context.Context, closing <-chan struct{}) {
	for {
		c, ok := s.pop()
		if !ok {
			select {
			case <-s.wake:
				continue
			case <-s.done:
			case <-ctx.Done():
			case <-closing:
			}
			return
		}
		select {
		case s.out <- c:
		case <-s.done:
			return
		case <-ctx.Done():
			return
		case <-closing:
			return
		}
	}
}

// C implements [Subscription].
func (s *localSub) C() <-chan Command { return s.out }

// Close implements [Subscription].
func (s *localSub) Close() error {
	s.close.Do(func() { close(s.done) })
	s.exited.Wait()
	return nil
}

func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}
