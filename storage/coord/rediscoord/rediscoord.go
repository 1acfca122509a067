package rediscoord

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voiced/voiced/storage/coord"
)

// Defaults for the Redis-specific fields of Config.
const (
	DefaultPrefix = "voiced:"
	DefaultPoll   = time.Second
)

// Config configures a Coord. Zero fields take defaults.
type Config struct {
	// Config is the behaviour shared with the in-process implementation; its Now is
	// ignored (the Redis server clock is used).
	coord.Config

	// Prefix starts every key; DefaultPrefix when empty.
	Prefix string

	// Poll is the longest a command subscription blocks in one XREAD before checking
	// whether it was closed: it bounds how long Subscription.Close may wait.
	Poll time.Duration
}

func (c Config) withDefaults() Config {
	c.Config = c.Config.WithDefaults()
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	return c
}

// Coord is the Redis [coord.Coordinator]. It is safe for concurrent use. It does not own
// the Redis client: closing the client is the caller's job, after Close.
type Coord struct {
	cfg Config
	log *slog.Logger
	rdb redis.UniversalClient

	mu      sync.Mutex
	closed  bool
	closing chan struct{} // closed by Close: ends subscriptions
	subs    sync.WaitGroup

	seenKey, nodesKey string
}

var _ coord.Coordinator = (*Coord)(nil)

// New returns a coordinator storing its state in rdb under cfg.Prefix. A nil log
// discards. It does not contact Redis.
func New(cfg Config, log *slog.Logger, rdb redis.UniversalClient) (*Coord, error) {
	if rdb == nil {
		return nil, fmt.Errorf("rediscoord: nil redis client: %w", coord.ErrInvalid)
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg = cfg.withDefaults()
	return &Coord{
		cfg:      cfg,
		log:      log,
		rdb:      rdb,
		closing:  make(chan struct{}),
		seenKey:  cfg.Prefix + "{reg}:seen",
		nodesKey: cfg.Prefix + "{reg}:nodes",
	}, nil
}

// Close ends every command subscription and waits for their goroutines; later
// subscriptions fail with [coord.ErrClosed]. Other calls keep working as long as the
// client is open. It is idempotent.
func (c *Coord) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.closing)
	}
	c.mu.Unlock()
	c.subs.Wait()
	return nil
}

func (c *Coord) key(kind, name string) string {
	return c.cfg.Prefix + kind + name
}

// ms converts d to whole milliseconds, at least 1, as Redis expects.
func ms(d time.Duration) int64 {
	return max(int64(d/time.Millisecond), 1)
}
