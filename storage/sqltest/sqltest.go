// Package sqltest gives tests a fresh, migrated database of either dialect.
//
// PostgreSQL is real: each test gets its own database cloned from a
// template that is migrated once per migration set, and dropped at the
// end. The server is VOICED_TEST_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/postgres). When it is unreachable the test
// is skipped with a message, except under CI=true, where it fails.
package sqltest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/migrations"
)

// Dialects lists the dialects every store test runs on.
var Dialects = []migrations.Dialect{migrations.SQLite, migrations.Postgres}

// Run runs fn as a subtest on each dialect with a fresh database.
func Run(t *testing.T, fn func(t *testing.T, db *storage.DB)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) {
			fn(t, New(t, d))
		})
	}
}

// New returns a fresh migrated database of dialect d, closed (and for
// PostgreSQL dropped) when the test ends.
func New(t testing.TB, d migrations.Dialect) *storage.DB {
	t.Helper()
	u := URL(t, d)
	db, err := storage.Open(context.Background(), storage.Config{URL: u})
	if err != nil {
		t.Fatalf("sqltest: open %s: %v", d, err)
	}
	t.Cleanup(func() { db.Close() })
	if d == migrations.SQLite {
		if err := db.Migrate(context.Background(), nil); err != nil {
			t.Fatalf("sqltest: migrate: %v", err)
		}
	}
	return db
}

// URL returns a database URL for a fresh database of dialect d. For
// PostgreSQL the database is already migrated (cloned from the template).
func URL(t testing.TB, d migrations.Dialect) string {
	t.Helper()
	switch d {
	case migrations.SQLite:
		return "sqlite://" + t.TempDir() + "/test.db"
	case migrations.Postgres:
		return pgDatabase(t)
	}
	t.Fatalf("sqltest: unknown dialect %q", d)
	return ""
}

// ServerURL is the PostgreSQL server tests use.
func ServerURL() string {
	if u := os.Getenv("VOICED_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Unavailable skips t (or fails it under CI=true) because a server the test
// needs is unreachable.
func Unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is unreachable and CI=true requires it: %v", what, err)
	}
	t.Skipf("%s is unreachable (%v); set CI=true to make this a failure", what, err)
}

var (
	tmplOnce sync.Once
	tmplName string
	tmplErr  error
)

func pgDatabase(t testing.TB) string {
	t.Helper()
	admin, err := sql.Open("pgx", ServerURL())
	if err != nil {
		Unavailable(t, "PostgreSQL", err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		Unavailable(t, "PostgreSQL", err)
	}
	tmplOnce.Do(func() { tmplName, tmplErr = ensureTemplate(ctx, admin) })
	if tmplErr != nil {
		t.Fatalf("sqltest: template: %v", tmplErr)
	}
	name := "voiced_t_" + strings.ReplaceAll(storage.NewUUID(), "-", "")[12:]
	// CREATE DATABASE ... TEMPLATE needs the template idle; concurrent
	// clones from several test processes retry briefly.
	for i := 0; ; i++ {
		_, err = admin.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tmplName))
		if err == nil || i == 50 || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("sqltest: create database: %v", err)
	}
	t.Cleanup(func() {
		a, err := sql.Open("pgx", ServerURL())
		if err != nil {
			return
		}
		defer a.Close()
		_, _ = a.Exec(fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
	})
	return withDatabase(ServerURL(), name)
}

// ensureTemplate creates and migrates a template database named after the
// hash of the migrations, once per server, under an advisory lock so that
// parallel test binaries do not race.
func ensureTemplate(ctx context.Context, admin *sql.DB) (string, error) {
	fsys, err := migrations.FS(migrations.Postgres)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(fsys, p)
			h.Write([]byte(p))
			h.Write(b)
		}
		return nil
	})
	name := "voiced_tmpl_" + hex.EncodeToString(h.Sum(nil))[:16]
	conn, err := admin.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(7710001)`); err != nil {
		return "", err
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock(7710001)`)
	var exists bool
	if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_wip"
	_, _ = conn.ExecContext(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, building))
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %s`, building)); err != nil {
		return "", err
	}
	db, err := storage.Open(ctx, storage.Config{URL: withDatabase(ServerURL(), building)})
	if err != nil {
		return "", err
	}
	err = db.Migrate(ctx, nil)
	db.Close()
	if err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, building, name)); err != nil {
		return "", err
	}
	return name, nil
}

func withDatabase(server, name string) string {
	u, err := url.Parse(server)
	if err != nil {
		return server
	}
	u.Path = "/" + name
	return u.String()
}
