package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// VoIPConnection is an organization's SIP trunk. Password is the clear
// secret: it is sealed at rest and only ever leaves the store towards the
// telephony side, never in API responses.
type VoIPConnection struct {
	ID             int64
	OrgID          int64
	Name           string
	Host           string
	Port           int
	Transport      string
	Username       string
	Password       string
	OutboundProxy  string
	AllowedSources []string
	Codecs         []string
	// Numbers counts the phone numbers on the connection (read only).
	Numbers   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

const voipSelect = `SELECT c.id, c.org_id, c.name, c.host, c.port, c.transport, c.username, c.password_enc, c.outbound_proxy,
	c.allowed_sources, c.codecs, c.created_at, c.updated_at,
	(SELECT count(*) FROM phone_numbers p WHERE p.voip_connection_id = c.id) FROM voip_connections c`

func (s *NumberStore) scanVoIP(row rowScanner) (VoIPConnection, error) {
	var v VoIPConnection
	var pw sql.NullString
	var allowed, codecs string
	var c, u int64
	if err := row.Scan(&v.ID, &v.OrgID, &v.Name, &v.Host, &v.Port, &v.Transport, &v.Username, &pw, &v.OutboundProxy,
		&allowed, &codecs, &c, &u, &v.Numbers); err != nil {
		return VoIPConnection{}, translate(err)
	}
	if pw.Valid {
		p, err := s.open(pw.String)
		if err != nil {
			return VoIPConnection{}, fmt.Errorf("voip connection %d password: %w", v.ID, err)
		}
		v.Password = p
	}
	if err := json.Unmarshal([]byte(allowed), &v.AllowedSources); err != nil {
		return VoIPConnection{}, fmt.Errorf("voip connection %d allowed_sources: %w", v.ID, err)
	}
	if err := json.Unmarshal([]byte(codecs), &v.Codecs); err != nil {
		return VoIPConnection{}, fmt.Errorf("voip connection %d codecs: %w", v.ID, err)
	}
	v.CreatedAt, v.UpdatedAt = fromMS(c), fromMS(u)
	return v, nil
}

func (s *NumberStore) voipArgs(v VoIPConnection) (pw any, allowed, codecs string, err error) {
	if v.Password != "" {
		sealed, err := s.seal(v.Password)
		if err != nil {
			return nil, "", "", err
		}
		pw = sealed
	}
	if v.AllowedSources == nil {
		v.AllowedSources = []string{}
	}
	a, err := json.Marshal(v.AllowedSources)
	if err != nil {
		return nil, "", "", err
	}
	c, err := json.Marshal(v.Codecs)
	if err != nil {
		return nil, "", "", err
	}
	return pw, string(a), string(c), nil
}

// CreateVoIPConnection creates v in v.OrgID.
func (s *NumberStore) CreateVoIPConnection(ctx context.Context, v VoIPConnection) (VoIPConnection, error) {
	pw, allowed, codecs, err := s.voipArgs(v)
	if err != nil {
		return VoIPConnection{}, err
	}
	now := s.nowMS()
	var id int64
	err = s.db.QueryRowContext(ctx, `INSERT INTO voip_connections (org_id, name, host, port, transport, username, password_enc,
		outbound_proxy, allowed_sources, codecs, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11) RETURNING id`,
		v.OrgID, v.Name, v.Host, v.Port, v.Transport, v.Username, pw, v.OutboundProxy, allowed, codecs, now).Scan(&id)
	if err != nil {
		return VoIPConnection{}, translate(err)
	}
	return s.VoIPConnection(ctx, v.OrgID, id)
}

// VoIPConnection returns connection id of orgID with its clear password.
func (s *NumberStore) VoIPConnection(ctx context.Context, orgID, id int64) (VoIPConnection, error) {
	return s.scanVoIP(s.db.QueryRowContext(ctx, voipSelect+` WHERE c.org_id = $1 AND c.id = $2`, orgID, id))
}

// VoIPConnections lists orgID's connections, newest first.
func (s *NumberStore) VoIPConnections(ctx context.Context, orgID int64) ([]VoIPConnection, error) {
	rows, err := s.db.QueryContext(ctx, voipSelect+` WHERE c.org_id = $1 ORDER BY c.created_at DESC, c.id DESC`, orgID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []VoIPConnection{}
	for rows.Next() {
		v, err := s.scanVoIP(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, translate(rows.Err())
}

// UpdateVoIPConnection changes connection id of orgID under its row lock;
// fn edits it (an error from fn aborts).
func (s *NumberStore) UpdateVoIPConnection(ctx context.Context, orgID, id int64, fn func(v *VoIPConnection) error) (VoIPConnection, error) {
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := lockRow(ctx, tx, "voip_connections", orgID, id); err != nil {
			return err
		}
		v, err := s.scanVoIP(tx.QueryRowContext(ctx, voipSelect+` WHERE c.id = $1`, id))
		if err != nil {
			return err
		}
		if err := fn(&v); err != nil {
			return err
		}
		pw, allowed, codecs, err := s.voipArgs(v)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE voip_connections SET name = $1, host = $2, port = $3, transport = $4, username = $5,
			password_enc = $6, outbound_proxy = $7, allowed_sources = $8, codecs = $9, updated_at = $10 WHERE id = $11`,
			v.Name, v.Host, v.Port, v.Transport, v.Username, pw, v.OutboundProxy, allowed, codecs, s.nowMS(), id)
		return translate(err)
	})
	if err != nil {
		return VoIPConnection{}, err
	}
	return s.VoIPConnection(ctx, orgID, id)
}

// DeleteVoIPConnection deletes connection id of orgID; ErrInUse while
// phone numbers are on it.
func (s *NumberStore) DeleteVoIPConnection(ctx context.Context, orgID, id int64) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := lockRow(ctx, tx, "voip_connections", orgID, id); err != nil {
			return err
		}
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM phone_numbers WHERE voip_connection_id = $1`, id).Scan(&n); err != nil {
			return translate(err)
		}
		if n > 0 {
			return ErrInUse
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM voip_connections WHERE id = $1`, id)
		return translate(err)
	})
}
