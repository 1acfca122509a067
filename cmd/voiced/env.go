package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
)

// env is what every command that touches state opens: the migrated
// database, the store and the coordinator.
type env struct {
	db        *storage.DB
	store     *storage.Store
	coord     coordinator
	coordKind string
	closers   []func()
	// key is the secret key; serve derives its URL-signing key from it.
	key []byte
}

// coordinator is the part of coord the commands wire into the server.
type coordinator interface {
	coord.Limiter
}

func openEnv(ctx context.Context, c *config, log *slog.Logger) (*env, error) {
	key, err := c.secretKey()
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	db, err := storage.Open(ctx, storage.Config{URL: c.DatabaseURL, DataDir: c.DataDir})
	if err != nil {
		return nil, err
	}
	e := &env{db: db, key: key, closers: []func(){func() { db.Close() }}}
	if err := db.Migrate(ctx, log); err != nil {
		e.close()
		return nil, err
	}
	if e.store, err = storage.NewStore(db, storage.StoreConfig{SecretKey: key}); err != nil {
		e.close()
		return nil, err
	}
	if err := e.openCoord(ctx, c); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

func (e *env) openCoord(ctx context.Context, c *config) error {
	if c.RedisURL == "" {
		l := coord.NewLocal(coord.Config{})
		e.coord, e.coordKind = l, "in-process"
		e.closers = append(e.closers, func() { l.Close() })
		return nil
	}
	return openRedisCoord(ctx, e, c)
}
