package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// NumberStore keeps phone numbers (demo numbers from the operator's pool
// and numbers on the organization's own trunks), every version of each,
// the labels of E.164 numbers and the SIP trunks (VoIP connections), whose
// passwords are sealed.
type NumberStore struct{ *base }

// Phone number sources and statuses (spec sections 2.7 and 3).
const (
	SourceDemo = "demo"
	SourceVoIP = "voip"

	NumberProvisioning = "provisioning"
	NumberActive       = "active"
	NumberFailed       = "failed"
	NumberReleased     = "released"

	VerificationUnverified = "unverified"
	VerificationVerified   = "verified"
	VerificationFailed     = "failed"
)

// PhoneNumber is a number an organization holds. AreaCode, City and State
// describe demo numbers (from the operator's pool) and are not part of the
// API object.
type PhoneNumber struct {
	ID                    int64
	OrgID                 int64
	Number                string
	Label                 string
	Source                string
	Status                string
	InboundAgentID        *int64
	OutboundAgentID       *int64
	VoIPConnectionID      *int64
	VerificationStatus    string
	LastVerifiedAt        *time.Time
	AreaCode, City, State string
	Revision              int64
	CreatedAt, UpdatedAt  time.Time
}

// NumberSnapshot is the phone number object of spec section 2.7, as
// version snapshots record it.
type NumberSnapshot struct {
	ID                     int64   `json:"id"`
	Number                 string  `json:"number"`
	Label                  string  `json:"label"`
	Source                 string  `json:"source"`
	Status                 string  `json:"status"`
	InboundAgentID         *int64  `json:"inbound_agent_id"`
	OutboundAgentID        *int64  `json:"outbound_agent_id"`
	VoIPConnectionID       *int64  `json:"voip_connection_id"`
	VoIPVerificationStatus string  `json:"voip_verification_status"`
	VoIPLastVerifiedAt     *string `json:"voip_last_verified_at"`
}

// snapshotFields lists NumberSnapshot's JSON names in order.
var snapshotFields = []string{"id", "number", "label", "source", "status", "inbound_agent_id", "outbound_agent_id",
	"voip_connection_id", "voip_verification_status", "voip_last_verified_at"}

// Snapshot returns n as the API object.
func (n PhoneNumber) Snapshot() NumberSnapshot {
	s := NumberSnapshot{ID: n.ID, Number: n.Number, Label: n.Label, Source: n.Source, Status: n.Status,
		InboundAgentID: n.InboundAgentID, OutboundAgentID: n.OutboundAgentID, VoIPConnectionID: n.VoIPConnectionID,
		VoIPVerificationStatus: n.VerificationStatus}
	if n.LastVerifiedAt != nil {
		v := n.LastVerifiedAt.UTC().Format("2006-01-02T15:04:05.000Z")
		s.VoIPLastVerifiedAt = &v
	}
	return s
}

// changedSnapshotFields lists the fields whose values differ.
func changedSnapshotFields(a, b NumberSnapshot) []string {
	var ma, mb map[string]json.RawMessage
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	var out []string
	for _, f := range snapshotFields {
		if string(ma[f]) != string(mb[f]) {
			out = append(out, f)
		}
	}
	return out
}

const numberSelect = `SELECT id, org_id, number, label, source, status, inbound_agent_id, outbound_agent_id, voip_connection_id,
	voip_verification_status, voip_last_verified_at, area_code, city, state, revision, created_at, updated_at FROM phone_numbers`

func scanNumber(row rowScanner) (PhoneNumber, error) {
	var n PhoneNumber
	var in, out, conn, verified sql.NullInt64
	var c, u int64
	if err := row.Scan(&n.ID, &n.OrgID, &n.Number, &n.Label, &n.Source, &n.Status, &in, &out, &conn,
		&n.VerificationStatus, &verified, &n.AreaCode, &n.City, &n.State, &n.Revision, &c, &u); err != nil {
		return PhoneNumber{}, translate(err)
	}
	n.InboundAgentID, n.OutboundAgentID, n.VoIPConnectionID = ptrInt(in), ptrInt(out), ptrInt(conn)
	n.LastVerifiedAt = fromNullMS(verified)
	n.CreatedAt, n.UpdatedAt = fromMS(c), fromMS(u)
	return n, nil
}

// CreatePhoneNumber inserts n (a VoIP number, or a demo number already
// chosen) in n.OrgID, records revision 1 on behalf of actor and completes
// the org's onboarding phone step. ErrConflict if the number is held by
// any organization; ErrNotFound if a VoIP connection is named that is not
// the org's.
func (s *NumberStore) CreatePhoneNumber(ctx context.Context, n PhoneNumber, actor *int64) (PhoneNumber, error) {
	out, err := s.CreatePhoneNumbers(ctx, []PhoneNumber{n}, actor)
	if err != nil {
		return PhoneNumber{}, err
	}
	return out[0], nil
}

// CreatePhoneNumbers inserts every one of ns, or none: ErrConflict when
// any number is held by any organization (or listed twice).
func (s *NumberStore) CreatePhoneNumbers(ctx context.Context, ns []PhoneNumber, actor *int64) ([]PhoneNumber, error) {
	var out []PhoneNumber
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		for _, n := range ns {
			got, err := s.insertNumberTx(ctx, tx, n, actor)
			if err != nil {
				return err
			}
			if got.ID == 0 {
				return ErrConflict
			}
			out = append(out, got)
		}
		return nil
	})
	return out, err
}

// CreateDemoNumber gives orgID the first of candidates that no
// organization holds; ErrNoneAvailable when every one is taken (another
// replica may take one between the caller's look and this insert: the
// unique index decides).
func (s *NumberStore) CreateDemoNumber(ctx context.Context, orgID int64, actor *int64, candidates []PhoneNumber) (PhoneNumber, error) {
	var out PhoneNumber
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		for _, c := range candidates {
			c.OrgID, c.Source, c.Status = orgID, SourceDemo, NumberProvisioning
			n, err := s.insertNumberTx(ctx, tx, c, actor)
			if err != nil {
				return err
			}
			if n.ID != 0 {
				out = n
				return nil
			}
		}
		return ErrNoneAvailable
	})
	return out, err
}

// insertNumberTx inserts n unless the number is taken, in which case it
// returns a zero PhoneNumber and no error.
func (s *NumberStore) insertNumberTx(ctx context.Context, tx *sql.Tx, n PhoneNumber, actor *int64) (PhoneNumber, error) {
	if n.VoIPConnectionID != nil {
		if err := lockRow(ctx, tx, "voip_connections", n.OrgID, *n.VoIPConnectionID); err != nil {
			return PhoneNumber{}, err
		}
	}
	now := s.nowMS()
	if n.VerificationStatus == "" {
		n.VerificationStatus = VerificationUnverified
	}
	n.Revision, n.CreatedAt, n.UpdatedAt = 1, fromMS(now), fromMS(now)
	err := tx.QueryRowContext(ctx, `INSERT INTO phone_numbers (org_id, number, label, source, status, voip_connection_id,
		voip_verification_status, area_code, city, state, revision, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1, $11, $11)
		ON CONFLICT (number) DO NOTHING RETURNING id`,
		n.OrgID, n.Number, n.Label, n.Source, n.Status, nullInt(n.VoIPConnectionID), n.VerificationStatus,
		n.AreaCode, n.City, n.State, now).Scan(&n.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return PhoneNumber{}, nil
	}
	if err != nil {
		return PhoneNumber{}, translate(err)
	}
	snap, err := json.Marshal(n.Snapshot())
	if err != nil {
		return PhoneNumber{}, err
	}
	if err := numberVersions.insert(ctx, tx, n.ID, 1, snap, snapshotFields, actor, now); err != nil {
		return PhoneNumber{}, err
	}
	return n, markOnboardingTx(ctx, tx, n.OrgID, StepPhone, now)
}

// PhoneNumber returns number id of orgID.
func (s *NumberStore) PhoneNumber(ctx context.Context, orgID, id int64) (PhoneNumber, error) {
	return scanNumber(s.db.QueryRowContext(ctx, numberSelect+` WHERE org_id = $1 AND id = $2`, orgID, id))
}

// PhoneNumberByE164 returns the number held by any organization. It is the
// call side's routing lookup, so it lives on CallStore with the call queries.
func (s *CallStore) PhoneNumberByE164(ctx context.Context, number string) (PhoneNumber, error) {
	return scanNumber(s.db.QueryRowContext(ctx, numberSelect+` WHERE number = $1`, number))
}

// PhoneNumbers lists orgID's numbers, newest first.
func (s *NumberStore) PhoneNumbers(ctx context.Context, orgID int64) ([]PhoneNumber, error) {
	return s.queryNumbers(ctx, numberSelect+` WHERE org_id = $1 ORDER BY created_at DESC, id DESC`, orgID)
}

// NumbersInStatus lists the numbers of every organization with source and
// status, oldest first (the provisioning worker's queue).
func (s *NumberStore) NumbersInStatus(ctx context.Context, source, status string, limit int) ([]PhoneNumber, error) {
	return s.queryNumbers(ctx, numberSelect+` WHERE source = $1 AND status = $2 ORDER BY created_at, id LIMIT $3`, source, status, limit)
}

// HeldNumbers returns which of numbers some organization holds.
func (s *NumberStore) HeldNumbers(ctx context.Context, numbers []string) (map[string]bool, error) {
	held := map[string]bool{}
	for len(numbers) > 0 {
		chunk := numbers[:min(len(numbers), 500)]
		numbers = numbers[len(chunk):]
		args := make([]any, len(chunk))
		for i, n := range chunk {
			args[i] = n
		}
		rows, err := s.db.QueryContext(ctx, `SELECT number FROM phone_numbers WHERE number IN (`+placeholders(1, len(chunk))+`)`, args...)
		if err != nil {
			return nil, translate(err)
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				rows.Close()
				return nil, translate(err)
			}
			held[n] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, translate(err)
		}
	}
	return held, nil
}

func (s *NumberStore) queryNumbers(ctx context.Context, q string, args ...any) ([]PhoneNumber, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []PhoneNumber{}
	for rows.Next() {
		n, err := scanNumber(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, translate(rows.Err())
}

// UpdatePhoneNumber changes number id of orgID under its row lock. fn edits
// the number; agents it assigns must be agents of orgID (ErrAgentNotInOrg).
// When a field of the API object changed, the change is recorded as the
// next revision on behalf of actor (a membership id, nil for the system).
// An error from fn aborts the change and is returned as is.
func (s *NumberStore) UpdatePhoneNumber(ctx context.Context, orgID, id int64, actor *int64, fn func(n *PhoneNumber) error) (PhoneNumber, error) {
	var out PhoneNumber
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = s.updateNumberTx(ctx, tx, orgID, id, actor, fn)
		return err
	})
	return out, err
}

func (s *NumberStore) updateNumberTx(ctx context.Context, tx *sql.Tx, orgID, id int64, actor *int64, fn func(n *PhoneNumber) error) (PhoneNumber, error) {
	if err := lockRow(ctx, tx, "phone_numbers", orgID, id); err != nil {
		return PhoneNumber{}, err
	}
	old, err := scanNumber(tx.QueryRowContext(ctx, numberSelect+` WHERE id = $1`, id))
	if err != nil {
		return PhoneNumber{}, err
	}
	n := old
	if err := fn(&n); err != nil {
		return PhoneNumber{}, err
	}
	for _, a := range []*int64{n.InboundAgentID, n.OutboundAgentID} {
		if a == nil {
			continue
		}
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM agents WHERE id = $1 AND org_id = $2`, *a, orgID).Scan(&one)
		if errors.Is(translate(err), ErrNotFound) {
			return PhoneNumber{}, ErrAgentNotInOrg
		}
		if err != nil {
			return PhoneNumber{}, translate(err)
		}
	}
	return s.saveNumberTx(ctx, tx, old, n, actor, nil)
}

// saveNumberTx writes n over old and records a version when the API object
// changed; changed overrides the computed list of changed fields.
func (s *NumberStore) saveNumberTx(ctx context.Context, tx *sql.Tx, old, n PhoneNumber, actor *int64, changed []string) (PhoneNumber, error) {
	if changed == nil {
		changed = changedSnapshotFields(old.Snapshot(), n.Snapshot())
	}
	if len(changed) == 0 && old.OrgID == n.OrgID {
		return old, nil
	}
	now := s.nowMS()
	n.Revision++
	n.UpdatedAt = fromMS(now)
	_, err := tx.ExecContext(ctx, `UPDATE phone_numbers SET org_id = $1, label = $2, status = $3, inbound_agent_id = $4, outbound_agent_id = $5,
		voip_connection_id = $6, voip_verification_status = $7, voip_last_verified_at = $8, revision = $9, updated_at = $10 WHERE id = $11`,
		n.OrgID, n.Label, n.Status, nullInt(n.InboundAgentID), nullInt(n.OutboundAgentID), nullInt(n.VoIPConnectionID),
		n.VerificationStatus, nullMS(n.LastVerifiedAt), n.Revision, now, n.ID)
	if err != nil {
		return PhoneNumber{}, translate(err)
	}
	snap, err := json.Marshal(n.Snapshot())
	if err != nil {
		return PhoneNumber{}, err
	}
	return n, numberVersions.insert(ctx, tx, n.ID, n.Revision, snap, changed, actor, now)
}

// DeletePhoneNumber removes number id from orgID: a demo number returns to
// the pool, a VoIP number is detached (it stays at the trunk provider).
// Versions go with it.
func (s *NumberStore) DeletePhoneNumber(ctx context.Context, orgID, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM phone_numbers WHERE org_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// TransferPhoneNumber moves demo number id from fromOrg to toOrg on behalf
// of userID, who must be admin or owner of both (ErrRole, ErrNotMember).
// Agent assignments are cleared (they name the old org's agents), the old
// org's history is dropped, and the new org's history starts with a full
// snapshot by the user's membership in toOrg. VoIP numbers stay with their
// trunk (ErrVoIPNumber).
func (s *NumberStore) TransferPhoneNumber(ctx context.Context, fromOrg, toOrg, id, userID int64) (PhoneNumber, bool, error) {
	if fromOrg == toOrg {
		return PhoneNumber{}, false, ErrSameOrg
	}
	var out PhoneNumber
	var cleared bool
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		// Lock memberships in org id order so two opposite transfers cannot deadlock.
		first, second := fromOrg, toOrg
		if second < first {
			first, second = second, first
		}
		var target Member
		for _, o := range []int64{first, second} {
			m, err := lockMembership(tx, o, userID, RoleAdmin)
			if err != nil {
				return err
			}
			if o == toOrg {
				target = m
			}
		}
		if err := lockRow(ctx, tx, "phone_numbers", fromOrg, id); err != nil {
			return err
		}
		old, err := scanNumber(tx.QueryRowContext(ctx, numberSelect+` WHERE id = $1`, id))
		if err != nil {
			return err
		}
		if old.Source != SourceDemo {
			return ErrVoIPNumber
		}
		n := old
		cleared = n.InboundAgentID != nil || n.OutboundAgentID != nil
		n.OrgID, n.InboundAgentID, n.OutboundAgentID = toOrg, nil, nil
		if _, err := tx.ExecContext(ctx, `DELETE FROM phone_number_versions WHERE phone_number_id = $1`, id); err != nil {
			return translate(err)
		}
		actor := target.ID
		out, err = s.saveNumberTx(ctx, tx, old, n, &actor, snapshotFields)
		if err != nil {
			return err
		}
		return markOnboardingTx(ctx, tx, toOrg, StepPhone, ms(out.UpdatedAt))
	})
	return out, cleared, err
}

// PhoneNumberVersions returns the number of versions of number id of orgID
// and up to limit of them, newest first.
func (s *NumberStore) PhoneNumberVersions(ctx context.Context, orgID, id int64, limit int) (int64, []Version, error) {
	if _, err := s.PhoneNumber(ctx, orgID, id); err != nil {
		return 0, nil, err
	}
	return numberVersions.list(ctx, s.db, id, limit)
}
