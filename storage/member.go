package storage

import (
	"context"
	"database/sql"
)

const memberSelect = `SELECT m.id, m.org_id, m.user_id, u.email, u.first_name, u.last_name, m.role, u.has_passkey, m.created_at
	FROM memberships m JOIN users u ON u.id = m.user_id`

type rowScanner interface{ Scan(...any) error }

func scanMember(row rowScanner) (Member, error) {
	var m Member
	var c int64
	if err := row.Scan(&m.ID, &m.OrgID, &m.UserID, &m.Email, &m.FirstName, &m.LastName, &m.Role, &m.HasPasskey, &c); err != nil {
		return Member{}, translate(err)
	}
	m.CreatedAt = fromMS(c)
	return m, nil
}

// AddMember adds userID to orgID with role (not owner); ErrConflict if the
// user already belongs to it.
func (s *OrgStore) AddMember(ctx context.Context, orgID, userID int64, role Role) (Member, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ($1, $2, $3, $4) RETURNING id`,
		orgID, userID, role, s.nowMS()).Scan(&id)
	if err != nil {
		return Member{}, translate(err)
	}
	return s.Member(ctx, orgID, id)
}

// Member returns membership id of orgID.
func (s *OrgStore) Member(ctx context.Context, orgID, id int64) (Member, error) {
	return scanMember(s.db.QueryRowContext(ctx, memberSelect+` WHERE m.org_id = $1 AND m.id = $2`, orgID, id))
}

// MemberByUser returns userID's membership of orgID.
func (s *OrgStore) MemberByUser(ctx context.Context, orgID, userID int64) (Member, error) {
	return scanMember(s.db.QueryRowContext(ctx, memberSelect+` WHERE m.org_id = $1 AND m.user_id = $2`, orgID, userID))
}

// Members lists orgID's members by created_at ascending.
func (s *OrgStore) Members(ctx context.Context, orgID int64) ([]Member, error) {
	rows, err := s.db.QueryContext(ctx, memberSelect+` WHERE m.org_id = $1 ORDER BY m.created_at, m.id`, orgID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []Member{}
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, translate(rows.Err())
}

// memberInTx loads membership id of orgID inside tx.
func memberInTx(tx *sql.Tx, orgID, id int64) (Member, error) {
	return scanMember(tx.QueryRow(memberSelect+` WHERE m.org_id = $1 AND m.id = $2`, orgID, id))
}

// removeMembership deletes a membership and revokes the API keys its user
// created in that org: a key acts for its creator and must not outlive
// the creator's access.
func (s *OrgStore) removeMembership(ctx context.Context, tx *sql.Tx, m Member) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM memberships WHERE id = $1`, m.ID); err != nil {
		return translate(err)
	}
	_, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = $1 WHERE org_id = $2 AND created_by = $3 AND revoked_at IS NULL`,
		s.nowMS(), m.OrgID, m.UserID)
	return translate(err)
}

// RemoveMember removes membership targetID from orgID on behalf of
// actorUserID: admin+ only; never oneself (ErrSelf), never the owner
// (ErrTargetOwner); an admin cannot remove an admin (ErrTargetAdmin).
func (s *OrgStore) RemoveMember(ctx context.Context, orgID, actorUserID, targetID int64) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		actor, err := lockMembership(tx, orgID, actorUserID, RoleAdmin)
		if err != nil {
			return err
		}
		target, err := memberInTx(tx, orgID, targetID)
		if err != nil {
			return err
		}
		switch {
		case target.ID == actor.ID:
			return ErrSelf
		case target.Role == RoleOwner:
			return ErrTargetOwner
		case target.Role == RoleAdmin && actor.Role != RoleOwner:
			return ErrTargetAdmin
		}
		return s.removeMembership(ctx, tx, target)
	})
}

// SetRole changes membership targetID's role on behalf of actorUserID, who
// must be the owner. role is admin or member; the owner's own role changes
// only through TransferOwnership (ErrTargetOwner).
func (s *OrgStore) SetRole(ctx context.Context, orgID, actorUserID, targetID int64, role Role) (Member, error) {
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := lockMembership(tx, orgID, actorUserID, RoleOwner); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE memberships SET role = $1 WHERE org_id = $2 AND id = $3 AND role <> 'owner'`, role, orgID, targetID)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err := memberInTx(tx, orgID, targetID); err != nil {
				return err
			}
			return ErrTargetOwner
		}
		return nil
	})
	if err != nil {
		return Member{}, err
	}
	return s.Member(ctx, orgID, targetID)
}

// TransferOwnership makes membership targetID the owner and demotes the
// acting owner to admin, atomically.
func (s *OrgStore) TransferOwnership(ctx context.Context, orgID, actorUserID, targetID int64) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		actor, err := lockMembership(tx, orgID, actorUserID, RoleOwner)
		if err != nil {
			return err
		}
		target, err := memberInTx(tx, orgID, targetID)
		if err != nil {
			return err
		}
		if target.Role == RoleOwner {
			return ErrTargetOwner
		}
		// Demote first: the one-owner index would refuse two owners.
		if _, err := tx.ExecContext(ctx, `UPDATE memberships SET role = 'admin' WHERE id = $1 AND role = 'owner'`, actor.ID); err != nil {
			return translate(err)
		}
		res, err := tx.ExecContext(ctx, `UPDATE memberships SET role = 'owner' WHERE id = $1 AND org_id = $2`, target.ID, orgID)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// Leave removes userID from orgID. The owner cannot leave (ErrIsOwner), nor
// can anyone leave their only organization (ErrOnlyOrg); ErrNotMember if
// userID no longer belongs to it.
func (s *OrgStore) Leave(ctx context.Context, orgID, userID int64) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		m, err := lockMembership(tx, orgID, userID, RoleMember)
		if err != nil {
			return err
		}
		if m.Role == RoleOwner {
			return ErrIsOwner
		}
		var orgs int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memberships WHERE user_id = $1`, userID).Scan(&orgs); err != nil {
			return translate(err)
		}
		if orgs <= 1 {
			return ErrOnlyOrg
		}
		return s.removeMembership(ctx, tx, m)
	})
}
