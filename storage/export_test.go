package storage

import (
	"context"
	"database/sql"
)

// SearchExhaustive is Search reading every block, without pruning.
func (s *KnowledgeStore) SearchExhaustive(ctx context.Context, orgID int64, q KnowledgeQuery) ([]KnowledgeHit, error) {
	return s.search(ctx, orgID, q, false)
}

// Tx is DB.tx.
func (db *DB) Tx(ctx context.Context, fn func(*sql.Tx) error) error { return db.tx(ctx, fn) }
