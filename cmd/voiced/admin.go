package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/voiced/voiced/storage"
)

const adminUsage = `usage: voiced admin COMMAND [flags]

commands:
  bootstrap      create an owner, an org with starting credit and an API key; prints JSON
  create-user    --email E [--first-name F --last-name L]
  create-token   --email E [--name N]          personal token for the dashboard (Authorization: Token ...)
  create-org     --email E --name N            the user becomes owner
  create-key     --org-id N [--email E] [--name N]   API key acting for E (default: the owner)
  add-credit     --org-id N --cents C [--note T]     manual adjustment in the ledger

Every command takes --data-dir and --database-url like serve.
`

// bootstrapResult is what admin bootstrap prints.
type bootstrapResult struct {
	OrgID  int64  `json:"org_id"`
	UserID int64  `json:"user_id"`
	APIKey string `json:"api_key"`
}

// bootstrap creates an owner user, an org, an API key and the starting
// credit (a manual adjustment in the ledger, so billing builds on it).
func bootstrap(ctx context.Context, s *storage.Store, email, orgName string, credit int64) (bootstrapResult, error) {
	u, err := s.Orgs.UserByEmail(ctx, email)
	if errors.Is(err, storage.ErrNotFound) {
		u, err = s.Orgs.CreateUser(ctx, email, "", "")
	}
	if err != nil {
		return bootstrapResult{}, fmt.Errorf("owner user: %w", err)
	}
	o, err := s.Orgs.CreateOrg(ctx, u.ID, orgName)
	if err != nil {
		return bootstrapResult{}, fmt.Errorf("create org: %w", err)
	}
	if credit > 0 {
		if _, err := s.Billing.Post(ctx, o.ID, storage.TxAdjustment, credit, "starting credit", ""); err != nil {
			return bootstrapResult{}, fmt.Errorf("starting credit: %w", err)
		}
	}
	_, raw, err := s.Keys.CreateAPIKey(ctx, o.ID, u.ID, "Default key")
	if err != nil {
		return bootstrapResult{}, fmt.Errorf("create key: %w", err)
	}
	return bootstrapResult{OrgID: o.ID, UserID: u.ID, APIKey: raw}, nil
}

func admin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, adminUsage)
		if len(args) == 0 {
			return errors.New("missing admin command")
		}
		return nil
	}
	cmd, args := args[0], args[1:]
	var c config
	var email, name, first, last, note string
	var orgID, cents int64
	extra := func(fs *flag.FlagSet) {
		switch cmd {
		case "bootstrap":
			fs.StringVar(&email, "email", "owner@localhost", "owner's email")
			fs.StringVar(&name, "org-name", "Default", "organization name")
		case "create-user":
			fs.StringVar(&email, "email", "", "email (required)")
			fs.StringVar(&first, "first-name", "", "first name")
			fs.StringVar(&last, "last-name", "", "last name")
		case "create-token":
			fs.StringVar(&email, "email", "", "user's email (required)")
			fs.StringVar(&name, "name", "cli", "token name")
		case "create-org":
			fs.StringVar(&email, "email", "", "owner's email (required)")
			fs.StringVar(&name, "name", "", "organization name (required, 1-120)")
		case "create-key":
			fs.Int64Var(&orgID, "org-id", 0, "organization id (required)")
			fs.StringVar(&email, "email", "", "member the key acts for (default: the owner)")
			fs.StringVar(&name, "name", "Default key", "key name")
		case "add-credit":
			fs.Int64Var(&orgID, "org-id", 0, "organization id (required)")
			fs.Int64Var(&cents, "cents", 0, "amount in USD cents (negative to remove)")
			fs.StringVar(&note, "note", "manual adjustment", "ledger description")
		}
	}
	switch cmd {
	case "bootstrap", "create-user", "create-token", "create-org", "create-key", "add-credit":
	default:
		fmt.Fprint(stderr, adminUsage)
		return fmt.Errorf("unknown admin command %q", cmd)
	}
	names := []string{"data-dir", "database-url", "secret-key", "log-level", "log-format"}
	if cmd == "bootstrap" {
		names = append(names, "dev-credit-cents")
	}
	if _, err := parse("admin "+cmd, strings.TrimSpace(adminUsage), args, stdout, &c, extra, names...); err != nil {
		return err
	}
	c.RedisURL = ""
	e, err := openEnv(ctx, &c, newLogger(&c, io.Discard))
	if err != nil {
		return err
	}
	defer e.close()
	s := e.store
	out := json.NewEncoder(stdout)
	need := func(flagName string, ok bool) error {
		if !ok {
			return fmt.Errorf("admin %s: --%s is required", cmd, flagName)
		}
		return nil
	}
	user := func() (storage.User, error) {
		if err := need("email", email != ""); err != nil {
			return storage.User{}, err
		}
		u, err := s.Orgs.UserByEmail(ctx, email)
		if errors.Is(err, storage.ErrNotFound) {
			return u, fmt.Errorf("admin %s: no user with email %s", cmd, email)
		}
		return u, err
	}
	switch cmd {
	case "bootstrap":
		b, err := bootstrap(ctx, s, email, name, c.DevCreditCents)
		if err != nil {
			return err
		}
		return out.Encode(b)
	case "create-user":
		if err := need("email", email != ""); err != nil {
			return err
		}
		u, err := s.Orgs.CreateUser(ctx, email, first, last)
		if errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("admin create-user: a user with email %s exists", email)
		}
		if err != nil {
			return err
		}
		return out.Encode(map[string]any{"user_id": u.ID, "email": u.Email})
	case "create-token":
		u, err := user()
		if err != nil {
			return err
		}
		tok, err := s.Keys.CreatePersonalToken(ctx, u.ID, name)
		if err != nil {
			return err
		}
		return out.Encode(map[string]any{"user_id": u.ID, "token": tok})
	case "create-org":
		u, err := user()
		if err != nil {
			return err
		}
		if n := len([]rune(strings.TrimSpace(name))); n < 1 || n > 120 {
			return errors.New("admin create-org: --name must be 1-120 characters")
		}
		o, err := s.Orgs.CreateOrg(ctx, u.ID, strings.TrimSpace(name))
		if err != nil {
			return err
		}
		return out.Encode(map[string]any{"org_id": o.ID, "owner_user_id": u.ID})
	case "create-key":
		if err := need("org-id", orgID > 0); err != nil {
			return err
		}
		var uid int64
		if email != "" {
			u, err := user()
			if err != nil {
				return err
			}
			uid = u.ID
		} else {
			ms, err := s.Orgs.Members(ctx, orgID)
			if err != nil {
				return err
			}
			for _, m := range ms {
				if m.Role == storage.RoleOwner {
					uid = m.UserID
				}
			}
			if uid == 0 {
				return fmt.Errorf("admin create-key: no organization %d", orgID)
			}
		}
		if _, err := s.Orgs.MemberByUser(ctx, orgID, uid); err != nil {
			return fmt.Errorf("admin create-key: %s is not a member of organization %d", email, orgID)
		}
		k, raw, err := s.Keys.CreateAPIKey(ctx, orgID, uid, name)
		if err != nil {
			return err
		}
		return out.Encode(map[string]any{"org_id": orgID, "key_id": k.ID, "api_key": raw})
	case "add-credit":
		if err := need("org-id", orgID > 0); err != nil {
			return err
		}
		if cents == 0 {
			return errors.New("admin add-credit: --cents must not be 0")
		}
		t, err := s.Billing.Post(ctx, orgID, storage.TxAdjustment, cents, note, "")
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return fmt.Errorf("admin add-credit: no organization %d", orgID)
		case errors.Is(err, storage.ErrInsufficientFunds):
			return fmt.Errorf("admin add-credit: the balance cannot go below zero")
		case err != nil:
			return err
		}
		return out.Encode(map[string]any{"org_id": orgID, "transaction_id": t.ID, "balance_cents": t.BalanceAfterCents})
	}
	return nil
}
