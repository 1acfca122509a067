package rediscoord

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voiced/voiced/storage/coord"
)

// nodeLoad is the JSON stored per node; the id is the hash field, Seen the score.
type nodeLoad struct {
	Addr     string  `json:"addr,omitempty"`
	Calls    int     `json:"calls"`
	CPU      float64 `json:"cpu"`
	Draining bool    `json:"draining,omitempty"`
}

// Heartbeat implements [coord.Registry].
func (c *Coord) Heartbeat(ctx context.Context, n coord.Node) error {
	if err := coord.CheckKey("node id", n.ID, 0, false); err != nil {
		return err
	}
	data, err := json.Marshal(nodeLoad{Addr: n.Addr, Calls: n.Calls, CPU: n.CPU, Draining: n.Draining})
	if err != nil {
		return fmt.Errorf("encode node %s: %w", n.ID, err)
	}
	keys := []string{c.seenKey, c.nodesKey}
	if err := heartbeatScript.Run(ctx, c.rdb, keys, n.ID, data).Err(); err != nil {
		return fmt.Errorf("heartbeat %s: %w", n.ID, err)
	}
	return nil
}

// Nodes implements [coord.Registry].
func (c *Coord) Nodes(ctx context.Context) ([]coord.Node, error) {
	keys := []string{c.seenKey, c.nodesKey}
	res, err := nodesScript.Run(ctx, c.rdb, keys, ms(c.cfg.NodeTTL)).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	nodes := make([]coord.Node, 0, len(res)/3)
	for i := 0; i+2 < len(res); i += 3 {
		seen, err := strconv.ParseFloat(res[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("node %s seen %q: %w", res[i], res[i+1], err)
		}
		var load nodeLoad
		if err := json.Unmarshal([]byte(res[i+2]), &load); err != nil {
			return nil, fmt.Errorf("decode node %s: %w", res[i], err)
		}
		nodes = append(nodes, coord.Node{
			ID:       res[i],
			Addr:     load.Addr,
			Calls:    load.Calls,
			CPU:      load.CPU,
			Draining: load.Draining,
			Seen:     time.UnixMilli(int64(seen)),
		})
	}
	slices.SortFunc(nodes, func(a, b coord.Node) int { return strings.Compare(a.ID, b.ID) })
	return nodes, nil
}

// Leave implements [coord.Registry].
func (c *Coord) Leave(ctx context.Context, id string) error {
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, c.seenKey, id)
		p.HDel(ctx, c.nodesKey, id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("leave %s: %w", id, err)
	}
	return nil
}

// Pick implements [coord.Placer].
func (c *Coord) Pick(ctx context.Context) (coord.Node, error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return coord.Node{}, err
	}
	return coord.Choose(nodes, c.cfg.HotCPU, c.cfg.Intn)
}
