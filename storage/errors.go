package storage

import (
	"database/sql"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNotFound means the row does not exist or is not visible to the caller.
var ErrNotFound = errors.New("storage: not found")

// ErrConflict means a uniqueness rule or a concurrent change refused the write.
var ErrConflict = errors.New("storage: conflict")

// ErrInsufficientFunds means a debit would have taken a balance below zero.
var ErrInsufficientFunds = errors.New("storage: insufficient funds")

// translate maps driver errors to the package's sentinel errors.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return errors.Join(ErrConflict, err)
		case "40001", "40P01":
			return errors.Join(ErrConflict, err)
		}
		return err
	}
	// modernc.org/sqlite reports constraint failures in the message text.
	if msg := err.Error(); strings.Contains(msg, "UNIQUE constraint failed") || strings.Contains(msg, "(2067)") || strings.Contains(msg, "(1555)") {
		return errors.Join(ErrConflict, err)
	}
	return err
}

// Rule violations, checked inside the transaction that would break them.
var (
	// ErrNotMember means the acting user is not (or no longer) a member.
	ErrNotMember = errors.New("storage: not a member of the organization")
	// ErrRole means the acting member's role is too low for the operation.
	ErrRole = errors.New("storage: role does not allow this")
	// ErrSelf means the operation may not target the acting member.
	ErrSelf = errors.New("storage: cannot target yourself")
	// ErrTargetOwner means the operation may not target the owner.
	ErrTargetOwner = errors.New("storage: target is the owner")
	// ErrTargetAdmin means an admin tried to act on another admin.
	ErrTargetAdmin = errors.New("storage: admins cannot act on admins")
	// ErrMembersRemain means an org cannot be deleted while others belong to it.
	ErrMembersRemain = errors.New("storage: other members remain")
	// ErrOnlyOrg means the user would be left without an organization.
	ErrOnlyOrg = errors.New("storage: it is the user's only organization")
	// ErrIsOwner means the owner cannot do this (leave) without transferring.
	ErrIsOwner = errors.New("storage: the owner cannot do this")
	// ErrGone means the row existed but is used, expired or revoked.
	ErrGone = errors.New("storage: gone")
	// ErrWrongState means the row is not in a state the operation allows
	// (retrying a knowledge document that has not failed).
	ErrWrongState = errors.New("storage: wrong state")
)
