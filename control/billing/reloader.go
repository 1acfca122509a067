package billing

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/voiced/voiced/control/payment"
	"github.com/voiced/voiced/storage"
)

// Charger takes a payment (payment.Stripe).
type Charger interface {
	Charge(ctx context.Context, c payment.Charge) (payment.Intent, error)
}

// Store is what the Reloader needs from storage.
type Store interface {
	ClaimReloads(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]storage.Reload, error)
	FinishReload(ctx context.Context, r storage.Reload, o storage.ReloadOutcome) error
}

// Config tunes a Reloader. Zero values mean defaults.
type Config struct {
	// Poll is how often the queue is checked. Default 2 s.
	Poll time.Duration
	// Lease is how long a claimed reload belongs to this worker. Default 2 min.
	Lease time.Duration
	// Backoff lists the waits before each retry of an attempt after a
	// transient error; when it runs out the attempt fails. Default 1 m,
	// 5 m, 30 m, 2 h (inside the provider's 24 h idempotency window).
	Backoff []time.Duration
	// Concurrency bounds simultaneous charges. Default 4.
	Concurrency int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Poll <= 0 {
		c.Poll = 2 * time.Second
	}
	if c.Lease <= 0 {
		c.Lease = 2 * time.Minute
	}
	if c.Backoff == nil {
		c.Backoff = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Reloader charges queued auto-reloads. It is safe for concurrent use;
// several Reloaders may share a database (claims never overlap).
type Reloader struct {
	cfg     Config
	log     *slog.Logger
	store   Store
	charger Charger
	wake    chan struct{}
}

// NewReloader returns a Reloader.
func NewReloader(cfg Config, log *slog.Logger, store Store, charger Charger) (*Reloader, error) {
	if store == nil || charger == nil {
		return nil, errors.New("billing: store and charger are required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reloader{cfg: cfg.withDefaults(), log: log, store: store, charger: charger, wake: make(chan struct{}, 1)}, nil
}

// Notify wakes Run to look at the queue now.
func (r *Reloader) Notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run charges due reloads until ctx is done.
func (r *Reloader) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Poll)
	defer t.Stop()
	for {
		if _, err := r.ReloadDue(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("auto-reload queue", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-r.wake:
		}
	}
}

// ReloadDue claims the reloads due now and charges each one, returning how
// many were attempted.
func (r *Reloader) ReloadDue(ctx context.Context) (int, error) {
	n := 0
	for {
		rs, err := r.store.ClaimReloads(ctx, r.cfg.Now(), r.cfg.Lease, r.cfg.Concurrency)
		if err != nil || len(rs) == 0 {
			return n, err
		}
		var wg sync.WaitGroup
		for _, x := range rs {
			wg.Go(func() {
				if err := r.store.FinishReload(ctx, x, r.attempt(ctx, x)); err != nil {
					r.log.Warn("auto-reload not recorded", "org_id", x.OrgID, "reload_id", x.ID, "err", err.Error())
				}
			})
		}
		wg.Wait()
		n += len(rs)
	}
}

// attempt charges reload x once and says what came of it.
func (r *Reloader) attempt(ctx context.Context, x storage.Reload) storage.ReloadOutcome {
	if x.CustomerID == "" || x.PaymentMethod == "" {
		return storage.ReloadOutcome{Status: storage.ReloadFailed, ErrorCode: "no_payment_method", UserAction: true}
	}
	in, err := r.charger.Charge(ctx, payment.Charge{
		OrgID: x.OrgID, Customer: x.CustomerID, PaymentMethod: x.PaymentMethod, AmountCents: x.AmountCents,
		OffSession: true, IdempotencyKey: "voiced-reload-" + x.ID, Purpose: storage.PurposeAutoReload, ReloadID: x.ID,
	})
	if err != nil {
		pe := payment.Classify(err)
		if pe.Retryable && pe.Code != payment.CodeAuthenticationRequired && x.Tries < len(r.cfg.Backoff) {
			return storage.ReloadOutcome{Status: storage.ReloadPending, ErrorCode: pe.Code, RetryAt: r.cfg.Now().Add(r.cfg.Backoff[x.Tries])}
		}
		r.log.Info("auto-reload failed", "org_id", x.OrgID, "reload_id", x.ID, "code", pe.Code)
		return storage.ReloadOutcome{Status: storage.ReloadFailed, ErrorCode: pe.Code, UserAction: !pe.Retryable || pe.Code == payment.CodeAuthenticationRequired}
	}
	switch in.Status {
	case storage.PaymentSucceeded:
		return storage.ReloadOutcome{Status: storage.ReloadSucceeded, PaymentIntentID: in.ID}
	case "processing":
		// The provider's event settles it.
		return storage.ReloadOutcome{Status: storage.ReloadProcessing, PaymentIntentID: in.ID}
	case "requires_action":
		return storage.ReloadOutcome{Status: storage.ReloadFailed, PaymentIntentID: in.ID, ErrorCode: payment.CodeAuthenticationRequired, UserAction: true}
	}
	return storage.ReloadOutcome{Status: storage.ReloadFailed, PaymentIntentID: in.ID, ErrorCode: payment.CodeCardDeclined, UserAction: true}
}
