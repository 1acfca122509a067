package storage_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestMigrateOutOfOrder: a migration whose number is below one already
// applied (numbers are handed out to work in progress side by side, and
// 00017 landed after 00019) is applied, not refused.
func TestMigrateOutOfOrder(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		// The database as it was before 00017 existed: 00018 and 00019
		// applied, 00017 not.
		_, err := db.ExecContext(ctx, `ALTER TABLE calls DROP COLUMN answered_at`)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, `DELETE FROM goose_db_version WHERE version_id = 17`)
		require.NoError(t, err)
		var applied int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id > 17`).Scan(&applied))
		require.Positive(t, applied, "later migrations stay applied")

		require.NoError(t, db.Migrate(ctx, nil))
		var n int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM calls WHERE answered_at IS NULL`).Scan(&n), "answered_at is back")
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id = 17`).Scan(&n))
		require.Equal(t, 1, n, "00017 recorded as applied")
	})
}
