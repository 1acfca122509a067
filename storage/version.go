package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Version is one recorded revision of an agent or a phone number: a full
// snapshot of the API object after the change and the fields that changed.
type Version struct {
	ID       int64
	Revision int64
	// CreatedByID is the acting membership id; nil for system changes.
	CreatedByID   *int64
	CreatedAt     time.Time
	Snapshot      json.RawMessage
	ChangedFields []string
}

// versionTable names a version table and the column that points at its
// parent; the two tables share one shape.
type versionTable struct{ table, parent string }

var (
	agentVersions  = versionTable{"agent_versions", "agent_id"}
	numberVersions = versionTable{"phone_number_versions", "phone_number_id"}
)

func (vt versionTable) insert(ctx context.Context, tx *sql.Tx, parentID, revision int64, snapshot json.RawMessage, changed []string, actor *int64, at int64) error {
	if changed == nil {
		changed = []string{}
	}
	cf, err := json.Marshal(changed)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO `+vt.table+` (`+vt.parent+`, revision, snapshot, changed_fields, created_by_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, parentID, revision, string(snapshot), string(cf), nullInt(actor), at)
	return translate(err)
}

// list returns the total count and up to limit versions, newest first.
func (vt versionTable) list(ctx context.Context, db *DB, parentID int64, limit int) (int64, []Version, error) {
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+vt.table+` WHERE `+vt.parent+` = $1`, parentID).Scan(&n); err != nil {
		return 0, nil, translate(err)
	}
	rows, err := db.QueryContext(ctx, `SELECT id, revision, snapshot, changed_fields, created_by_id, created_at FROM `+vt.table+`
		WHERE `+vt.parent+` = $1 ORDER BY revision DESC LIMIT $2`, parentID, limit)
	if err != nil {
		return 0, nil, translate(err)
	}
	defer rows.Close()
	out := []Version{}
	for rows.Next() {
		var v Version
		var snap, cf string
		var by sql.NullInt64
		var c int64
		if err := rows.Scan(&v.ID, &v.Revision, &snap, &cf, &by, &c); err != nil {
			return 0, nil, translate(err)
		}
		if err := json.Unmarshal([]byte(cf), &v.ChangedFields); err != nil {
			return 0, nil, fmt.Errorf("version %d changed_fields: %w", v.ID, err)
		}
		v.Snapshot = json.RawMessage(snap)
		v.CreatedByID = ptrInt(by)
		v.CreatedAt = fromMS(c)
		out = append(out, v)
	}
	return n, out, translate(rows.Err())
}

// nullInt is a nullable integer argument.
func nullInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// nullMS is a nullable timestamp argument.
func nullMS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ms(*t)
}

// nullStr is a nullable string argument.
func nullStr(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func ptrInt(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	x := v.Int64
	return &x
}

func ptrStr(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	x := v.String
	return &x
}

// placeholders returns "$from, $from+1, ..." for n arguments.
func placeholders(from, n int) string {
	b := make([]byte, 0, n*4)
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, "$%d", from+i)
	}
	return string(b)
}
