package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// AgentStore holds agents and their versions. It is safe for concurrent
// use.
type AgentStore struct{ *base }

// Agent is a voice agent. Its configuration is a JSON object whose fields
// the control plane defines: Config is deployed (calls use it), Draft is
// staged. Revision is the latest recorded version.
type Agent struct {
	ID         int64
	OrgID      int64
	Name       string
	Config     json.RawMessage
	Draft      json.RawMessage
	Revision   int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
	DeployedAt *time.Time
}

// VersionInput is what a change records as a new version: the snapshot
// of the object after the change and the fields that changed.
type VersionInput struct {
	Snapshot      json.RawMessage
	ChangedFields []string
}

const agentSelect = `SELECT id, org_id, name, config, draft, revision, created_at, updated_at, deployed_at FROM agents`

func scanAgent(row rowScanner) (Agent, error) {
	var a Agent
	var cfg, draft string
	var c, u int64
	var d sql.NullInt64
	if err := row.Scan(&a.ID, &a.OrgID, &a.Name, &cfg, &draft, &a.Revision, &c, &u, &d); err != nil {
		return Agent{}, translate(err)
	}
	a.Config, a.Draft = json.RawMessage(cfg), json.RawMessage(draft)
	a.CreatedAt, a.UpdatedAt, a.DeployedAt = fromMS(c), fromMS(u), fromNullMS(d)
	return a, nil
}

// CreateAgent creates a in a.OrgID and records it as revision 1. snapshot
// builds the version snapshot from the created row (which has its id).
func (s *AgentStore) CreateAgent(ctx context.Context, a Agent, actor *int64, snapshot func(Agent) (VersionInput, error)) (Agent, error) {
	now := s.nowMS()
	a.Revision, a.CreatedAt, a.UpdatedAt = 1, fromMS(now), fromMS(now)
	a.DeployedAt = &a.CreatedAt
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO agents (org_id, name, config, draft, revision, created_at, updated_at, deployed_at)
			VALUES ($1, $2, $3, $4, 1, $5, $5, $5) RETURNING id`, a.OrgID, a.Name, string(a.Config), string(a.Draft), now).Scan(&a.ID); err != nil {
			return translate(err)
		}
		v, err := snapshot(a)
		if err != nil {
			return err
		}
		return agentVersions.insert(ctx, tx, a.ID, 1, v.Snapshot, v.ChangedFields, actor, now)
	})
	if err != nil {
		return Agent{}, err
	}
	return a, nil
}

// Agent returns agent id of orgID.
func (s *AgentStore) Agent(ctx context.Context, orgID, id int64) (Agent, error) {
	return scanAgent(s.db.QueryRowContext(ctx, agentSelect+` WHERE org_id = $1 AND id = $2`, orgID, id))
}

// Agents lists orgID's agents, newest first.
func (s *AgentStore) Agents(ctx context.Context, orgID int64) ([]Agent, error) {
	rows, err := s.db.QueryContext(ctx, agentSelect+` WHERE org_id = $1 ORDER BY created_at DESC, id DESC`, orgID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []Agent{}
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, translate(rows.Err())
}

// UpdateAgent changes agent id of orgID under its row lock. fn edits the
// agent's Name, Config, Draft and DeployedAt; when it returns a version,
// the change is recorded as the next revision on behalf of actor (a
// membership id, nil for the system). An error from fn aborts the change.
func (s *AgentStore) UpdateAgent(ctx context.Context, orgID, id int64, actor *int64, fn func(a *Agent) (*VersionInput, error)) (Agent, error) {
	var out Agent
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := lockRow(ctx, tx, "agents", orgID, id); err != nil {
			return err
		}
		a, err := scanAgent(tx.QueryRowContext(ctx, agentSelect+` WHERE id = $1`, id))
		if err != nil {
			return err
		}
		v, err := fn(&a)
		if err != nil {
			return err
		}
		now := s.nowMS()
		a.UpdatedAt = fromMS(now)
		if v != nil {
			a.Revision++
		}
		if _, err := tx.ExecContext(ctx, `UPDATE agents SET name = $1, config = $2, draft = $3, revision = $4, updated_at = $5, deployed_at = $6 WHERE id = $7`,
			a.Name, string(a.Config), string(a.Draft), a.Revision, now, nullMS(a.DeployedAt), id); err != nil {
			return translate(err)
		}
		if v != nil {
			if err := agentVersions.insert(ctx, tx, id, a.Revision, v.Snapshot, v.ChangedFields, actor, now); err != nil {
				return err
			}
		}
		out = a
		return nil
	})
	return out, err
}

// DeleteAgent deletes agent id of orgID. Phone numbers assigned to it lose
// the assignment in the same transaction, each change recorded as a
// number version on behalf of actor. Calls keep the agent id as history.
func (s *AgentStore) DeleteAgent(ctx context.Context, orgID, id int64, actor *int64) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		if err := lockRow(ctx, tx, "agents", orgID, id); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM phone_numbers WHERE org_id = $1 AND (inbound_agent_id = $2 OR outbound_agent_id = $2)`, orgID, id)
		if err != nil {
			return translate(err)
		}
		var ids []int64
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n); err != nil {
				rows.Close()
				return translate(err)
			}
			ids = append(ids, n)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return translate(err)
		}
		for _, n := range ids {
			_, err := (&NumberStore{s.base}).updateNumberTx(ctx, tx, orgID, n, actor, func(p *PhoneNumber) error {
				if p.InboundAgentID != nil && *p.InboundAgentID == id {
					p.InboundAgentID = nil
				}
				if p.OutboundAgentID != nil && *p.OutboundAgentID == id {
					p.OutboundAgentID = nil
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM agents WHERE id = $1`, id)
		return translate(err)
	})
}

// AgentVersions returns the number of versions of agent id of orgID and up
// to limit of them, newest first.
func (s *AgentStore) AgentVersions(ctx context.Context, orgID, id int64, limit int) (int64, []Version, error) {
	if _, err := s.Agent(ctx, orgID, id); err != nil {
		return 0, nil, err
	}
	return agentVersions.list(ctx, s.db, id, limit)
}

// CountAgents counts orgID's agents.
func (s *AgentStore) CountAgents(ctx context.Context, orgID int64) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM agents WHERE org_id = $1`, orgID).Scan(&n)
	return n, translate(err)
}

// lockRow takes the row lock of row id of table in orgID (the portable
// SELECT ... FOR UPDATE: a no-op UPDATE); ErrNotFound when there is none.
func lockRow(ctx context.Context, tx *sql.Tx, table string, orgID, id int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE `+table+` SET id = id WHERE id = $1 AND org_id = $2`, id, orgID)
	if err != nil {
		return translate(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
