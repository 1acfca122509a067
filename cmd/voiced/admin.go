package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	operator "github.com/voiced/voiced/control/admin"
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
	adm := operator.New(e.store.Orgs, e.store.Keys, e.store.Billing)
	need := func(flagName string, ok bool) error {
		if !ok {
			return fmt.Errorf("--%s is required", flagName)
		}
		return nil
	}
	var res any
	switch cmd {
	case "bootstrap":
		res, err = adm.Bootstrap(ctx, email, name, c.DevCreditCents)
	case "create-user":
		if err = need("email", email != ""); err == nil {
			res, err = adm.CreateUser(ctx, email, first, last)
		}
	case "create-token":
		if err = need("email", email != ""); err == nil {
			res, err = adm.CreateToken(ctx, email, name)
		}
	case "create-org":
		if err = need("email", email != ""); err == nil {
			res, err = adm.CreateOrg(ctx, email, name)
		}
	case "create-key":
		if err = need("org-id", orgID > 0); err == nil {
			res, err = adm.CreateKey(ctx, orgID, email, name)
		}
	case "add-credit":
		if err = need("org-id", orgID > 0); err == nil && cents == 0 {
			err = errors.New("--cents must not be 0")
		}
		if err == nil {
			res, err = adm.AddCredit(ctx, orgID, cents, note)
		}
	}
	if err != nil {
		return fmt.Errorf("admin %s: %w", cmd, err)
	}
	return json.NewEncoder(stdout).Encode(res)
}
