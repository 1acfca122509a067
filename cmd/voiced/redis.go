package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voiced/voiced/storage/coord/rediscoord"
)

// openRedisCoord connects to --redis-url and uses it for coordination.
func openRedisCoord(ctx context.Context, e *env, c *config) error {
	opt, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		return fmt.Errorf("invalid --redis-url: %w", err)
	}
	rdb := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return fmt.Errorf("connect to --redis-url %s: %w", opt.Addr, err)
	}
	rc, err := rediscoord.New(rediscoord.Config{}, nil, rdb)
	if err != nil {
		rdb.Close()
		return err
	}
	e.coord, e.coordKind = rc, "redis"
	e.closers = append(e.closers, func() { rdb.Close() }, func() { rc.Close() })
	return nil
}
