// Package jobs holds the two loops every durable background worker of the
// control plane shares: polling a leased queue, and keeping the lease of
// the job in hand. The queues themselves (claims, leases, retries) are
// rows in storage, one kind per domain.
package jobs

import (
	"context"
	"time"
)

// Run works a queue until ctx ends: it calls once until once finds
// nothing due (or fails; warn hears failures while ctx lives), then waits
// for the next poll tick or a wake.
func Run(ctx context.Context, poll time.Duration, wake <-chan struct{}, once func(context.Context) (bool, error), warn func(error)) error {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		for {
			did, err := once(ctx)
			if err != nil && ctx.Err() == nil {
				warn(err)
			}
			if !did || err != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-wake:
		}
	}
}

// Hold keeps a claimed job's lease while it runs: every lease/3 it calls
// extend, and when extend fails (the lease was lost: the job changed or
// another worker took it) it cancels the job's context. stop ends the job
// context and waits for the renewal to stop.
func Hold(ctx context.Context, lease time.Duration, extend func(context.Context) error) (job context.Context, stop func()) {
	job, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-job.Done():
				return
			case <-t.C:
				if extend(job) != nil {
					cancel()
					return
				}
			}
		}
	}()
	return job, func() { cancel(); <-done }
}
