package simulations

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/jobs"
	"github.com/voiced/voiced/control/scenarios"
	"github.com/voiced/voiced/storage"
)

// ScheduleStore is what the suite scheduler needs of storage
// (storage.ScenarioStore).
type ScheduleStore interface {
	ClaimDueSuite(ctx context.Context, now time.Time, owner string, lease time.Duration) (storage.Suite, bool, error)
	AdvanceSuite(ctx context.Context, id, owner string, slot time.Time, next *time.Time) error
	CreateTestRun(ctx context.Context, r storage.TestRun) (storage.TestRun, error)
}

// Scheduler starts scheduled suites when they are due. Every control
// server runs one; a due suite is leased to one of them (ClaimDueSuite),
// and its slot's test run is unique per suite (test_runs.scheduled_for),
// so a slot runs once across replicas and a scheduler killed midway
// leaves the slot to the next one when its lease runs out. Its clock is
// Now: tests accelerate it.
type Scheduler struct {
	Runs  TestRunDeps
	Store ScheduleStore
	Log   *slog.Logger
	// Now is the scheduler's clock (nil: time.Now); the suite routes'
	// next_run_at must come from the same one.
	Now   func() time.Time
	Owner string
	// Poll and Lease default to 15 s and 2 min.
	Poll, Lease time.Duration
	// Stagger is the stagger of a scheduled run's calls.
	Stagger int
}

// NewScheduler returns the scheduler of d's suites.
func NewScheduler(d TestRunDeps, st ScheduleStore, now func() time.Time, log *slog.Logger) *Scheduler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Scheduler{Runs: d, Store: st, Log: log, Now: now, Owner: "sched-" + storage.NewUUID(), Poll: 15 * time.Second, Lease: 2 * time.Minute, Stagger: DefaultStagger}
}

// Run starts due suites until ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	return jobs.Run(ctx, s.Poll, nil, s.Once, func(err error) { s.Log.Warn("suite scheduler", "err", err.Error()) })
}

// Once starts at most one due suite: it reports whether it found one.
func (s *Scheduler) Once(ctx context.Context) (bool, error) {
	now := s.Now()
	su, ok, err := s.Store.ClaimDueSuite(ctx, now, s.Owner, s.Lease)
	if err != nil || !ok {
		return false, err
	}
	due := *su.NextRunAt
	slot := LatestSlot(su.Schedule, due, now)
	_, err = s.Runs.StartSuite(ctx, su, s.Stagger, nil, &slot)
	var ae *api.Error
	switch {
	case err == nil, errors.Is(err, storage.ErrConflict):
		// Started now, or by another scheduler before (it died before
		// moving the schedule on).
	case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
		// The org is busy: keep the lease, so the slot is tried again
		// when it runs out.
		s.Log.Info("scheduled suite run deferred", "suite_id", su.ID, "reason", ae.Detail)
		return true, nil
	case errors.As(err, &ae):
		// It cannot start (no balance, no scenarios, number gone, no
		// simulated caller): the slot gets a failed run saying why,
		// unless Start kept one (502).
		if ae.Status != http.StatusBadGateway {
			at := s.Now()
			id := su.ID
			_, err := s.Store.CreateTestRun(ctx, storage.TestRun{OrgID: su.OrgID, AgentID: su.AgentID, SuiteID: &id, ScheduledFor: &slot, Status: "failed",
				Channel: su.Channel, Verdict: "unknown", ErrorMessage: ae.Detail, CompletedAt: &at})
			if err != nil && !errors.Is(err, storage.ErrConflict) {
				return false, err
			}
		}
		s.Log.Warn("scheduled suite run could not start", "suite_id", su.ID, "reason", ae.Detail)
	default:
		// Internal: the lease runs out and the slot is tried again.
		return false, err
	}
	next := NextSlot(su.Schedule, slot, now)
	if err := s.Store.AdvanceSuite(ctx, su.ID, s.Owner, due, next); err != nil && !errors.Is(err, storage.ErrConflict) {
		return false, err
	}
	return true, nil
}

// LatestSlot is the schedule's last slot at or before now, counting
// periods from due (the suite's next_run_at, at or before now): after a
// cluster was down for days the run is for today's slot.
func LatestSlot(schedule string, due, now time.Time) time.Time {
	p := scenarios.SchedulePeriod(schedule)
	if p == 0 || now.Before(due) {
		return due
	}
	return due.Add(p * (now.Sub(due) / p))
}

// NextSlot is the schedule's first slot after now, counting periods from
// slot: missed slots (a cluster down for days) are skipped, not caught
// up. nil for none.
func NextSlot(schedule string, slot, now time.Time) *time.Time {
	p := scenarios.SchedulePeriod(schedule)
	if p == 0 {
		return nil
	}
	next := slot.Add(p)
	if !next.After(now) {
		next = slot.Add(p * (now.Sub(slot)/p + 1))
	}
	return &next
}
