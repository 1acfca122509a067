package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/voiced/voiced/storage/migrations"
)

// Config says which database to open.
type Config struct {
	// URL is empty for a SQLite file in DataDir, "sqlite://path" or
	// "file:path" for an explicit SQLite file, or "postgres://..." /
	// "postgresql://..." for PostgreSQL.
	URL string
	// DataDir holds the default SQLite file (voiced.db).
	DataDir string
	// MaxOpenConns bounds the pool; zero picks a default per dialect.
	MaxOpenConns int
}

// DB is an open, migrated database.
type DB struct {
	*sql.DB
	Dialect migrations.Dialect

	// stmts caches prepared statements by query text. SQLite parses a
	// statement on every un-prepared call, which was 40% of the CPU of an
	// authenticated GET; the store's queries are a fixed set of constant
	// strings, so the cache is bounded.
	stmts sync.Map // string -> *sql.Stmt
	// lz4 is whether the PostgreSQL server compresses with lz4: 0 not
	// known yet, 1 yes, 2 no (see compressFast).
	lz4 atomic.Int32

	// writer is SQLite's one writer, taken by tx before BEGIN: a
	// transaction waiting for another wakes when it commits instead of
	// polling the lock in the busy handler's sleeps (up to 100 ms each).
	// nil for PostgreSQL.
	writer chan struct{}

	// stopCheckpoints ends the SQLite checkpointer (checkpointer); nil
	// for PostgreSQL.
	stopCheckpoints func()
}

// prepared returns the cached prepared statement for q, preparing it on
// first use. It returns nil if q cannot be prepared; callers then run q
// unprepared, so a bad query reports its error where it is run.
func (db *DB) prepared(ctx context.Context, q string) *sql.Stmt {
	if st, ok := db.stmts.Load(q); ok {
		return st.(*sql.Stmt)
	}
	st, err := db.DB.PrepareContext(context.WithoutCancel(ctx), q)
	if err != nil {
		return nil
	}
	if prev, loaded := db.stmts.LoadOrStore(q, st); loaded {
		st.Close()
		return prev.(*sql.Stmt)
	}
	return st
}

// QueryRowContext runs q through the statement cache.
func (db *DB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := db.prepared(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return db.DB.QueryRowContext(ctx, q, args...)
}

// QueryContext runs q through the statement cache.
func (db *DB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := db.prepared(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return db.DB.QueryContext(ctx, q, args...)
}

// ExecContext runs q through the statement cache.
func (db *DB) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := db.prepared(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return db.DB.ExecContext(ctx, q, args...)
}

// Close stops the checkpointer and closes the cached statements and the
// database (SQLite checkpoints what is left as the last connection
// closes).
func (db *DB) Close() error {
	if db.stopCheckpoints != nil {
		db.stopCheckpoints()
		db.stopCheckpoints = nil
	}
	db.stmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		db.stmts.Delete(k)
		return true
	})
	return db.DB.Close()
}

// Open opens the database described by cfg. It does not migrate; call
// Migrate (serve and migrate do).
func Open(ctx context.Context, cfg Config) (*DB, error) {
	dialect, driver, dsn, err := parseURL(cfg)
	if err != nil {
		return nil, err
	}
	sqlDB, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dialect, err)
	}
	// SQLite serializes writers anyway; a few connections serve concurrent
	// readers under WAL. PostgreSQL gets enough for two cores' worth of
	// in-flight requests.
	n := cfg.MaxOpenConns
	if n == 0 {
		n = map[migrations.Dialect]int{migrations.SQLite: 8, migrations.Postgres: 32}[dialect]
	}
	sqlDB.SetMaxOpenConns(n)
	sqlDB.SetMaxIdleConns(n)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("connect %s database: %w", dialect, err)
	}
	db := &DB{DB: sqlDB, Dialect: dialect}
	if dialect == migrations.SQLite {
		db.writer = make(chan struct{}, 1)
		db.stopCheckpoints = db.checkpointer(checkpointEvery)
	}
	return db, nil
}

// checkpointEvery is how often the checkpointer copies the SQLite
// write-ahead log into the database file.
const checkpointEvery = time.Second

// checkpointer copies the write-ahead log into the database file every
// period, on a connection of its own, and returns the function that stops
// it. Connections never checkpoint on commit (wal_autocheckpoint(0) in
// sqliteDSN): with SQLite's default the commit that crosses 1,000 pages
// does it, so a request that writes much (a knowledge document's chunks
// and index) also paid for copying the log. A PASSIVE checkpoint waits
// for no one: writers go on appending and readers keep their snapshots;
// what it cannot copy yet, the next one does. So the log holds about a
// period of writes.
func (db *DB) checkpointer(period time.Duration) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), 10*period)
				_, _ = db.DB.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
				cancel()
			}
		}
	}()
	return func() { close(stop); <-done }
}

func parseURL(cfg Config) (migrations.Dialect, string, string, error) {
	u := cfg.URL
	switch {
	case u == "":
		dir := cfg.DataDir
		if dir == "" {
			dir = "data"
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", "", "", fmt.Errorf("create data dir: %w", err)
		}
		return migrations.SQLite, "sqlite", sqliteDSN(filepath.Join(dir, "voiced.db")), nil
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		if _, err := url.Parse(u); err != nil {
			return "", "", "", fmt.Errorf("database url: %w", err)
		}
		return migrations.Postgres, "pgx", u, nil
	case strings.HasPrefix(u, "sqlite://"):
		return migrations.SQLite, "sqlite", sqliteDSN(strings.TrimPrefix(u, "sqlite://")), nil
	case strings.HasPrefix(u, "file:"):
		return migrations.SQLite, "sqlite", sqliteDSN(strings.TrimPrefix(u, "file:")), nil
	}
	return "", "", "", errors.New("database url must be empty, sqlite://PATH, file:PATH or postgres://...")
}

// sqliteDSN turns on WAL (readers never block the writer; the log is
// copied into the file by DB.checkpointer, not by commits), a busy timeout
// (writers queue instead of failing) and IMMEDIATE write transactions (a
// transaction takes the write lock at BEGIN, so read-check-write is atomic).
func sqliteDSN(path string) string {
	if path != ":memory:" {
		if dir := filepath.Dir(path); dir != "" {
			_ = os.MkdirAll(dir, 0o700)
		}
	}
	return "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_pragma=temp_store(MEMORY)&_pragma=cache_size(-16384)&_pragma=wal_autocheckpoint(0)&_txlock=immediate"
}

// Migrate applies every pending migration.
func (db *DB) Migrate(ctx context.Context, log *slog.Logger) error {
	fsys, err := migrations.FS(db.Dialect)
	if err != nil {
		return err
	}
	gd := goose.DialectSQLite3
	if db.Dialect == migrations.Postgres {
		gd = goose.DialectPostgres
	}
	// Migration numbers are handed out to work in progress side by side,
	// so one may land after a higher one is applied (00017 after 00019):
	// apply it rather than refuse to start. Each migration is written to
	// apply in any order relative to the others in flight.
	p, err := goose.NewProvider(gd, db.DB, fsys, goose.WithAllowOutofOrder(true))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if log != nil {
		for _, r := range res {
			log.Info("migration applied", "version", r.Source.Version, "duration_ms", r.Duration.Milliseconds())
		}
	}
	return nil
}

// tx runs fn in a transaction, committing on nil and rolling back otherwise.
func (db *DB) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	if db.writer != nil {
		select {
		case db.writer <- struct{}{}:
			defer func() { <-db.writer }()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return translate(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return translate(tx.Commit())
}

// compressFast makes PostgreSQL compress the large values tx stores with
// lz4 rather than pglz, when the server was built with it. Only the
// bytes on disk differ; reads return the same values.
func (db *DB) compressFast(ctx context.Context, tx *sql.Tx) error {
	if db.Dialect != migrations.Postgres {
		return nil
	}
	if db.lz4.Load() == 0 {
		var ok bool
		err := tx.QueryRowContext(ctx, `SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'`).Scan(&ok)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return translate(err)
		}
		db.lz4.Store(map[bool]int32{true: 1, false: 2}[ok])
	}
	if db.lz4.Load() != 1 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SET LOCAL default_toast_compression = lz4`)
	return translate(err)
}

// ms converts a time to the stored millisecond form.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS converts stored milliseconds to a UTC time.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// fromNullMS converts a nullable stored timestamp.
func fromNullMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}
