package storage

import "context"

// SearchExhaustive is Search reading every block, without pruning.
func (s *KnowledgeStore) SearchExhaustive(ctx context.Context, orgID int64, q KnowledgeQuery) ([]KnowledgeHit, error) {
	return s.search(ctx, orgID, q, false)
}
