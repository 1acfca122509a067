package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// OutboxStore holds the webhook outbox: emitted events and their
// deliveries, claimed by the delivery worker. It is safe for concurrent
// use.
type OutboxStore struct{ *base }

// Delivery attempt budgets (spec section 8): an endpoint gets 8 attempts;
// the legacy URL a single one.
const (
	EndpointAttempts = 8
	LegacyAttempts   = 1
)

// TestEventType is the synthetic event POST .../test sends.
const TestEventType = "webhook.test"

// legacyTypes are the call-lifecycle events the outbox also sends to the
// legacy URL. The incoming and tool types reach the legacy URL only through
// their blocking exchanges (the call needs the answer), never twice.
var legacyTypes = []string{"telephony.complete", "web.complete"}

// Event is one emitted webhook event. Its ID is the envelope's event_id,
// identical on every attempt and every endpoint.
type Event struct {
	ID        string
	OrgID     int64
	Type      string
	Data      json.RawMessage
	CreatedAt time.Time
}

// DeliveryStatus is where one (event, destination) delivery stands.
type DeliveryStatus string

// The delivery states.
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliveryDelivered DeliveryStatus = "delivered"
	DeliveryFailed    DeliveryStatus = "failed"
)

// Delivery is one event on its way to one destination.
type Delivery struct {
	ID      int64
	EventID string
	OrgID   int64
	// EndpointID is empty for the org's legacy URL.
	EndpointID     string
	Status         DeliveryStatus
	Attempts       int
	MaxAttempts    int
	FirstAttemptAt *time.Time
	NextAttemptAt  time.Time
	LastStatusCode int
	LastError      string
	DeliveredAt    *time.Time
}

// eventData turns data into the JSON object stored with an event.
func eventData(data any) ([]byte, error) {
	var b []byte
	switch d := data.(type) {
	case json.RawMessage:
		b = d
	case []byte:
		b = d
	default:
		var err error
		if b, err = json.Marshal(data); err != nil {
			return nil, fmt.Errorf("event data: %w", err)
		}
	}
	if !json.Valid(b) || len(b) == 0 || b[0] != '{' {
		return nil, errors.New("event data must be a JSON object")
	}
	return b, nil
}

// Emit writes an event to the outbox with one delivery per destination:
// every active or failing endpoint of the org subscribed to typ (an empty
// events list subscribes to all; a failing endpoint's deliveries wait for
// it to be resumed; disabled endpoints get none), and the legacy URL for
// the call-completion types. State changes inside the store emit with
// emitTx in their own transaction; Emit is for emitters that have none.
func (s *OutboxStore) Emit(ctx context.Context, orgID int64, typ string, data any) (Event, error) {
	b, err := eventData(data)
	if err != nil {
		return Event{}, err
	}
	var ev Event
	err = s.db.tx(ctx, func(tx *sql.Tx) error {
		ev, err = s.emitTx(ctx, tx, orgID, typ, b, s.nowMS())
		return err
	})
	return ev, err
}

func (s *base) emitTx(ctx context.Context, tx *sql.Tx, orgID int64, typ string, data []byte, now int64) (Event, error) {
	ev := Event{ID: NewUUID(), OrgID: orgID, Type: typ, Data: data, CreatedAt: fromMS(now)}
	if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_events (id, org_id, type, data, created_at) VALUES ($1, $2, $3, $4, $5)`,
		ev.ID, orgID, typ, string(data), now); err != nil {
		return Event{}, translate(err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, events FROM webhook_endpoints WHERE org_id = $1 AND status IN ('active', 'failing')`, orgID)
	if err != nil {
		return Event{}, translate(err)
	}
	var targets []string
	for rows.Next() {
		var id, events string
		if err := rows.Scan(&id, &events); err != nil {
			rows.Close()
			return Event{}, translate(err)
		}
		var subs []string
		_ = json.Unmarshal([]byte(events), &subs)
		if len(subs) == 0 || slices.Contains(subs, typ) {
			targets = append(targets, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Event{}, translate(err)
	}
	for _, id := range targets {
		if err := insertDelivery(ctx, tx, ev, id, EndpointAttempts, now); err != nil {
			return Event{}, err
		}
	}
	if slices.Contains(legacyTypes, typ) {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM org_webhooks WHERE org_id = $1`, orgID).Scan(&n); err != nil {
			return Event{}, translate(err)
		}
		if n > 0 {
			if err := insertDelivery(ctx, tx, ev, "", LegacyAttempts, now); err != nil {
				return Event{}, err
			}
		}
	}
	return ev, nil
}

func insertDelivery(ctx context.Context, tx *sql.Tx, ev Event, endpointID string, attempts int, now int64) error {
	var ep any
	if endpointID != "" {
		ep = endpointID
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (event_id, org_id, endpoint_id, status, max_attempts, next_attempt_at, created_at, updated_at)
		VALUES ($1, $2, $3, 'pending', $4, $5, $5, $5)`, ev.ID, ev.OrgID, ep, attempts, now)
	return translate(err)
}

// EmitTest writes a synthetic webhook.test event with a single delivery to
// one of orgID's endpoints, whatever its filter, and returns the delivery.
func (s *OutboxStore) EmitTest(ctx context.Context, orgID int64, endpointID string, data any) (Event, Delivery, error) {
	b, err := eventData(data)
	if err != nil {
		return Event{}, Delivery{}, err
	}
	now := s.nowMS()
	ev := Event{ID: NewUUID(), OrgID: orgID, Type: TestEventType, Data: b, CreatedAt: fromMS(now)}
	var d Delivery
	err = s.db.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM webhook_endpoints WHERE org_id = $1 AND id = $2`, orgID, endpointID).Scan(&n); err != nil {
			return translate(err)
		}
		if n == 0 {
			return ErrNotFound
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_events (id, org_id, type, data, created_at) VALUES ($1, $2, $3, $4, $5)`,
			ev.ID, orgID, ev.Type, string(b), now); err != nil {
			return translate(err)
		}
		if err := insertDelivery(ctx, tx, ev, endpointID, EndpointAttempts, now); err != nil {
			return err
		}
		var err error
		d, err = scanDelivery(tx.QueryRowContext(ctx, deliverySelect+` WHERE event_id = $1`, ev.ID))
		return err
	})
	return ev, d, err
}

const deliverySelect = `SELECT id, event_id, org_id, COALESCE(endpoint_id, ''), status, attempts, max_attempts, first_attempt_at, next_attempt_at,
	COALESCE(last_status_code, 0), last_error, delivered_at FROM webhook_deliveries`

func scanDelivery(r interface{ Scan(...any) error }) (Delivery, error) {
	var d Delivery
	var first, delivered sql.NullInt64
	var next int64
	if err := r.Scan(&d.ID, &d.EventID, &d.OrgID, &d.EndpointID, &d.Status, &d.Attempts, &d.MaxAttempts, &first, &next,
		&d.LastStatusCode, &d.LastError, &delivered); err != nil {
		return Delivery{}, translate(err)
	}
	d.FirstAttemptAt, d.NextAttemptAt, d.DeliveredAt = fromNullMS(first), fromMS(next), fromNullMS(delivered)
	return d, nil
}

// EventDeliveries lists the deliveries of one event, oldest first.
func (s *OutboxStore) EventDeliveries(ctx context.Context, eventID string) ([]Delivery, error) {
	return scanAll(ctx, s.db.DB, scanDelivery, deliverySelect+` WHERE event_id = $1 ORDER BY id`, eventID)
}

// EndpointDeliveries lists the deliveries of one endpoint, oldest first.
func (s *OutboxStore) EndpointDeliveries(ctx context.Context, endpointID string) ([]Delivery, error) {
	return scanAll(ctx, s.db.DB, scanDelivery, deliverySelect+` WHERE endpoint_id = $1 ORDER BY id`, endpointID)
}

// Outgoing is a claimed delivery with everything needed to send it.
type Outgoing struct {
	Delivery
	Type string
	Data json.RawMessage
	// URL and Secret are the endpoint's, or the legacy webhook's when
	// Legacy; URL is empty when the legacy webhook was removed meanwhile.
	URL    string
	Secret string
	Legacy bool
	// LeaseToken identifies the claim; RecordAttempt needs it.
	LeaseToken string
}

// ClaimDeliveries leases up to limit pending deliveries due at now whose
// destination takes traffic (an active endpoint, or the legacy URL). A
// claimed delivery belongs to its worker until the lease runs out; a
// worker that dies mid-delivery simply lets it run out, and the delivery
// is attempted again (at-least-once). The first claim stamps the first
// attempt time the retry schedule counts from.
func (s *OutboxStore) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Outgoing, error) {
	tok := NewUUID()
	n := ms(now)
	// The conditions are repeated outside the subquery: PostgreSQL
	// re-evaluates them on a row another worker has just claimed and skips
	// it, so two workers never hold one delivery.
	_, err := s.db.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_until = $1, lease_token = $2, first_attempt_at = COALESCE(first_attempt_at, $3), updated_at = $3
		WHERE id IN (SELECT d.id FROM webhook_deliveries d LEFT JOIN webhook_endpoints e ON e.id = d.endpoint_id
			WHERE d.status = 'pending' AND d.next_attempt_at <= $3 AND (d.lease_until IS NULL OR d.lease_until <= $3)
				AND (d.endpoint_id IS NULL OR e.status = 'active')
			ORDER BY d.next_attempt_at, d.id LIMIT $4)
		AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $3)`, ms(now.Add(lease)), tok, n, limit)
	if err != nil {
		return nil, translate(err)
	}
	return s.outgoing(ctx, tok)
}

// ClaimDelivery leases one pending delivery by id now, whatever its
// schedule and its endpoint's state (the test endpoint's first attempt).
// ErrNotFound if it is not pending or another worker holds it.
func (s *OutboxStore) ClaimDelivery(ctx context.Context, id int64, now time.Time, lease time.Duration) (Outgoing, error) {
	tok := NewUUID()
	n := ms(now)
	res, err := s.db.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_until = $1, lease_token = $2, first_attempt_at = COALESCE(first_attempt_at, $3), updated_at = $3
		WHERE id = $4 AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $3)`, ms(now.Add(lease)), tok, n, id)
	if err != nil {
		return Outgoing{}, translate(err)
	}
	if k, _ := res.RowsAffected(); k == 0 {
		return Outgoing{}, ErrNotFound
	}
	out, err := s.outgoing(ctx, tok)
	if err != nil {
		return Outgoing{}, err
	}
	if len(out) != 1 {
		return Outgoing{}, ErrNotFound
	}
	return out[0], nil
}

func (s *OutboxStore) outgoing(ctx context.Context, tok string) ([]Outgoing, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT d.id, d.event_id, d.org_id, COALESCE(d.endpoint_id, ''), d.status, d.attempts, d.max_attempts,
			d.first_attempt_at, d.next_attempt_at, COALESCE(d.last_status_code, 0), d.last_error, d.delivered_at,
			ev.type, ev.data, COALESCE(e.url, w.url, ''), COALESCE(e.secret_enc, w.secret_enc, '')
		FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id
		LEFT JOIN webhook_endpoints e ON e.id = d.endpoint_id
		LEFT JOIN org_webhooks w ON d.endpoint_id IS NULL AND w.org_id = d.org_id
		WHERE d.lease_token = $1 ORDER BY d.next_attempt_at, d.id`, tok)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []Outgoing
	for rows.Next() {
		var o Outgoing
		var first, delivered sql.NullInt64
		var next int64
		var data, sealed string
		if err := rows.Scan(&o.ID, &o.EventID, &o.OrgID, &o.EndpointID, &o.Status, &o.Attempts, &o.MaxAttempts, &first, &next,
			&o.LastStatusCode, &o.LastError, &delivered, &o.Type, &data, &o.URL, &sealed); err != nil {
			return nil, translate(err)
		}
		o.FirstAttemptAt, o.NextAttemptAt, o.DeliveredAt = fromNullMS(first), fromMS(next), fromNullMS(delivered)
		o.Data, o.Legacy, o.LeaseToken = json.RawMessage(data), o.EndpointID == "", tok
		if sealed != "" {
			if o.Secret, err = s.open(sealed); err != nil {
				return nil, err
			}
		}
		out = append(out, o)
	}
	return out, translate(rows.Err())
}

// Attempt is the result of one delivery attempt.
type Attempt struct {
	At         time.Time
	StatusCode int // 0 when no response arrived
	// Err says what went wrong, for the record; empty on success.
	Err       string
	Delivered bool
	// NextAt is when to try again; zero gives up: the delivery fails and
	// its endpoint, if active, becomes failing.
	NextAt time.Time
}

// RecordAttempt records the attempt made on claimed delivery o. It does
// nothing if the claim was lost (the lease ran out and another worker took
// the delivery) or the delivery was deleted with its endpoint meanwhile.
func (s *OutboxStore) RecordAttempt(ctx context.Context, o Outgoing, a Attempt) (Delivery, error) {
	now := ms(a.At)
	errText := a.Err
	if len(errText) > 500 {
		errText = strings.ToValidUTF8(errText[:500], "")
	}
	var code any
	if a.StatusCode != 0 {
		code = a.StatusCode
	}
	status, next := DeliveryPending, ms(a.NextAt)
	var delivered any
	switch {
	case a.Delivered:
		status, next, delivered = DeliveryDelivered, now, now
	case a.NextAt.IsZero():
		status, next = DeliveryFailed, now
	}
	// One statement on the common paths; giving up also marks the endpoint,
	// in the same transaction.
	var d Delivery
	record := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) error {
		var err error
		d, err = scanDelivery(q.QueryRowContext(ctx, `UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, next_attempt_at = $2,
			lease_until = NULL, lease_token = NULL, last_status_code = $3, last_error = $4, delivered_at = $5, updated_at = $6
			WHERE id = $7 AND lease_token = $8 AND status = 'pending'
			RETURNING id, event_id, org_id, COALESCE(endpoint_id, ''), status, attempts, max_attempts, first_attempt_at, next_attempt_at,
				COALESCE(last_status_code, 0), last_error, delivered_at`, status, next, code, errText, delivered, now, o.ID, o.LeaseToken))
		return err
	}
	if status != DeliveryFailed || o.EndpointID == "" {
		err := record(s.db.DB)
		return d, err
	}
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := record(tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE webhook_endpoints SET status = 'failing', updated_at = $1 WHERE id = $2 AND status = 'active'`, now, o.EndpointID)
		return translate(err)
	})
	return d, err
}
