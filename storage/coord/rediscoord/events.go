package rediscoord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voiced/voiced/storage/coord"
)

// Events map onto Redis Streams one to one: Publish is XADD, a group is a consumer
// group created at "0" on first read, Read is XAUTOCLAIM of entries idle for
// Visibility followed by XREADGROUP ">", Ack is XACK. The receipt is the stream entry
// id; the event id is a field of the entry, so it survives redelivery unchanged.

// maxClaimScans bounds the XAUTOCLAIM calls of one Read; each scans up to 10×count
// entries of the pending list.
const maxClaimScans = 8

// Publish implements [coord.EventStream].
func (c *Coord) Publish(ctx context.Context, stream string, ev coord.Event) (string, error) {
	if err := coord.CheckKey("stream", stream, 0, false); err != nil {
		return "", err
	}
	if ev.ID == "" {
		ev.ID = coord.NewToken()
	}
	err := c.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: c.key("ev:", stream),
		MaxLen: c.cfg.StreamMaxLen,
		Approx: true,
		Values: []any{"id", ev.ID, "type", ev.Type, "data", ev.Data},
	}).Err()
	if err != nil {
		return "", fmt.Errorf("publish %s to %s: %w", ev.Type, stream, err)
	}
	return ev.ID, nil
}

// Read implements [coord.EventStream].
func (c *Coord) Read(ctx context.Context, a coord.ReadArgs) ([]coord.Delivery, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if a.Max < 1 {
		a.Max = 1
	}
	key := c.key("ev:", a.Stream)
	out, err := c.read(ctx, key, a)
	if isNoGroup(err) {
		err = c.rdb.XGroupCreateMkStream(ctx, key, a.Group, "0").Err()
		if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
			return nil, fmt.Errorf("create group %s on %s: %w", a.Group, a.Stream, err)
		}
		out, err = c.read(ctx, key, a)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s as %s/%s: %w", a.Stream, a.Group, a.Consumer, err)
	}
	return out, nil
}

func (c *Coord) read(ctx context.Context, key string, a coord.ReadArgs) ([]coord.Delivery, error) {
	out, err := c.claim(ctx, key, a)
	if err != nil || len(out) == a.Max {
		return out, err
	}
	block := time.Duration(-1) // no BLOCK argument: BLOCK 0 would wait forever
	if len(out) == 0 && a.Wait > 0 {
		block = a.Wait
		if dl, ok := ctx.Deadline(); ok {
			block = min(block, time.Until(dl))
		}
		block = max(block, time.Millisecond)
	}
	res, err := c.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group:    a.Group,
		Consumer: a.Consumer,
		Streams:  []string{key, ">"},
		Count:    int64(a.Max - len(out)),
		Block:    block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, s := range res {
		for _, m := range s.Messages {
			out = append(out, delivery(m, 1))
		}
	}
	return out, nil
}

// claim takes over, oldest first, up to a.Max entries of the group pending for at
// least Visibility, whoever held them, and reads their delivery counts.
func (c *Coord) claim(ctx context.Context, key string, a coord.ReadArgs) ([]coord.Delivery, error) {
	var msgs []redis.XMessage
	start := "0-0"
	for range maxClaimScans {
		got, next, err := c.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream:   key,
			Group:    a.Group,
			Consumer: a.Consumer,
			MinIdle:  c.cfg.Visibility,
			Start:    start,
			Count:    int64(a.Max - len(msgs)),
		}).Result()
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, got...)
		if next == "0-0" || len(msgs) >= a.Max {
			break
		}
		start = next
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	counts := make([]*redis.XPendingExtCmd, len(msgs))
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range msgs {
			counts[i] = p.XPendingExt(ctx, &redis.XPendingExtArgs{
				Stream: key, Group: a.Group, Start: m.ID, End: m.ID, Count: 1,
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("delivery counts: %w", err)
	}
	out := make([]coord.Delivery, len(msgs))
	for i, m := range msgs {
		n := 2 // claimed entries were delivered at least once before
		if p := counts[i].Val(); len(p) == 1 {
			n = int(p[0].RetryCount)
		}
		out[i] = delivery(m, n)
	}
	return out, nil
}

func delivery(m redis.XMessage, count int) coord.Delivery {
	return coord.Delivery{
		Event: coord.Event{
			ID:   field(m.Values, "id"),
			Type: field(m.Values, "type"),
			Data: bytesField(m.Values, "data"),
		},
		Receipt:    m.ID,
		Deliveries: count,
	}
}

// Ack implements [coord.EventStream].
func (c *Coord) Ack(ctx context.Context, stream, group string, receipts ...string) error {
	if err := coord.CheckKey("stream", stream, 0, false); err != nil {
		return err
	}
	if len(receipts) == 0 {
		return nil
	}
	err := c.rdb.XAck(ctx, c.key("ev:", stream), group, receipts...).Err()
	if err != nil && !isNoGroup(err) {
		return fmt.Errorf("ack %d on %s/%s: %w", len(receipts), stream, group, err)
	}
	return nil
}

func isNoGroup(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOGROUP")
}
