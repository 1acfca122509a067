package numbers

import (
	"context"
	"errors"
	"time"

	"github.com/voiced/voiced/storage"
)

// Provision makes one pass over demo numbers that are
// provisioning: a number still in the operator's pool becomes active; one
// the operator removed from the pool meanwhile becomes failed. Each
// change is a system version (created_by_id null). It is safe on every
// replica at once: a change applies only to a number still provisioning.
// It returns how many numbers changed.
func (h *Service) Provision(ctx context.Context) (int, error) {
	ns, err := h.stores.Demo.NumbersInStatus(ctx, storage.SourceDemo, storage.NumberProvisioning, 500)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, n := range ns {
		_, inPool := h.pool.index[n.Number]
		_, err := h.stores.Numbers.UpdatePhoneNumber(ctx, n.OrgID, n.ID, nil, func(p *storage.PhoneNumber) error {
			if p.Status != storage.NumberProvisioning {
				return errSkip
			}
			if inPool {
				p.Status = storage.NumberActive
			} else {
				p.Status = storage.NumberFailed
			}
			return nil
		})
		switch {
		case errors.Is(err, errSkip), errors.Is(err, storage.ErrNotFound):
		case err != nil:
			return changed, err
		default:
			changed++
		}
	}
	return changed, nil
}

// errSkip aborts a provisioning change for a number that left the
// provisioning state between the listing and its row lock.
var errSkip = errors.New("skip")

// Run calls Provision every interval until ctx ends;
// cmd/voiced owns the goroutine that runs it.
func (h *Service) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := h.Provision(ctx); err != nil && ctx.Err() == nil && h.log != nil {
			h.log.Warn("number provisioning pass failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
