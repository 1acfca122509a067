package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// PublishableKeyStore keeps the publishable keys that identify the web
// widget, and copies or moves them between organizations.
type PublishableKeyStore struct{ *base }

// PublishableKeyPrefix starts every publishable key.
const PublishableKeyPrefix = "pk_live_"

// publishableKeyPrefixLen is the length of the displayed key_prefix (spec
// section 8): pk_live_ plus four hex characters.
const publishableKeyPrefixLen = 12

// Publishable key modes: the key names its agent, or a webhook names it
// per call.
const (
	PublishableModeAgent   = "agent"
	PublishableModeWebhook = "webhook"
)

// ErrKeyInactive means the publishable key was deactivated: it can be read
// but not changed, transferred or used.
var ErrKeyInactive = errors.New("storage: publishable key is deactivated")

// PublishableKey is a widget key (spec section 2.5). Key is the full value;
// it is not a secret. AgentName is read-only, joined from the agent.
type PublishableKey struct {
	ID             int64
	OrgID          int64
	Name           string
	Key            string
	KeyPrefix      string
	AllowedDomains []string
	IsActive       bool
	IsEnabled      bool
	Mode           string
	AgentID        *int64
	AgentName      *string
	WebhookURL     *string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

const pkSelect = `SELECT k.id, k.org_id, k.name, k.key_value, k.key_prefix, k.allowed_domains, k.is_active, k.is_enabled, k.mode,
	k.agent_id, a.name, k.webhook_url, k.created_at, k.updated_at
	FROM publishable_keys k LEFT JOIN agents a ON a.id = k.agent_id`

func scanPublishableKey(row rowScanner) (PublishableKey, error) {
	var k PublishableKey
	var domains string
	var agentID sql.NullInt64
	var agentName, hook sql.NullString
	var c, u int64
	if err := row.Scan(&k.ID, &k.OrgID, &k.Name, &k.Key, &k.KeyPrefix, &domains, &k.IsActive, &k.IsEnabled, &k.Mode,
		&agentID, &agentName, &hook, &c, &u); err != nil {
		return PublishableKey{}, translate(err)
	}
	if err := json.Unmarshal([]byte(domains), &k.AllowedDomains); err != nil {
		return PublishableKey{}, err
	}
	if agentID.Valid {
		k.AgentID = &agentID.Int64
	}
	if agentName.Valid {
		k.AgentName = &agentName.String
	}
	if hook.Valid {
		k.WebhookURL = &hook.String
	}
	k.CreatedAt, k.UpdatedAt = fromMS(c), fromMS(u)
	return k, nil
}

// newPublishableKeyValue returns a fresh pk_live_ value with 128 random bits.
func newPublishableKeyValue() string { return PublishableKeyPrefix + randomHex(16) }

// CreatePublishableKey creates k in k.OrgID with a fresh key value. An
// agent id must name an agent of the org (ErrAgentNotInOrg). Mode rules are
// the caller's; the store keeps what it is given.
func (s *PublishableKeyStore) CreatePublishableKey(ctx context.Context, k PublishableKey) (PublishableKey, error) {
	var out PublishableKey
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = s.insertPublishableKeyTx(ctx, tx, k)
		return err
	})
	return out, err
}

func (s *PublishableKeyStore) insertPublishableKeyTx(ctx context.Context, tx *sql.Tx, k PublishableKey) (PublishableKey, error) {
	if err := agentInOrgTx(ctx, tx, k.OrgID, k.AgentID); err != nil {
		return PublishableKey{}, err
	}
	domains, err := json.Marshal(nonNilStrings(k.AllowedDomains))
	if err != nil {
		return PublishableKey{}, err
	}
	now := s.nowMS()
	k.Key = newPublishableKeyValue()
	k.KeyPrefix = k.Key[:publishableKeyPrefixLen]
	if err := tx.QueryRowContext(ctx, `INSERT INTO publishable_keys (org_id, name, key_value, key_prefix, allowed_domains, is_active, is_enabled,
		mode, agent_id, webhook_url, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, TRUE, $6, $7, $8, $9, $10, $10) RETURNING id`,
		k.OrgID, k.Name, k.Key, k.KeyPrefix, string(domains), k.IsEnabled, k.Mode, k.AgentID, k.WebhookURL, now).Scan(&k.ID); err != nil {
		return PublishableKey{}, translate(err)
	}
	return scanPublishableKey(tx.QueryRowContext(ctx, pkSelect+` WHERE k.id = $1`, k.ID))
}

// agentInOrgTx checks that id (when set) names an agent of orgID.
func agentInOrgTx(ctx context.Context, tx *sql.Tx, orgID int64, id *int64) error {
	if id == nil {
		return nil
	}
	var n int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM agents WHERE id = $1 AND org_id = $2`, *id, orgID).Scan(&n)
	if errors.Is(translate(err), ErrNotFound) {
		return ErrAgentNotInOrg
	}
	return translate(err)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// PublishableKeys lists orgID's keys, active and deactivated, oldest first.
func (s *PublishableKeyStore) PublishableKeys(ctx context.Context, orgID int64) ([]PublishableKey, error) {
	return scanAll(ctx, s.db.DB, func(r interface{ Scan(...any) error }) (PublishableKey, error) { return scanPublishableKey(r) },
		pkSelect+` WHERE k.org_id = $1 ORDER BY k.created_at, k.id`, orgID)
}

// PublishableKey returns key id of orgID.
func (s *PublishableKeyStore) PublishableKey(ctx context.Context, orgID, id int64) (PublishableKey, error) {
	return scanPublishableKey(s.db.QueryRowContext(ctx, pkSelect+` WHERE k.org_id = $1 AND k.id = $2`, orgID, id))
}

// PublishableKeyByValue returns the key whose full value is key, active or
// not (the widget's lookup; the caller checks IsActive and IsEnabled).
func (s *PublishableKeyStore) PublishableKeyByValue(ctx context.Context, key string) (PublishableKey, error) {
	return scanPublishableKey(s.db.QueryRowContext(ctx, pkSelect+` WHERE k.key_value = $1`, key))
}

// UpdatePublishableKey changes key id of orgID under a row lock: fn sees the
// current row and edits it; name, allowed domains, enabled, mode, agent and
// webhook URL are saved. A deactivated key gives ErrKeyInactive; an agent
// outside the org gives ErrAgentNotInOrg.
func (s *PublishableKeyStore) UpdatePublishableKey(ctx context.Context, orgID, id int64, fn func(k *PublishableKey) error) (PublishableKey, error) {
	var out PublishableKey
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := lockRow(ctx, tx, "publishable_keys", orgID, id); err != nil {
			return err
		}
		k, err := scanPublishableKey(tx.QueryRowContext(ctx, pkSelect+` WHERE k.id = $1`, id))
		if err != nil {
			return err
		}
		if !k.IsActive {
			return ErrKeyInactive
		}
		if err := fn(&k); err != nil {
			return err
		}
		if err := agentInOrgTx(ctx, tx, orgID, k.AgentID); err != nil {
			return err
		}
		domains, err := json.Marshal(nonNilStrings(k.AllowedDomains))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE publishable_keys SET name = $1, allowed_domains = $2, is_enabled = $3, mode = $4, agent_id = $5,
			webhook_url = $6, updated_at = $7 WHERE id = $8`, k.Name, string(domains), k.IsEnabled, k.Mode, k.AgentID, k.WebhookURL, s.nowMS(), id); err != nil {
			return translate(err)
		}
		out, err = scanPublishableKey(tx.QueryRowContext(ctx, pkSelect+` WHERE k.id = $1`, id))
		return err
	})
	return out, err
}

// DeactivatePublishableKey sets is_active false on key id of orgID. The key
// stays listed; deactivating twice is not an error.
func (s *PublishableKeyStore) DeactivatePublishableKey(ctx context.Context, orgID, id int64) error {
	now := s.nowMS()
	res, err := s.db.ExecContext(ctx, `UPDATE publishable_keys SET is_active = FALSE, deactivated_at = COALESCE(deactivated_at, $1),
		updated_at = CASE WHEN is_active THEN $1 ELSE updated_at END WHERE org_id = $2 AND id = $3`, now, orgID, id)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// PublishableTransfer is the outcome of TransferPublishableKey.
type PublishableTransfer struct {
	// Key is the key as it now is in the target organization: the moved
	// key (same id and value) or the copy (new id and value).
	Key PublishableKey
	// ClearedAgent says the key's agent in the source organization was
	// unassigned (agents belong to one organization; the key now has the
	// target's agent it was given).
	ClearedAgent bool
}

// TransferPublishableKey copies or moves key id from fromOrg to toOrg on
// behalf of userID, who must be admin or owner of both (ErrRole,
// ErrNotMember). A move keeps the id and the value, so pages that embed
// the key keep working and bill the new organization; a copy gets a new id
// and value and leaves the original alone. name, when not nil, names the
// result. Agents do not cross organizations: a key in agent mode takes
// agentID, an agent of toOrg (ErrAgentRequired without one,
// ErrAgentNotInOrg for another org's), so it is never in agent mode
// without an agent (spec 2.5); for a key in webhook mode agentID is the
// optional fallback agent. A deactivated key gives ErrKeyInactive.
func (s *PublishableKeyStore) TransferPublishableKey(ctx context.Context, fromOrg, toOrg, id, userID int64, copy bool, name *string, agentID *int64) (PublishableTransfer, error) {
	if fromOrg == toOrg {
		return PublishableTransfer{}, ErrSameOrg
	}
	var out PublishableTransfer
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		// Lock memberships in org id order so two opposite transfers cannot deadlock.
		first, second := min(fromOrg, toOrg), max(fromOrg, toOrg)
		for _, o := range []int64{first, second} {
			if _, err := lockMembership(tx, o, userID, RoleAdmin); err != nil {
				return err
			}
		}
		if err := lockRow(ctx, tx, "publishable_keys", fromOrg, id); err != nil {
			return err
		}
		k, err := scanPublishableKey(tx.QueryRowContext(ctx, pkSelect+` WHERE k.id = $1`, id))
		if err != nil {
			return err
		}
		if !k.IsActive {
			return ErrKeyInactive
		}
		if k.Mode == PublishableModeAgent && agentID == nil {
			return ErrAgentRequired
		}
		if err := agentInOrgTx(ctx, tx, toOrg, agentID); err != nil {
			return err
		}
		out.ClearedAgent = k.AgentID != nil
		k.OrgID, k.AgentID, k.AgentName = toOrg, agentID, nil
		if name != nil {
			k.Name = *name
		}
		if copy {
			out.Key, err = s.insertPublishableKeyTx(ctx, tx, k)
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE publishable_keys SET org_id = $1, name = $2, agent_id = $3, updated_at = $4 WHERE id = $5`,
			toOrg, k.Name, agentID, s.nowMS(), id); err != nil {
			return translate(err)
		}
		out.Key, err = scanPublishableKey(tx.QueryRowContext(ctx, pkSelect+` WHERE k.id = $1`, id))
		return err
	})
	return out, err
}
