package storage

import (
	"context"
	"database/sql"
	"time"
)

// APIKeyPrefix starts every secret API key.
const APIKeyPrefix = "sk_live_"

// apiKeyPrefixLen is the length of the displayed key_prefix: sk_live_ plus
// seven hex characters.
const apiKeyPrefixLen = 15

// KeyStore keeps API keys and personal tokens: creating, listing and
// revoking them, flushing their last-used times, and resolving a
// credential to a principal (AuthAPIKey, AuthPersonalToken).
type KeyStore struct{ *base }

// APIKey is a secret API key's metadata; the raw key is never stored.
type APIKey struct {
	ID         string
	OrgID      int64
	CreatedBy  int64
	Name       string
	KeyPrefix  string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Principal is who a credential acts as: a user in an org with a role.
type Principal struct {
	OrgID    int64
	UserID   int64
	MemberID int64
	Role     Role
	// KeyID is set when the credential is an API key.
	KeyID string
}

// CreateAPIKey creates a key in orgID for its member userID and returns it
// with the raw value, which is shown once.
func (s *KeyStore) CreateAPIKey(ctx context.Context, orgID, userID int64, name string) (APIKey, string, error) {
	raw := APIKeyPrefix + randomHex(24)
	k := APIKey{ID: NewUUID(), OrgID: orgID, CreatedBy: userID, Name: name, KeyPrefix: raw[:apiKeyPrefixLen], CreatedAt: fromMS(s.nowMS())}
	_, err := s.db.ExecContext(ctx, `INSERT INTO api_keys (id, org_id, created_by, name, key_prefix, key_hash, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, k.ID, orgID, userID, name, k.KeyPrefix, HashToken(raw), ms(k.CreatedAt))
	if err != nil {
		return APIKey{}, "", translate(err)
	}
	return k, raw, nil
}

// APIKeys lists orgID's keys, active and revoked, newest first.
func (s *KeyStore) APIKeys(ctx context.Context, orgID int64) ([]APIKey, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, org_id, created_by, name, key_prefix, created_at, last_used_at, revoked_at
		FROM api_keys WHERE org_id = $1 ORDER BY created_at DESC, id DESC`, orgID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []APIKey{}
	for rows.Next() {
		var k APIKey
		var c int64
		var used, revoked sql.NullInt64
		if err := rows.Scan(&k.ID, &k.OrgID, &k.CreatedBy, &k.Name, &k.KeyPrefix, &c, &used, &revoked); err != nil {
			return nil, translate(err)
		}
		k.CreatedAt, k.LastUsedAt, k.RevokedAt = fromMS(c), fromNullMS(used), fromNullMS(revoked)
		out = append(out, k)
	}
	return out, translate(rows.Err())
}

// RevokeAPIKey revokes key id of orgID. Revoking twice is not an error;
// ErrNotFound if the key is not orgID's.
func (s *KeyStore) RevokeAPIKey(ctx context.Context, orgID int64, id string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE org_id = $2 AND id = $3`, s.nowMS(), orgID, id)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// AuthAPIKey resolves a raw key's hash to the principal it acts as: its
// creator's current membership. ErrNotFound for unknown or revoked keys,
// or when the creator no longer belongs to the org.
func (s *KeyStore) AuthAPIKey(ctx context.Context, hash string) (Principal, error) {
	var p Principal
	err := s.db.QueryRowContext(ctx, `SELECT k.id, k.org_id, m.user_id, m.id, m.role
		FROM api_keys k JOIN memberships m ON m.org_id = k.org_id AND m.user_id = k.created_by
		WHERE k.key_hash = $1 AND k.revoked_at IS NULL`, hash).Scan(&p.KeyID, &p.OrgID, &p.UserID, &p.MemberID, &p.Role)
	return p, translate(err)
}

// TouchAPIKeys records last-use times in one transaction. The auth layer
// batches uses in memory and flushes them, so a request never writes.
func (s *KeyStore) TouchAPIKeys(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		for id, t := range used {
			if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)`, ms(t), id); err != nil {
				return translate(err)
			}
		}
		return nil
	})
}

// CreatePersonalToken creates a dashboard token for userID and returns the
// raw value, shown once.
func (s *KeyStore) CreatePersonalToken(ctx context.Context, userID int64, name string) (string, error) {
	raw := "pt_" + randomHex(24)
	_, err := s.db.ExecContext(ctx, `INSERT INTO personal_tokens (user_id, name, token_hash, created_at) VALUES ($1, $2, $3, $4)`,
		userID, name, HashToken(raw), s.nowMS())
	return raw, translate(err)
}

// AuthPersonalToken resolves a personal token's hash to its user id.
func (s *KeyStore) AuthPersonalToken(ctx context.Context, hash string) (int64, error) {
	var uid int64
	err := s.db.QueryRowContext(ctx, `SELECT user_id FROM personal_tokens WHERE token_hash = $1 AND revoked_at IS NULL`, hash).Scan(&uid)
	return uid, translate(err)
}
