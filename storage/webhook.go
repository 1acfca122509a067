package storage

import (
	"context"
	"database/sql"
	"time"
)

// WebhookStore keeps where an organization's webhook events go: the legacy
// URL (one per org, its secret sealed) and the webhook endpoints. The
// events and deliveries themselves are the outbox, on Store.
type WebhookStore struct{ *base }

// Webhook is an org's legacy single-URL webhook.
type Webhook struct {
	OrgID     int64
	URL       string
	Secret    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// GetWebhook returns orgID's legacy webhook; ErrNotFound if none is set.
func (s *WebhookStore) GetWebhook(ctx context.Context, orgID int64) (Webhook, error) {
	w := Webhook{OrgID: orgID}
	var sealed string
	var c, u int64
	err := s.db.QueryRowContext(ctx, `SELECT url, secret_enc, created_at, updated_at FROM org_webhooks WHERE org_id = $1`, orgID).
		Scan(&w.URL, &sealed, &c, &u)
	if err != nil {
		return Webhook{}, translate(err)
	}
	if w.Secret, err = s.open(sealed); err != nil {
		return Webhook{}, err
	}
	w.CreatedAt, w.UpdatedAt = fromMS(c), fromMS(u)
	return w, nil
}

// SetWebhook sets orgID's legacy webhook URL. A new secret is generated when
// the row is created or when rotate is true (PUT); otherwise (PATCH) the
// secret is kept.
func (s *WebhookStore) SetWebhook(ctx context.Context, orgID int64, url string, rotate bool) (Webhook, error) {
	sealed, err := s.seal("whsec_" + randomHex(24))
	if err != nil {
		return Webhook{}, err
	}
	now := s.nowMS()
	err = s.db.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO org_webhooks (org_id, url, secret_enc, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $4)
			ON CONFLICT (org_id) DO UPDATE SET url = excluded.url, updated_at = excluded.updated_at,
				secret_enc = CASE WHEN $5 THEN excluded.secret_enc ELSE org_webhooks.secret_enc END`,
			orgID, url, sealed, now, rotate)
		return translate(err)
	})
	if err != nil {
		return Webhook{}, err
	}
	return s.GetWebhook(ctx, orgID)
}
