package storage

import (
	"context"
	"database/sql"
	"strings"
	"time"
)

// Invite is an invitation for an email address to join an org with a role.
type Invite struct {
	ID         string
	OrgID      int64
	OrgName    string
	Email      string
	Role       Role
	CreatedBy  int64
	CreatedAt  time.Time
	ExpiresAt  time.Time
	AcceptedAt *time.Time
	RevokedAt  *time.Time
}

// Status is pending, accepted, revoked or expired at now.
func (i Invite) Status(now time.Time) string {
	switch {
	case i.AcceptedAt != nil:
		return "accepted"
	case i.RevokedAt != nil:
		return "revoked"
	case !now.Before(i.ExpiresAt):
		return "expired"
	}
	return "pending"
}

const inviteSelect = `SELECT i.id, i.org_id, o.name, i.email, i.role, i.created_by, i.created_at, i.expires_at, i.accepted_at, i.revoked_at
	FROM invites i JOIN orgs o ON o.id = i.org_id`

func scanInvite(row rowScanner) (Invite, error) {
	var i Invite
	var c, e int64
	var acc, rev sql.NullInt64
	if err := row.Scan(&i.ID, &i.OrgID, &i.OrgName, &i.Email, &i.Role, &i.CreatedBy, &c, &e, &acc, &rev); err != nil {
		return Invite{}, translate(err)
	}
	i.CreatedAt, i.ExpiresAt, i.AcceptedAt, i.RevokedAt = fromMS(c), fromMS(e), fromNullMS(acc), fromNullMS(rev)
	return i, nil
}

// CreateInvite creates an invite on behalf of actorUserID (admin+; only the
// owner may invite admins) and returns it with its raw token, shown once.
func (s *OrgStore) CreateInvite(ctx context.Context, orgID, actorUserID int64, email string, role Role, ttl time.Duration) (Invite, string, error) {
	raw := "inv_" + randomHex(24)
	id := NewUUID()
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		actor, err := lockMembership(tx, orgID, actorUserID, RoleAdmin)
		if err != nil {
			return err
		}
		if role == RoleAdmin && actor.Role != RoleOwner {
			return ErrTargetAdmin
		}
		now := s.nowMS()
		_, err = tx.ExecContext(ctx, `INSERT INTO invites (id, org_id, email, role, token_hash, created_by, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			id, orgID, strings.ToLower(strings.TrimSpace(email)), role, HashToken(raw), actorUserID, now, now+ttl.Milliseconds())
		return translate(err)
	})
	if err != nil {
		return Invite{}, "", err
	}
	inv, err := scanInvite(s.db.QueryRowContext(ctx, inviteSelect+` WHERE i.id = $1`, id))
	return inv, raw, err
}

// Invites lists orgID's invites, newest first.
func (s *OrgStore) Invites(ctx context.Context, orgID int64) ([]Invite, error) {
	rows, err := s.db.QueryContext(ctx, inviteSelect+` WHERE i.org_id = $1 ORDER BY i.created_at DESC, i.id`, orgID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []Invite{}
	for rows.Next() {
		i, err := scanInvite(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, translate(rows.Err())
}

// RevokeInvite revokes a pending invite of orgID; ErrGone if it was
// already accepted or revoked.
func (s *OrgStore) RevokeInvite(ctx context.Context, orgID int64, id string) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		inv, err := scanInvite(tx.QueryRowContext(ctx, inviteSelect+` WHERE i.org_id = $1 AND i.id = $2`, orgID, id))
		if err != nil {
			return err
		}
		if inv.AcceptedAt != nil || inv.RevokedAt != nil {
			return ErrGone
		}
		_, err = tx.ExecContext(ctx, `UPDATE invites SET revoked_at = $1 WHERE id = $2`, s.nowMS(), id)
		return translate(err)
	})
}

// InviteByToken returns the invite a raw token names; ErrNotFound if none.
func (s *OrgStore) InviteByToken(ctx context.Context, raw string) (Invite, error) {
	return scanInvite(s.db.QueryRowContext(ctx, inviteSelect+` WHERE i.token_hash = $1`, HashToken(raw)))
}

// AcceptInvite makes userID a member with the invite's role. ErrGone if the
// invite is used, revoked or expired; ErrConflict if the user already
// belongs to the org. The invite is consumed in the same transaction as
// the membership is created, so a token is used exactly once.
func (s *OrgStore) AcceptInvite(ctx context.Context, raw string, userID int64) (Member, error) {
	var memberID, orgID int64
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		now := s.nowMS()
		var id string
		err := tx.QueryRowContext(ctx, `UPDATE invites SET accepted_at = $1, accepted_by = $2
			WHERE token_hash = $3 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $1
			RETURNING id, org_id`, now, userID, HashToken(raw)).Scan(&id, &orgID)
		if err != nil {
			if err = translate(err); err == ErrNotFound {
				if _, e := scanInvite(tx.QueryRowContext(ctx, inviteSelect+` WHERE i.token_hash = $1`, HashToken(raw))); e == nil {
					return ErrGone
				}
			}
			return err
		}
		return translate(tx.QueryRowContext(ctx, `INSERT INTO memberships (org_id, user_id, role, created_at)
			SELECT org_id, $1, role, $2 FROM invites WHERE id = $3 RETURNING id`, userID, now, id).Scan(&memberID))
	})
	if err != nil {
		return Member{}, err
	}
	return s.Member(ctx, orgID, memberID)
}
