package rediscoord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voiced/voiced/storage/coord"
)

// Commands travel in one Redis stream per node rather than pub/sub: a subscriber
// remembers the id of the last command it saw and resumes from there after a dropped
// connection, so commands sent while it reconnects are delivered late instead of lost.
// The stream is trimmed to CommandMaxLen and expires when no command has been sent for
// a while, so dead nodes leave nothing behind.

// cmdStreamTTL is how long a node's command stream outlives its last command.
func (c *Coord) cmdStreamTTL() time.Duration {
	return max(10*c.cfg.NodeTTL, time.Minute)
}

func (c *Coord) cmdKey(nodeID string) string {
	return c.key("{reg}:cmd:", nodeID)
}

// Send implements [coord.Commander].
func (c *Coord) Send(ctx context.Context, nodeID string, cmd coord.Command) (string, error) {
	if err := coord.CheckKey("node id", nodeID, 0, false); err != nil {
		return "", err
	}
	if cmd.ID == "" {
		cmd.ID = coord.NewToken()
	}
	keys := []string{c.seenKey, c.cmdKey(nodeID)}
	ok, err := sendScript.Run(ctx, c.rdb, keys, nodeID, ms(c.cfg.NodeTTL), c.cfg.CommandMaxLen,
		ms(c.cmdStreamTTL()), cmd.ID, cmd.CallID, cmd.Type, cmd.Data).Int()
	if err != nil {
		return "", fmt.Errorf("send %s to node %s: %w", cmd.Type, nodeID, err)
	}
	if ok == 0 {
		return "", coord.ErrUnknownNode
	}
	return cmd.ID, nil
}

// Commands implements [coord.Commander]. The subscription starts after the last command
// stored when it is opened.
func (c *Coord) Commands(ctx context.Context, nodeID string) (coord.Subscription, error) {
	if err := coord.CheckKey("node id", nodeID, 0, false); err != nil {
		return nil, err
	}
	key := c.cmdKey(nodeID)
	last := "0-0"
	msgs, err := c.rdb.XRevRangeN(ctx, key, "+", "-", 1).Result()
	if err != nil {
		return nil, fmt.Errorf("subscribe node %s: %w", nodeID, err)
	}
	if len(msgs) == 1 {
		last = msgs[0].ID
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, coord.ErrClosed
	}
	subCtx, cancel := context.WithCancel(ctx)
	s := &subscription{out: make(chan coord.Command), cancel: cancel}
	c.subs.Add(1)
	s.exited.Add(1)
	go func() {
		defer c.subs.Done()
		defer s.exited.Done()
		defer close(s.out)
		c.follow(subCtx, nodeID, key, last, s.out)
	}()
	return s, nil
}

// follow reads the node's stream after last and forwards each command to out until
// ctx ends or the Coord is closed. A blocked XREAD does not observe either, so follow
// stops within Config.Poll. Read errors are retried with backoff from the same
// position, logged once per outage.
func (c *Coord) follow(ctx context.Context, nodeID, key, last string, out chan<- coord.Command) {
	log := c.log.With("node_id", nodeID)
	backoff := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.closing:
			return
		default:
		}
		res, err := c.rdb.XRead(ctx, &redis.XReadArgs{
			Streams: []string{key, last},
			Count:   64,
			Block:   c.cfg.Poll,
		}).Result()
		switch {
		case errors.Is(err, redis.Nil):
			continue
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			if backoff == 0 {
				log.Warn("command subscription read failed, retrying", "err", err)
			}
			backoff = min(max(2*backoff, 50*time.Millisecond), c.cfg.Poll)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			case <-c.closing:
			}
			continue
		}
		if backoff != 0 {
			log.Info("command subscription resumed")
			backoff = 0
		}
		for _, stream := range res {
			for _, m := range stream.Messages {
				last = m.ID
				cmd := coord.Command{
					ID:     field(m.Values, "id"),
					CallID: field(m.Values, "call"),
					Type:   field(m.Values, "type"),
					Data:   bytesField(m.Values, "data"),
				}
				select {
				case out <- cmd:
				case <-ctx.Done():
					return
				case <-c.closing:
					return
				}
			}
		}
	}
}

// subscription is the [coord.Subscription] of one follow goroutine.
type subscription struct {
	out    chan coord.Command
	cancel context.CancelFunc
	once   sync.Once
	exited sync.WaitGroup
}

// C implements [coord.Subscription].
func (s *subscription) C() <-chan coord.Command { return s.out }

// Close implements [coord.Subscription]. It returns within about Config.Poll.
func (s *subscription) Close() error {
	s.once.Do(s.cancel)
	s.exited.Wait()
	return nil
}

func field(v map[string]any, name string) string {
	s, _ := v[name].(string)
	return s
}

func bytesField(v map[string]any, name string) []byte {
	s := field(v, name)
	if s == "" {
		return nil
	}
	return []byte(s)
}
