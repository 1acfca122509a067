package storage

import (
	"context"
	"database/sql"
)

const baseCols = `b.id, b.org_id, b.name, b.description, b.created_at, b.updated_at,
	(SELECT COUNT(*) FROM knowledge_base_documents m WHERE m.base_id = b.id)`

func scanBase(sc interface{ Scan(...any) error }) (KnowledgeBase, error) {
	var b KnowledgeBase
	var c, u int64
	if err := sc.Scan(&b.ID, &b.OrgID, &b.Name, &b.Description, &c, &u, &b.DocumentCount); err != nil {
		return b, translate(err)
	}
	b.CreatedAt, b.UpdatedAt = fromMS(c), fromMS(u)
	return b, nil
}

// CreateBase creates a knowledge base.
func (s *KnowledgeStore) CreateBase(ctx context.Context, orgID int64, name, description string) (KnowledgeBase, error) {
	id, now := NewUUID(), s.nowMS()
	if _, err := s.db.ExecContext(ctx, `INSERT INTO knowledge_bases (id, org_id, name, description, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5)`, id, orgID, name, description, now); err != nil {
		return KnowledgeBase{}, translate(err)
	}
	return s.Base(ctx, orgID, id)
}

// Base returns one knowledge base.
func (s *KnowledgeStore) Base(ctx context.Context, orgID int64, id string) (KnowledgeBase, error) {
	return scanBase(s.db.QueryRowContext(ctx, `SELECT `+baseCols+` FROM knowledge_bases b WHERE b.org_id = $1 AND b.id = $2`, orgID, id))
}

// Bases lists an org's knowledge bases, newest first.
func (s *KnowledgeStore) Bases(ctx context.Context, orgID int64) ([]KnowledgeBase, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+baseCols+` FROM knowledge_bases b WHERE b.org_id = $1 ORDER BY b.created_at DESC, b.id DESC`, orgID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []KnowledgeBase
	for rows.Next() {
		b, err := scanBase(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, translate(rows.Err())
}

// UpdateBase changes a base's name and/or description.
func (s *KnowledgeStore) UpdateBase(ctx context.Context, orgID int64, id string, name, description *string) (KnowledgeBase, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE knowledge_bases SET name = COALESCE($3, name), description = COALESCE($4, description),
		updated_at = $5 WHERE org_id = $1 AND id = $2`, orgID, id, name, description, s.nowMS())
	if err != nil {
		return KnowledgeBase{}, translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return KnowledgeBase{}, ErrNotFound
	}
	return s.Base(ctx, orgID, id)
}

// DeleteBase deletes a base; its documents stay in the flat store.
func (s *KnowledgeStore) DeleteBase(ctx context.Context, orgID int64, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM knowledge_bases WHERE org_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// AttachDocument adds a document of the org to a base of the org;
// attaching twice is a no-op.
func (s *KnowledgeStore) AttachDocument(ctx context.Context, orgID int64, baseID, docID string) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM knowledge_bases WHERE org_id = $1 AND id = $2)
			+ (SELECT COUNT(*) FROM knowledge_documents WHERE org_id = $1 AND id = $3)`, orgID, baseID, docID).Scan(&n); err != nil {
			return translate(err)
		}
		if n != 2 {
			return ErrNotFound
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO knowledge_base_documents (base_id, document_id, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (base_id, document_id) DO NOTHING`, baseID, docID, s.nowMS())
		return translate(err)
	})
}

// DetachDocument removes a document from a base without deleting it.
func (s *KnowledgeStore) DetachDocument(ctx context.Context, orgID int64, baseID, docID string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM knowledge_base_documents WHERE base_id = $1 AND document_id = $2
		AND EXISTS (SELECT 1 FROM knowledge_bases WHERE org_id = $3 AND id = $1)`, baseID, docID, orgID)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// InBase reports whether a document belongs to a base of the org.
func (s *KnowledgeStore) InBase(ctx context.Context, orgID int64, baseID, docID string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM knowledge_base_documents m JOIN knowledge_bases b ON b.id = m.base_id
		WHERE b.org_id = $1 AND m.base_id = $2 AND m.document_id = $3`, orgID, baseID, docID).Scan(&n)
	return n > 0, translate(err)
}
