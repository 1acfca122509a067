package jobs_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/jobs"
)

// Run drains the queue at once, waits for a wake rather than the (long)
// poll, reports failures, and returns when ctx ends.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var due, calls atomic.Int64
	due.Store(3)
	wake := make(chan struct{}, 1)
	var warned atomic.Int64
	once := func(context.Context) (bool, error) {
		calls.Add(1)
		if due.Load() < 0 {
			return true, errors.New("down")
		}
		if due.Load() == 0 {
			return false, nil
		}
		due.Add(-1)
		return true, nil
	}
	done := make(chan error, 1)
	go func() { done <- jobs.Run(ctx, time.Hour, wake, once, func(error) { warned.Add(1) }) }()
	require.Eventually(t, func() bool { return calls.Load() == 4 }, 2*time.Second, time.Millisecond, "three jobs and one empty look")

	due.Store(-1) // a failing claim stops the round and is reported once
	wake <- struct{}{}
	require.Eventually(t, func() bool { return warned.Load() == 1 }, 2*time.Second, time.Millisecond)
	require.Equal(t, int64(5), calls.Load())

	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

// Hold renews the lease every lease/3 and cancels the job when renewal
// fails; stop waits for the renewal to end.
func TestHold(t *testing.T) {
	var renewals atomic.Int64
	job, stop := jobs.Hold(context.Background(), 30*time.Millisecond, func(context.Context) error {
		if renewals.Add(1) == 3 {
			return errors.New("lease lost")
		}
		return nil
	})
	select {
	case <-job.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("a lost lease did not cancel the job")
	}
	stop()
	require.Equal(t, int64(3), renewals.Load())

	job, stop = jobs.Hold(context.Background(), time.Hour, func(context.Context) error { return nil })
	stop()
	require.Error(t, job.Err(), "stop ends the job")
}
