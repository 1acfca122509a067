package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/voiced/voiced/storage"
)

// Schedule is the spec's delivery schedule: attempt k (0-based) is made
// Schedule[k] after the first attempt (spec section 8).
var Schedule = [...]time.Duration{0, time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}

// Config tunes a Worker. Zero values mean defaults.
type Config struct {
	// Concurrency bounds simultaneous deliveries. Default 16.
	Concurrency int
	// Poll is how often the outbox is checked when nothing wakes the
	// worker. Default 1 s.
	Poll time.Duration
	// Timeout bounds one attempt. Default 30 s (spec section 8).
	Timeout time.Duration
	// Lease is how long a claimed delivery belongs to this worker; it must
	// exceed Timeout. Default Timeout + 30 s.
	Lease time.Duration
	// AllowLoopback lets deliveries reach localhost, 127.0.0.1 and ::1.
	AllowLoopback bool
	// Now is the clock of schedules and signatures. Default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.Lease <= c.Timeout {
		c.Lease = c.Timeout + 30*time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Store is what a Worker needs from storage.
type Store interface {
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]storage.Outgoing, error)
	RecordAttempt(ctx context.Context, o storage.Outgoing, a storage.Attempt) (storage.Delivery, error)
}

// Stats are a Worker's counters since it started.
type Stats struct {
	Attempts  uint64
	Delivered uint64
	Failed    uint64 // deliveries that gave up
}

// Worker delivers due outbox deliveries. It is safe for concurrent use;
// run at most one Run per Worker (several Workers, in one process or many,
// may share a database: claims never overlap).
type Worker struct {
	cfg    Config
	log    *slog.Logger
	store  Store
	client *http.Client
	wake   chan struct{}

	attempts, delivered, failed atomic.Uint64
}

// New returns a Worker over store.
func New(cfg Config, log *slog.Logger, store Store) (*Worker, error) {
	if store == nil {
		return nil, errors.New("webhook: store is required")
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Worker{cfg: cfg, log: log, store: store, client: NewClient(cfg.AllowLoopback, cfg.Timeout), wake: make(chan struct{}, 1)}, nil
}

// Notify wakes Run to look at the outbox now (after an emit in this
// process) instead of at the next poll.
func (w *Worker) Notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Stats returns the worker's counters.
func (w *Worker) Stats() Stats {
	return Stats{Attempts: w.attempts.Load(), Delivered: w.delivered.Load(), Failed: w.failed.Load()}
}

// Run delivers until ctx is done, then waits for the attempts in flight:
// they run on a context that outlives ctx (bounded by the attempt timeout)
// so a graceful stop records their outcome instead of leaving them to a
// lease expiry.
func (w *Worker) Run(ctx context.Context) error {
	slots := make(chan struct{}, w.cfg.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(w.cfg.Poll)
	defer timer.Stop()
	var lastErr string
	for {
		free := cap(slots) - len(slots)
		claimed := 0
		if free > 0 {
			outs, err := w.store.ClaimDeliveries(ctx, w.cfg.Now(), w.cfg.Lease, free)
			switch {
			case err != nil && ctx.Err() != nil:
				return nil
			case err != nil:
				// Logged once per distinct error, not once per poll.
				if msg := err.Error(); msg != lastErr {
					w.log.Warn("webhook outbox claim", "err", msg)
					lastErr = msg
				}
			default:
				lastErr = ""
			}
			for _, o := range outs {
				slots <- struct{}{}
				wg.Go(func() {
					defer func() { <-slots; w.Notify() }()
					_, _, _ = w.Attempt(context.WithoutCancel(ctx), o)
				})
			}
			claimed = len(outs)
		}
		if free > 0 && claimed == free {
			continue // there may be more due
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(w.cfg.Poll)
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		case <-timer.C:
		}
	}
}

// DeliverDue claims every delivery due now and attempts each one,
// returning how many attempts were made. It is Run's work without the
// loop, for callers that drive time themselves (tests with a fake clock).
func (w *Worker) DeliverDue(ctx context.Context) (int, error) {
	n := 0
	for {
		outs, err := w.store.ClaimDeliveries(ctx, w.cfg.Now(), w.cfg.Lease, w.cfg.Concurrency)
		if err != nil {
			return n, err
		}
		if len(outs) == 0 {
			return n, nil
		}
		var wg sync.WaitGroup
		for _, o := range outs {
			wg.Go(func() { _, _, _ = w.Attempt(ctx, o) })
		}
		wg.Wait()
		n += len(outs)
	}
}

// Attempt makes one attempt of the claimed delivery o and records it:
// delivered on a 2xx, otherwise rescheduled per Schedule from the first
// attempt, or failed when o's attempts are used up.
func (w *Worker) Attempt(ctx context.Context, o storage.Outgoing) (storage.Delivery, storage.Attempt, error) {
	at := w.cfg.Now()
	a := storage.Attempt{At: at}
	if o.URL == "" {
		a.Err = "legacy webhook removed"
	} else {
		a.StatusCode, a.Err = w.post(ctx, o, at)
		a.Delivered = a.Err == ""
	}
	w.attempts.Add(1)
	if !a.Delivered {
		made := o.Attempts + 1
		if made < o.MaxAttempts && made < len(Schedule) {
			first := at
			if o.FirstAttemptAt != nil {
				first = *o.FirstAttemptAt
			}
			a.NextAt = first.Add(Schedule[made])
		}
	}
	d, err := w.store.RecordAttempt(ctx, o, a)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		// The claim was lost or the endpoint deleted meanwhile.
	case err != nil:
		w.log.Warn("webhook attempt not recorded", "delivery_id", o.ID, "err", err.Error())
	case a.Delivered:
		w.delivered.Add(1)
	case d.Status == storage.DeliveryFailed:
		w.failed.Add(1)
		w.log.Info("webhook delivery failed", "delivery_id", o.ID, "event_id", o.EventID, "endpoint_id", o.EndpointID, "attempts", d.Attempts, "err", a.Err)
	}
	return d, a, err
}

// post sends o once. It returns the response status (0 without one) and a
// description of the failure, empty on success.
func (w *Worker) post(ctx context.Context, o storage.Outgoing, at time.Time) (int, string) {
	body := Envelope(o.EventID, o.Type, o.Data, o.Legacy)
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "invalid URL"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	setSignatures(req.Header, o.Secret, o.EventID, at.Unix(), body)
	res, err := w.client.Do(req)
	if err != nil {
		return 0, describe(err)
	}
	// Drain a little so the connection can be reused; the body means
	// nothing to us.
	_, _ = io.CopyN(io.Discard, res.Body, 64<<10)
	res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode, fmt.Sprintf("HTTP %d", res.StatusCode)
	}
	return res.StatusCode, ""
}

// describe turns a transport error into a short, stable description.
func describe(err error) string {
	switch {
	case errors.Is(err, ErrBlockedAddress):
		return "destination address is not public"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}
