package main

import (
	"context"
	"errors"
)

func openRedisCoord(ctx context.Context, e *env, c *config) error {
	return errors.New("--redis-url: Redis coordination is wired in the next commit")
}
