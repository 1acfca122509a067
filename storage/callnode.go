package storage

import (
	"context"
	"database/sql"
	"sort"
	"strings"
	"time"
)

// SetCallNode records node as the media node that holds call id, while
// the call is in progress (an ended call keeps what it had).
func (s *CallStore) SetCallNode(ctx context.Context, id int64, node string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE calls SET node_id = $1 WHERE id = $2 AND status = 'in_progress'`, node, id)
	return translate(err)
}

// AnswerCall records that outbound call id was answered at at (a time
// before its start counts as its start) if it is in progress and not yet
// answered, in one statement; it reports whether it did.
func (s *CallStore) AnswerCall(ctx context.Context, id int64, at time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE calls SET answered_at = CASE WHEN $1 < start_time THEN start_time ELSE $1 END, updated_at = $2
		WHERE id = $3 AND direction = 'outbound' AND status = 'in_progress' AND answered_at IS NULL`, ms(at), s.nowMS(), id)
	if err != nil {
		return false, translate(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// NodesSeen records the last heartbeat of each node in seen (by id),
// keeping the later of what is stored and what is given.
func (s *CallStore) NodesSeen(ctx context.Context, seen map[string]time.Time) error {
	if len(seen) == 0 {
		return nil
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids) // one lock order for every writer
	var b strings.Builder
	args := make([]any, 0, 2*len(ids))
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("($" + itoa(2*i+1) + ", $" + itoa(2*i+2) + ")")
		args = append(args, id, ms(seen[id]))
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO media_nodes (id, last_seen) VALUES `+b.String()+`
		ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen WHERE excluded.last_seen > media_nodes.last_seen`, args...)
	return translate(err)
}

// CallNode is a media node that holds calls in progress, with the last
// heartbeat NodesSeen recorded of it (nil: none was).
type CallNode struct {
	ID       string
	LastSeen *time.Time
}

// CallNodes lists the nodes that hold calls in progress.
func (s *CallStore) CallNodes(ctx context.Context) ([]CallNode, error) {
	return scanAll(ctx, s.db.DB, func(r interface{ Scan(...any) error }) (CallNode, error) {
		var n CallNode
		var seen sql.NullInt64
		if err := r.Scan(&n.ID, &seen); err != nil {
			return n, translate(err)
		}
		n.LastSeen = fromNullMS(seen)
		return n, nil
	}, `SELECT d.node_id, n.last_seen FROM (SELECT DISTINCT node_id FROM calls WHERE status = 'in_progress' AND node_id IS NOT NULL) d
		LEFT JOIN media_nodes n ON n.id = d.node_id ORDER BY d.node_id`)
}

// NodeCalls lists up to limit calls in progress on node, oldest first.
func (s *CallStore) NodeCalls(ctx context.Context, node string, limit int) ([]Call, error) {
	return scanAll(ctx, s.db.DB, func(r interface{ Scan(...any) error }) (Call, error) { return scanCall(r) },
		callSelect+` WHERE status = 'in_progress' AND node_id = $1 ORDER BY id LIMIT $2`, node, limit)
}

// ForgetNodes deletes the last heartbeats of nodes not seen since before
// and holding no call in progress, and reports how many went.
func (s *CallStore) ForgetNodes(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM media_nodes WHERE last_seen < $1
		AND NOT EXISTS (SELECT 1 FROM calls WHERE calls.status = 'in_progress' AND calls.node_id = media_nodes.id)`, ms(before))
	if err != nil {
		return 0, translate(err)
	}
	return res.RowsAffected()
}
