package storage

import (
	"context"
	"time"
)

// RealtimeSessionToken is a realtime session admitted by POST
// /v1/realtime/sessions and waiting for its socket (spec 4.14). Grant is
// the caller's encoding of what was admitted; NonceHash is the SHA-256
// (HashToken) of the token's nonce.
type RealtimeSessionToken struct {
	CallID    int64
	OrgID     int64
	NonceHash string
	Grant     []byte
	ExpiresAt time.Time
}

// CreateRealtimeSessionToken stores t until it is claimed or expires. A
// second token for the same call is ErrConflict.
func (s *CallStore) CreateRealtimeSessionToken(ctx context.Context, t RealtimeSessionToken) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO realtime_session_tokens (call_id, org_id, nonce_hash, grant_json, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, t.CallID, t.OrgID, t.NonceHash, string(t.Grant), t.ExpiresAt.UnixMilli(), s.nowMS())
	return translate(err)
}

// ClaimRealtimeSessionToken redeems the token of call callID whose nonce
// hashes to nonceHash: it is deleted and returned, so exactly one claim
// succeeds whichever replica makes it. An unknown, already claimed,
// mismatched or expired token is ErrNotFound.
func (s *CallStore) ClaimRealtimeSessionToken(ctx context.Context, callID int64, nonceHash string) (RealtimeSessionToken, error) {
	t := RealtimeSessionToken{CallID: callID, NonceHash: nonceHash}
	var grant string
	var exp int64
	err := s.db.QueryRowContext(ctx, `DELETE FROM realtime_session_tokens WHERE call_id = $1 AND nonce_hash = $2 AND expires_at >= $3
		RETURNING org_id, grant_json, expires_at`, callID, nonceHash, s.nowMS()).Scan(&t.OrgID, &grant, &exp)
	if err != nil {
		return RealtimeSessionToken{}, translate(err)
	}
	t.Grant, t.ExpiresAt = []byte(grant), fromMS(exp)
	return t, nil
}

// ExpireRealtimeSessionTokens deletes every token past its expiry and
// returns their call ids; each is returned to one caller only, which
// closes the call.
func (s *CallStore) ExpireRealtimeSessionTokens(ctx context.Context) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, `DELETE FROM realtime_session_tokens WHERE expires_at < $1 RETURNING call_id`, s.nowMS())
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, translate(err)
		}
		ids = append(ids, id)
	}
	return ids, translate(rows.Err())
}
