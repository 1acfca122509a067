package storage

import (
	"context"
	"time"
)

// NumberLabel is an org-wide label for an E.164 number (any number, such
// as a caller's), keyed by the number.
type NumberLabel struct {
	ID          int64
	OrgID       int64
	PhoneNumber string
	Label       string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// UpsertNumberLabel sets orgID's label for number, creating it or
// replacing the label; created_at is kept on update.
func (s *NumberStore) UpsertNumberLabel(ctx context.Context, orgID int64, number, label string) (NumberLabel, error) {
	now := s.nowMS()
	l := NumberLabel{OrgID: orgID, PhoneNumber: number, Label: label}
	var c, u int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO phone_number_labels (org_id, phone_number, label, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $4)
		ON CONFLICT (org_id, phone_number) DO UPDATE SET label = excluded.label, updated_at = excluded.updated_at
		RETURNING id, created_at, updated_at`, orgID, number, label, now).Scan(&l.ID, &c, &u)
	if err != nil {
		return NumberLabel{}, translate(err)
	}
	l.CreatedAt, l.UpdatedAt = fromMS(c), fromMS(u)
	return l, nil
}

// NumberLabels lists orgID's labels by phone number ascending.
func (s *NumberStore) NumberLabels(ctx context.Context, orgID int64) ([]NumberLabel, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, org_id, phone_number, label, created_at, updated_at
		FROM phone_number_labels WHERE org_id = $1 ORDER BY phone_number, id`, orgID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []NumberLabel{}
	for rows.Next() {
		var l NumberLabel
		var c, u int64
		if err := rows.Scan(&l.ID, &l.OrgID, &l.PhoneNumber, &l.Label, &c, &u); err != nil {
			return nil, translate(err)
		}
		l.CreatedAt, l.UpdatedAt = fromMS(c), fromMS(u)
		out = append(out, l)
	}
	return out, translate(rows.Err())
}

// DeleteNumberLabel deletes label id of orgID.
func (s *NumberStore) DeleteNumberLabel(ctx context.Context, orgID, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM phone_number_labels WHERE org_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
