package storage

import (
	"context"
	"database/sql"
	"time"
)

// OnboardingStore keeps each organization's onboarding checklist: the
// time each step was first completed (steps never revert) and whether the
// checklist is dismissed.
type OnboardingStore struct{ *base }

// OnboardingStep names one step of the onboarding checklist.
type OnboardingStep string

// The onboarding steps (spec section 2.20).
const (
	StepAgent   OnboardingStep = "agent"
	StepBilling OnboardingStep = "billing"
	StepPhone   OnboardingStep = "phone"
	StepCall    OnboardingStep = "call"
)

// Onboarding is an organization's checklist. A step's time is when it was
// completed; nil means not yet. Steps never revert.
type Onboarding struct {
	Agent, Billing, Phone, Call *time.Time
	AgentTalkSkipped            *time.Time
	Dismissed                   *time.Time
}

// stepColumn maps a step to its column; the set is closed, so the column
// name is never caller-controlled.
func stepColumn(step OnboardingStep) string {
	switch step {
	case StepAgent:
		return "agent_at"
	case StepBilling:
		return "billing_at"
	case StepPhone:
		return "phone_at"
	case StepCall:
		return "call_at"
	}
	panic("storage: unknown onboarding step " + string(step))
}

// markOnboardingTx completes step at (milliseconds) unless it already is.
func markOnboardingTx(ctx context.Context, tx *sql.Tx, orgID int64, step OnboardingStep, at int64) error {
	col := stepColumn(step)
	_, err := tx.ExecContext(ctx, `INSERT INTO onboarding (org_id, `+col+`) VALUES ($1, $2)
		ON CONFLICT (org_id) DO UPDATE SET `+col+` = COALESCE(onboarding.`+col+`, excluded.`+col+`)`, orgID, at)
	return translate(err)
}

// MarkOnboarding completes step for orgID at the given time unless it
// already is complete. Billing calls it when a payment method is saved or
// a top-up succeeds; the checklist also derives every step from the
// records on each read.
func (s *OnboardingStore) MarkOnboarding(ctx context.Context, orgID int64, step OnboardingStep, at time.Time) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error { return markOnboardingTx(ctx, tx, orgID, step, ms(at)) })
}

// Onboarding derives orgID's checklist from its records, persists steps
// that became complete (so they never revert when the records change
// later) and returns it:
//   - agent: the org has an agent, and an agent was talked to in a
//     completed test call (a mic session) or the talk step was skipped;
//   - billing: a default payment method is saved or a top-up succeeded;
//   - phone: a number was acquired (recorded when it happens);
//   - call: a real call (inbound, outbound or web, not a simulation)
//     completed.
func (s *OnboardingStore) Onboarding(ctx context.Context, orgID int64) (Onboarding, error) {
	var o Onboarding
	err := s.db.tx(ctx, func(tx *sql.Tx) error {
		now := s.nowMS()
		if _, err := tx.ExecContext(ctx, `INSERT INTO onboarding (org_id) VALUES ($1) ON CONFLICT (org_id) DO NOTHING`, orgID); err != nil {
			return translate(err)
		}
		cur, err := readOnboarding(ctx, tx, orgID)
		if err != nil {
			return err
		}
		var agents int64
		var talked, firstTopUp, firstCall sql.NullInt64
		var hasMethod bool
		if err := tx.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM agents WHERE org_id = $1),
			(SELECT min(end_time) FROM calls WHERE org_id = $1 AND direction = 'test' AND status = 'completed' AND NOT is_simulation),
			(SELECT min(created_at) FROM billing_transactions WHERE org_id = $1 AND kind = 'top_up'),
			COALESCE((SELECT default_payment_method IS NOT NULL FROM billing_accounts WHERE org_id = $1), FALSE),
			(SELECT min(end_time) FROM calls WHERE org_id = $1 AND direction IN ('inbound', 'outbound', 'web') AND status = 'completed' AND NOT is_simulation)`,
			orgID).Scan(&agents, &talked, &firstTopUp, &hasMethod, &firstCall); err != nil {
			return translate(err)
		}
		mark := func(done *time.Time, step OnboardingStep, ok bool, at sql.NullInt64) error {
			if done != nil || !ok {
				return nil
			}
			t := now
			if at.Valid && at.Int64 < now {
				t = at.Int64
			}
			return markOnboardingTx(ctx, tx, orgID, step, t)
		}
		if err := mark(cur.Agent, StepAgent, agents > 0 && (talked.Valid || cur.AgentTalkSkipped != nil), sql.NullInt64{}); err != nil {
			return err
		}
		if err := mark(cur.Billing, StepBilling, hasMethod || firstTopUp.Valid, firstTopUp); err != nil {
			return err
		}
		if err := mark(cur.Call, StepCall, firstCall.Valid, firstCall); err != nil {
			return err
		}
		o, err = readOnboarding(ctx, tx, orgID)
		return err
	})
	return o, err
}

func readOnboarding(ctx context.Context, tx *sql.Tx, orgID int64) (Onboarding, error) {
	var a, b, p, c, skipped, dismissed sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT agent_at, billing_at, phone_at, call_at, agent_talk_skipped_at, dismissed_at
		FROM onboarding WHERE org_id = $1`, orgID).Scan(&a, &b, &p, &c, &skipped, &dismissed)
	if err != nil {
		return Onboarding{}, translate(err)
	}
	return Onboarding{Agent: fromNullMS(a), Billing: fromNullMS(b), Phone: fromNullMS(p), Call: fromNullMS(c),
		AgentTalkSkipped: fromNullMS(skipped), Dismissed: fromNullMS(dismissed)}, nil
}

// SetOnboardingDismissed dismisses or undismisses orgID's checklist; the
// steps are unchanged.
func (s *OnboardingStore) SetOnboardingDismissed(ctx context.Context, orgID int64, dismissed bool) error {
	var at any
	if dismissed {
		at = s.nowMS()
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO onboarding (org_id, dismissed_at) VALUES ($1, $2)
		ON CONFLICT (org_id) DO UPDATE SET dismissed_at = excluded.dismissed_at`, orgID, at)
	return translate(err)
}

// SkipAgentTalk records that orgID skipped talking to its agent, which
// completes the agent step; ErrNoAgent when the org has no agent.
func (s *OnboardingStore) SkipAgentTalk(ctx context.Context, orgID int64) error {
	return s.db.tx(ctx, func(tx *sql.Tx) error {
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM agents WHERE org_id = $1`, orgID).Scan(&n); err != nil {
			return translate(err)
		}
		if n == 0 {
			return ErrNoAgent
		}
		now := s.nowMS()
		if _, err := tx.ExecContext(ctx, `INSERT INTO onboarding (org_id, agent_talk_skipped_at) VALUES ($1, $2)
			ON CONFLICT (org_id) DO UPDATE SET agent_talk_skipped_at = COALESCE(onboarding.agent_talk_skipped_at, excluded.agent_talk_skipped_at)`,
			orgID, now); err != nil {
			return translate(err)
		}
		return markOnboardingTx(ctx, tx, orgID, StepAgent, now)
	})
}
