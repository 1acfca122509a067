package storage_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
)

// TestCheckpointsOffTheCommit: a SQLite commit leaves its pages in the
// write-ahead log (no commit pays for copying it), and the checkpointer
// copies them into the database file within a couple of its periods.
func TestCheckpointsOffTheCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v.db")
	db, err := storage.Open(ctx, storage.Config{URL: "sqlite://" + path})
	require.NoError(t, err)
	defer db.Close()
	size := func() int64 {
		st, err := os.Stat(path)
		require.NoError(t, err)
		return st.Size()
	}
	_, err = db.ExecContext(ctx, `CREATE TABLE blobs (b BLOB)`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return size() > 0 }, 5*time.Second, 50*time.Millisecond, "the table reaches the file")
	before := size()
	const n = 8 << 20 // 2,048 pages: twice SQLite's own autocheckpoint threshold
	_, err = db.ExecContext(ctx, `INSERT INTO blobs VALUES (zeroblob($1))`, n)
	require.NoError(t, err)
	require.Less(t, size(), before+n/2, "the commit copied the log into the file")
	wal, err := os.Stat(path + "-wal")
	require.NoError(t, err)
	require.Greater(t, wal.Size(), int64(n), "the blob is in the log")
	require.Eventually(t, func() bool { return size() >= before+n }, 5*time.Second, 50*time.Millisecond, "the checkpointer copied the log into the file")
}

// TestSQLiteWritersHandOver: a SQLite write transaction waiting for
// another starts as soon as that one commits (the store's writer lock),
// not at the busy handler's next poll (its sleeps reach 50-100 ms after
// a 200 ms wait); one whose context ends while waiting gives up with the
// context's error.
func TestSQLiteWritersHandOver(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(ctx, storage.Config{URL: "sqlite://" + filepath.Join(t.TempDir(), "v.db")})
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, `CREATE TABLE n (v INTEGER)`)
	require.NoError(t, err)
	insert := func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, `INSERT INTO n VALUES (1)`); return err }

	holding, committed := make(chan struct{}), make(chan time.Time, 1)
	go func() {
		_ = db.Tx(ctx, func(tx *sql.Tx) error {
			close(holding)
			time.Sleep(250 * time.Millisecond)
			defer func() { committed <- time.Now() }()
			return insert(tx)
		})
	}()
	<-holding
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, db.Tx(short, insert), context.DeadlineExceeded, "a waiter whose context ends")
	var started time.Time
	require.NoError(t, db.Tx(ctx, func(tx *sql.Tx) error { started = time.Now(); return insert(tx) }))
	gap := started.Sub(<-committed)
	require.Less(t, gap, 20*time.Millisecond, "the waiting writer started %v after the commit", gap)
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&n))
	require.Equal(t, 2, n, "the one that gave up wrote nothing")
}
