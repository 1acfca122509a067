// Package admin is the operator's side of the control plane (voiced admin
// and a first start): it creates users, tokens, organizations and keys and
// adjusts balances in the store directly, with no API principal.
package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/voiced/voiced/storage"
)

// OrgStore creates and finds users, organizations and members.
type OrgStore interface {
	UserByEmail(ctx context.Context, email string) (storage.User, error)
	CreateUser(ctx context.Context, email, first, last string) (storage.User, error)
	CountUsers(ctx context.Context) (int64, error)
	CreateOrg(ctx context.Context, userID int64, name string) (storage.Org, error)
	Members(ctx context.Context, orgID int64) ([]storage.Member, error)
	MemberByUser(ctx context.Context, orgID, userID int64) (storage.Member, error)
}

// KeyStore creates API keys and personal tokens.
type KeyStore interface {
	CreateAPIKey(ctx context.Context, orgID, userID int64, name string) (storage.APIKey, string, error)
	CreatePersonalToken(ctx context.Context, userID int64, name string) (string, error)
}

// Ledger posts to an organization's balance.
type Ledger interface {
	Post(ctx context.Context, orgID int64, kind storage.TxKind, amount int64, desc, ref string) (storage.Transaction, error)
}

// Admin is the operator's actions. Errors are written for the operator;
// the command names its flags.
type Admin struct {
	orgs   OrgStore
	keys   KeyStore
	ledger Ledger
}

// New returns the operator's actions on the stores.
func New(orgs OrgStore, keys KeyStore, ledger Ledger) Admin { return Admin{orgs, keys, ledger} }

// Bootstrapped is what Bootstrap created.
type Bootstrapped struct {
	OrgID  int64  `json:"org_id"`
	UserID int64  `json:"user_id"`
	APIKey string `json:"api_key"`
}

// Bootstrap creates an owner user (or takes the one with email), an
// organization, an API key and the starting credit (a manual adjustment
// in the ledger, so billing builds on it).
func (a Admin) Bootstrap(ctx context.Context, email, orgName string, credit int64) (Bootstrapped, error) {
	u, err := a.orgs.UserByEmail(ctx, email)
	if errors.Is(err, storage.ErrNotFound) {
		u, err = a.orgs.CreateUser(ctx, email, "", "")
	}
	if err != nil {
		return Bootstrapped{}, fmt.Errorf("owner user: %w", err)
	}
	o, err := a.orgs.CreateOrg(ctx, u.ID, orgName)
	if err != nil {
		return Bootstrapped{}, fmt.Errorf("create org: %w", err)
	}
	if credit > 0 {
		if _, err := a.ledger.Post(ctx, o.ID, storage.TxAdjustment, credit, "starting credit", ""); err != nil {
			return Bootstrapped{}, fmt.Errorf("starting credit: %w", err)
		}
	}
	_, raw, err := a.keys.CreateAPIKey(ctx, o.ID, u.ID, "Default key")
	if err != nil {
		return Bootstrapped{}, fmt.Errorf("create key: %w", err)
	}
	return Bootstrapped{OrgID: o.ID, UserID: u.ID, APIKey: raw}, nil
}

// FirstUse bootstraps an empty database (no users yet); ok reports
// whether it did.
func (a Admin) FirstUse(ctx context.Context, email, orgName string, credit int64) (b Bootstrapped, ok bool, err error) {
	n, err := a.orgs.CountUsers(ctx)
	if err != nil || n > 0 {
		return Bootstrapped{}, false, err
	}
	b, err = a.Bootstrap(ctx, email, orgName, credit)
	return b, err == nil, err
}

// user finds the user with email.
func (a Admin) user(ctx context.Context, email string) (storage.User, error) {
	u, err := a.orgs.UserByEmail(ctx, email)
	if errors.Is(err, storage.ErrNotFound) {
		return u, fmt.Errorf("no user with email %s", email)
	}
	return u, err
}

// CreateUser creates a user.
func (a Admin) CreateUser(ctx context.Context, email, first, last string) (map[string]any, error) {
	u, err := a.orgs.CreateUser(ctx, email, first, last)
	if errors.Is(err, storage.ErrConflict) {
		return nil, fmt.Errorf("a user with email %s exists", email)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"user_id": u.ID, "email": u.Email}, nil
}

// CreateToken creates a personal token (the dashboard's credential) of
// the user with email.
func (a Admin) CreateToken(ctx context.Context, email, name string) (map[string]any, error) {
	u, err := a.user(ctx, email)
	if err != nil {
		return nil, err
	}
	tok, err := a.keys.CreatePersonalToken(ctx, u.ID, name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"user_id": u.ID, "token": tok}, nil
}

// CreateOrg creates an organization owned by the user with email.
func (a Admin) CreateOrg(ctx context.Context, email, name string) (map[string]any, error) {
	u, err := a.user(ctx, email)
	if err != nil {
		return nil, err
	}
	name = strings.TrimSpace(name)
	if n := len([]rune(name)); n < 1 || n > 120 {
		return nil, errors.New("the name must be 1-120 characters")
	}
	o, err := a.orgs.CreateOrg(ctx, u.ID, name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"org_id": o.ID, "owner_user_id": u.ID}, nil
}

// CreateKey creates an API key of organization orgID acting for the
// member with email (empty: the owner).
func (a Admin) CreateKey(ctx context.Context, orgID int64, email, name string) (map[string]any, error) {
	var uid int64
	if email != "" {
		u, err := a.user(ctx, email)
		if err != nil {
			return nil, err
		}
		uid = u.ID
	} else {
		ms, err := a.orgs.Members(ctx, orgID)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if m.Role == storage.RoleOwner {
				uid = m.UserID
			}
		}
		if uid == 0 {
			return nil, fmt.Errorf("no organization %d", orgID)
		}
	}
	if _, err := a.orgs.MemberByUser(ctx, orgID, uid); err != nil {
		return nil, fmt.Errorf("%s is not a member of organization %d", email, orgID)
	}
	k, raw, err := a.keys.CreateAPIKey(ctx, orgID, uid, name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"org_id": orgID, "key_id": k.ID, "api_key": raw}, nil
}

// AddCredit posts a manual adjustment of cents (negative removes) to
// organization orgID's ledger.
func (a Admin) AddCredit(ctx context.Context, orgID, cents int64, note string) (map[string]any, error) {
	t, err := a.ledger.Post(ctx, orgID, storage.TxAdjustment, cents, note, "")
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, fmt.Errorf("no organization %d", orgID)
	case errors.Is(err, storage.ErrInsufficientFunds):
		return nil, errors.New("the balance cannot go below zero")
	case err != nil:
		return nil, err
	}
	return map[string]any{"org_id": orgID, "transaction_id": t.ID, "balance_cents": t.BalanceAfterCents}, nil
}
