package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// EndpointStatus is a webhook endpoint's state (spec section 3).
type EndpointStatus string

// The endpoint states. The server moves active to failing when a delivery
// exhausts its attempts; only the user moves an endpoint to or from
// disabled, and from failing back to active.
const (
	EndpointActive   EndpointStatus = "active"
	EndpointDisabled EndpointStatus = "disabled"
	EndpointFailing  EndpointStatus = "failing"
)

// WebhookEndpoint is a registered webhook destination (spec section 2.6).
type WebhookEndpoint struct {
	ID     string
	OrgID  int64
	Label  string
	URL    string
	Events []string
	Status EndpointStatus
	// Secret is the signing secret: 48 hex characters.
	Secret     string
	SecretHint string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// secretHint is the first 4 and last 4 characters joined by an ellipsis.
func secretHint(secret string) string {
	if len(secret) < 8 {
		return "…"
	}
	return secret[:4] + "…" + secret[len(secret)-4:]
}

const endpointSelect = `SELECT id, org_id, label, url, events, status, secret_enc, secret_hint, created_at, updated_at FROM webhook_endpoints`

func (s *WebhookStore) scanEndpoint(r interface{ Scan(...any) error }) (WebhookEndpoint, error) {
	var e WebhookEndpoint
	var events, sealed string
	var c, u int64
	if err := r.Scan(&e.ID, &e.OrgID, &e.Label, &e.URL, &events, &e.Status, &sealed, &e.SecretHint, &c, &u); err != nil {
		return WebhookEndpoint{}, translate(err)
	}
	if err := json.Unmarshal([]byte(events), &e.Events); err != nil {
		return WebhookEndpoint{}, err
	}
	secret, err := s.open(sealed)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	e.Secret = secret
	e.CreatedAt, e.UpdatedAt = fromMS(c), fromMS(u)
	return e, nil
}

func eventsJSON(events []string) string {
	if events == nil {
		events = []string{}
	}
	b, _ := json.Marshal(events)
	return string(b)
}

// CreateWebhookEndpoint registers an active endpoint with a new secret.
func (s *WebhookStore) CreateWebhookEndpoint(ctx context.Context, orgID int64, label, url string, events []string) (WebhookEndpoint, error) {
	secret := randomHex(24)
	sealed, err := s.seal(secret)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	if events == nil {
		events = []string{}
	}
	now := s.nowMS()
	e := WebhookEndpoint{ID: NewUUID(), OrgID: orgID, Label: label, URL: url, Events: events, Status: EndpointActive,
		Secret: secret, SecretHint: secretHint(secret), CreatedAt: fromMS(now), UpdatedAt: fromMS(now)}
	_, err = s.db.ExecContext(ctx, `INSERT INTO webhook_endpoints (id, org_id, label, url, events, status, secret_enc, secret_hint, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`, e.ID, orgID, label, url, eventsJSON(events), e.Status, sealed, e.SecretHint, now)
	if err != nil {
		return WebhookEndpoint{}, translate(err)
	}
	return e, nil
}

// WebhookEndpoints lists orgID's endpoints, oldest first.
func (s *WebhookStore) WebhookEndpoints(ctx context.Context, orgID int64) ([]WebhookEndpoint, error) {
	return scanAll(ctx, s.db.DB, s.scanEndpoint, endpointSelect+` WHERE org_id = $1 ORDER BY created_at, id`, orgID)
}

// WebhookEndpoint returns one of orgID's endpoints.
func (s *WebhookStore) WebhookEndpoint(ctx context.Context, orgID int64, id string) (WebhookEndpoint, error) {
	return s.scanEndpoint(s.db.QueryRowContext(ctx, endpointSelect+` WHERE org_id = $1 AND id = $2`, orgID, id))
}

// EndpointPatch changes an endpoint; nil fields are unchanged.
type EndpointPatch struct {
	Label  *string
	URL    *string
	Events *[]string
	// Status may be EndpointActive or EndpointDisabled. Active on a failing
	// endpoint resumes its pending deliveries where their schedule stands.
	Status *EndpointStatus
}

// UpdateWebhookEndpoint applies p to one of orgID's endpoints.
func (s *WebhookStore) UpdateWebhookEndpoint(ctx context.Context, orgID int64, id string, p EndpointPatch) (WebhookEndpoint, error) {
	var e WebhookEndpoint
	now := s.nowMS()
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		e, err = s.scanEndpoint(tx.QueryRowContext(ctx, endpointSelect+` WHERE org_id = $1 AND id = $2`, orgID, id))
		if err != nil {
			return err
		}
		if p.Label != nil {
			e.Label = *p.Label
		}
		if p.URL != nil {
			e.URL = *p.URL
		}
		if p.Events != nil {
			e.Events = *p.Events
			if e.Events == nil {
				e.Events = []string{}
			}
		}
		if p.Status != nil {
			e.Status = *p.Status
		}
		e.UpdatedAt = fromMS(now)
		_, err = tx.ExecContext(ctx, `UPDATE webhook_endpoints SET label = $1, url = $2, events = $3, status = $4, updated_at = $5 WHERE id = $6`,
			e.Label, e.URL, eventsJSON(e.Events), e.Status, now, id)
		return translate(err)
	})
	if err != nil {
		return WebhookEndpoint{}, err
	}
	return e, nil
}

// DeleteWebhookEndpoint removes an endpoint and, with it, every delivery
// still pending for it: in-flight retries are abandoned.
func (s *WebhookStore) DeleteWebhookEndpoint(ctx context.Context, orgID int64, id string) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		// Explicit, not only ON DELETE CASCADE: SQLite enforces foreign keys
		// per connection, and this must hold whatever the pragma.
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE endpoint_id = $1 AND org_id = $2`, id, orgID); err != nil {
			return translate(err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE org_id = $1 AND id = $2`, orgID, id)
		if err != nil {
			return translate(err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return nil
	})
}
