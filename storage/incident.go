package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

// AlertEventType is the webhook event a new incident emits (spec 6.1).
const AlertEventType = "alert.triggered"

// IncidentStore keeps the platform's monitoring incidents: alerts posted by
// the monitors, deduplicated while open, acknowledged by a single-use token
// or by rule name, resolved by the monitor. Incidents belong to no org.
type IncidentStore struct{ *base }

// Incident is one monitoring alert while it lasts.
type Incident struct {
	ID int64
	// Source is the monitor: "azure" or "glitchtip".
	Source string
	// AlertKey identifies the alert at its source (the Azure rule name, the
	// GlitchTip issue link); one open incident per (Source, AlertKey).
	AlertKey string
	// Rule is the alert rule's name, which auto-ack matches.
	Rule     string
	Product  string
	Severity string
	// Title and Description are the monitor's text, for operators only.
	Title       string
	Description string
	// Count is how many times the alert fired while the incident was open.
	Count      int64
	StartedAt  time.Time
	LastSeenAt time.Time
	AckedAt    *time.Time
	ResolvedAt *time.Time
}

// Alert is a firing alert as a monitor reported it.
type Alert struct {
	Source, Key, Rule, Product, Severity, Title, Description string
	// At is when the monitor says it fired.
	At time.Time
}

const incidentCols = `id, source, alert_key, rule, product, severity, title, description, count, started_at, last_seen_at, acked_at, resolved_at`

func scanIncident(r interface{ Scan(...any) error }) (Incident, error) {
	var i Incident
	var started, seen int64
	var acked, resolved sql.NullInt64
	if err := r.Scan(&i.ID, &i.Source, &i.AlertKey, &i.Rule, &i.Product, &i.Severity, &i.Title, &i.Description, &i.Count,
		&started, &seen, &acked, &resolved); err != nil {
		return Incident{}, translate(err)
	}
	i.StartedAt, i.LastSeenAt, i.AckedAt, i.ResolvedAt = fromMS(started), fromMS(seen), fromNullMS(acked), fromNullMS(resolved)
	return i, nil
}

// RecordAlert opens an incident for a firing alert, or, when one is open
// for the same source and key, counts the repeat (count and last_seen_at;
// the rest stays as first reported, acknowledged or not). For a new
// incident it returns the raw acknowledgement token (only its hash is
// stored) and, in the same transaction, emits alert.triggered with the
// data event returns to every org that has an active or failing endpoint
// subscribed to it (explicitly or by an empty list). A repeat returns "".
func (s *IncidentStore) RecordAlert(ctx context.Context, a Alert, event func(Incident) any) (Incident, string, error) {
	raw := "ack_" + randomHex(24)
	now := s.nowMS()
	if a.At.IsZero() {
		a.At = fromMS(now)
	}
	var inc Incident
	var created bool
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		inc, err = scanIncident(tx.QueryRowContext(ctx, `INSERT INTO incidents (source, alert_key, rule, product, severity, title, description, count, started_at, last_seen_at, ack_token_hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9, $10)
			ON CONFLICT (source, alert_key) WHERE resolved_at IS NULL
			DO UPDATE SET count = incidents.count + 1, last_seen_at = excluded.last_seen_at
			RETURNING `+incidentCols, a.Source, a.Key, a.Rule, a.Product, a.Severity, a.Title, a.Description, ms(a.At), now, HashToken(raw)))
		if err != nil {
			return err
		}
		created = inc.Count == 1
		if !created || event == nil {
			return nil
		}
		data, err := eventData(event(inc))
		if err != nil {
			return err
		}
		orgs, err := subscribedOrgs(ctx, tx, AlertEventType)
		if err != nil {
			return err
		}
		for _, org := range orgs {
			if _, err := s.emitTx(ctx, tx, org, AlertEventType, data, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Incident{}, "", err
	}
	if !created {
		raw = ""
	}
	return inc, raw, nil
}

// subscribedOrgs lists the orgs with an active or failing endpoint that
// receives typ, in id order.
func subscribedOrgs(ctx context.Context, tx *sql.Tx, typ string) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT org_id, events FROM webhook_endpoints WHERE status IN ('active', 'failing') ORDER BY org_id`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var org int64
		var events string
		if err := rows.Scan(&org, &events); err != nil {
			return nil, translate(err)
		}
		var subs []string
		_ = json.Unmarshal([]byte(events), &subs)
		if (len(subs) == 0 || slices.Contains(subs, typ)) && (len(out) == 0 || out[len(out)-1] != org) {
			out = append(out, org)
		}
	}
	return out, translate(rows.Err())
}

// ResolveAlert resolves the open incident of source and key at the given
// time; ErrNotFound when none is open.
func (s *IncidentStore) ResolveAlert(ctx context.Context, source, key string, at time.Time) (Incident, error) {
	return scanIncident(s.db.QueryRowContext(ctx, `UPDATE incidents SET resolved_at = $1, last_seen_at = $2
		WHERE source = $3 AND alert_key = $4 AND resolved_at IS NULL RETURNING `+incidentCols, ms(at), s.nowMS(), source, key))
}

// AckIncident acknowledges the incident whose token is raw, using the
// token up. ErrNotFound for an unknown token; ErrGone when the incident
// is already acknowledged (by this token or by rule).
func (s *IncidentStore) AckIncident(ctx context.Context, raw string) (Incident, error) {
	h := HashToken(raw)
	inc, err := scanIncident(s.db.QueryRowContext(ctx, `UPDATE incidents SET acked_at = $1 WHERE ack_token_hash = $2 AND acked_at IS NULL RETURNING `+incidentCols, s.nowMS(), h))
	if !errors.Is(err, ErrNotFound) {
		return inc, err
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM incidents WHERE ack_token_hash = $1`, h).Scan(&n); err != nil {
		return Incident{}, translate(err)
	}
	if n > 0 {
		return Incident{}, ErrGone
	}
	return Incident{}, ErrNotFound
}

// AckIncidentsByRule acknowledges every open, unacknowledged incident whose
// rule is one of rules, and returns how many it acknowledged.
func (s *IncidentStore) AckIncidentsByRule(ctx context.Context, rules []string) (int64, error) {
	if len(rules) == 0 {
		return 0, nil
	}
	args := []any{s.nowMS()}
	for _, r := range rules {
		args = append(args, r)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE incidents SET acked_at = $1 WHERE resolved_at IS NULL AND acked_at IS NULL AND rule IN (`+placeholders(2, len(rules))+`)`, args...)
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	return n, translate(err)
}

// ActiveIncidents lists the incidents neither resolved nor acknowledged,
// oldest first: what the status heartbeat shows.
func (s *IncidentStore) ActiveIncidents(ctx context.Context) ([]Incident, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+incidentCols+` FROM incidents WHERE resolved_at IS NULL AND acked_at IS NULL ORDER BY started_at, id`)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []Incident{}
	for rows.Next() {
		inc, err := scanIncident(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, inc)
	}
	return out, translate(rows.Err())
}
