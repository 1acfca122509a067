package storage

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// OrgStore keeps users, organizations, memberships and invites. Role
// rules are checked here, in the transaction that makes the change, with
// the actor's membership row locked.
type OrgStore struct{ *base }

// Role is a member's role in an organization.
type Role string

// The roles, highest first.
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

func (r Role) rank() int {
	switch r {
	case RoleOwner:
		return 3
	case RoleAdmin:
		return 2
	case RoleMember:
		return 1
	}
	return 0
}

// AtLeast reports whether r is min or higher.
func (r Role) AtLeast(min Role) bool { return r.rank() >= min.rank() }

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// User is a person who can belong to organizations.
type User struct {
	ID         int64
	Email      string
	FirstName  string
	LastName   string
	HasPasskey bool
	CreatedAt  time.Time
}

// Org is an organization. Role is the caller's role where a listing sets it.
type Org struct {
	ID        int64
	Name      string
	Role      Role
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Member is a membership joined with its user. ID is the membership id.
type Member struct {
	ID         int64
	OrgID      int64
	UserID     int64
	Email      string
	FirstName  string
	LastName   string
	Role       Role
	HasPasskey bool
	CreatedAt  time.Time
}

// CreateUser creates a user; ErrConflict if the email is taken.
func (s *OrgStore) CreateUser(ctx context.Context, email, first, last string) (User, error) {
	u := User{Email: strings.ToLower(strings.TrimSpace(email)), FirstName: first, LastName: last, CreatedAt: fromMS(s.nowMS())}
	err := s.db.QueryRowContext(ctx,
		`INSERT INTO users (email, first_name, last_name, created_at) VALUES ($1, $2, $3, $4) RETURNING id`,
		u.Email, first, last, ms(u.CreatedAt)).Scan(&u.ID)
	return u, translate(err)
}

// UserByEmail finds a user by email, case-insensitively.
func (s *OrgStore) UserByEmail(ctx context.Context, email string) (User, error) {
	return s.scanUser(s.db.QueryRowContext(ctx, userSelect+` WHERE email = $1`, strings.ToLower(strings.TrimSpace(email))))
}

// UserByID finds a user by id.
func (s *OrgStore) UserByID(ctx context.Context, id int64) (User, error) {
	return s.scanUser(s.db.QueryRowContext(ctx, userSelect+` WHERE id = $1`, id))
}

// CountUsers counts all users (first-use detection).
func (s *OrgStore) CountUsers(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM users`).Scan(&n)
	return n, translate(err)
}

const userSelect = `SELECT id, email, first_name, last_name, has_passkey, created_at FROM users`

func (s *OrgStore) scanUser(row *sql.Row) (User, error) {
	var u User
	var created int64
	if err := row.Scan(&u.ID, &u.Email, &u.FirstName, &u.LastName, &u.HasPasskey, &created); err != nil {
		return User{}, translate(err)
	}
	u.CreatedAt = fromMS(created)
	return u, nil
}

// CreateOrg creates an organization owned by userID, with an empty billing
// account.
func (s *OrgStore) CreateOrg(ctx context.Context, userID int64, name string) (Org, error) {
	now := s.nowMS()
	o := Org{Name: name, Role: RoleOwner, CreatedAt: fromMS(now), UpdatedAt: fromMS(now)}
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO orgs (name, created_at, updated_at) VALUES ($1, $2, $2) RETURNING id`, name, now).Scan(&o.ID); err != nil {
			return translate(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO memberships (org_id, user_id, role, created_at) VALUES ($1, $2, 'owner', $3)`, o.ID, userID, now); err != nil {
			return translate(err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO billing_accounts (org_id, updated_at) VALUES ($1, $2)`, o.ID, now)
		return translate(err)
	})
	return o, err
}

// OrgsForUser lists the organizations userID belongs to, with their role,
// oldest first.
func (s *OrgStore) OrgsForUser(ctx context.Context, userID int64) ([]Org, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT o.id, o.name, m.role, o.created_at, o.updated_at
		FROM orgs o JOIN memberships m ON m.org_id = o.id
		WHERE m.user_id = $1 ORDER BY o.created_at, o.id`, userID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []Org{}
	for rows.Next() {
		var o Org
		var c, u int64
		if err := rows.Scan(&o.ID, &o.Name, &o.Role, &c, &u); err != nil {
			return nil, translate(err)
		}
		o.CreatedAt, o.UpdatedAt = fromMS(c), fromMS(u)
		out = append(out, o)
	}
	return out, translate(rows.Err())
}

// OrgForUser returns org orgID with userID's role; ErrNotFound if userID is
// not a member.
func (s *OrgStore) OrgForUser(ctx context.Context, orgID, userID int64) (Org, error) {
	var o Org
	var c, u int64
	err := s.db.QueryRowContext(ctx, `SELECT o.id, o.name, m.role, o.created_at, o.updated_at
		FROM orgs o JOIN memberships m ON m.org_id = o.id
		WHERE o.id = $1 AND m.user_id = $2`, orgID, userID).Scan(&o.ID, &o.Name, &o.Role, &c, &u)
	if err != nil {
		return Org{}, translate(err)
	}
	o.CreatedAt, o.UpdatedAt = fromMS(c), fromMS(u)
	return o, nil
}

// RenameOrg renames orgID if userID is at least minRole there.
func (s *OrgStore) RenameOrg(ctx context.Context, orgID, userID int64, minRole Role, name string) (Org, error) {
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := lockMembership(tx, orgID, userID, minRole); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE orgs SET name = $1, updated_at = $2 WHERE id = $3`, name, s.nowMS(), orgID)
		return translate(err)
	})
	if err != nil {
		if errors.Is(err, ErrNotMember) {
			return Org{}, ErrNotFound
		}
		return Org{}, err
	}
	return s.OrgForUser(ctx, orgID, userID)
}

// DeleteOrg deletes orgID. Only its owner may, only when no other member
// remains, and not when it is the owner's only organization.
func (s *OrgStore) DeleteOrg(ctx context.Context, orgID, userID int64) error {
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := lockMembership(tx, orgID, userID, RoleOwner); err != nil {
			return err
		}
		var others, orgs int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memberships WHERE org_id = $1 AND user_id <> $2`, orgID, userID).Scan(&others); err != nil {
			return translate(err)
		}
		if others > 0 {
			return ErrMembersRemain
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memberships WHERE user_id = $1`, userID).Scan(&orgs); err != nil {
			return translate(err)
		}
		if orgs <= 1 {
			return ErrOnlyOrg
		}
		// Knowledge postings have no foreign key (migration 00020): the
		// cascade from orgs does not reach them.
		if err := deleteOrgPostings(ctx, tx, orgID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM orgs WHERE id = $1`, orgID)
		return translate(err)
	})
	if errors.Is(err, ErrNotMember) {
		return ErrNotFound
	}
	return err
}
