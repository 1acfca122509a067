package monitoring

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
)

// Verdict is a product's public state.
type Verdict string

// The verdicts, from best to worst.
const (
	Operational Verdict = "operational"
	Degraded    Verdict = "degraded"
	Outage      Verdict = "outage"
)

// worse is the worse of two verdicts.
func worse(a, b Verdict) Verdict {
	if a == Outage || b == Outage {
		return Outage
	}
	if a == Degraded || b == Degraded {
		return Degraded
	}
	return Operational
}

// The reason codes a verdict may carry: coarse on purpose (no host, no
// error text, no count).
const (
	ReasonDatabase       = "database_unavailable"
	ReasonCoordination   = "coordination_unavailable"
	ReasonNoMediaNodes   = "no_media_capacity"
	ReasonFewMediaNodes  = "reduced_media_capacity"
	ReasonProviderErrors = "provider_errors"
	ReasonIncident       = "open_incident"
)

// Error-rate thresholds over the provider window: a kind with at least
// minProviderRequests requests degrades its products at degradedRate
// errors and takes them out at outageRate.
const (
	minProviderRequests = 10
	degradedRate        = 0.25
	outageRate          = 0.75
)

// maxListed caps the incidents the heartbeat lists (oldest first); all of
// them still count in the verdicts.
const maxListed = 20

// Pinger reaches the database (*storage.DB).
type Pinger interface {
	PingContext(ctx context.Context) error
}

// Registry lists the live media nodes (coord.Registry); listing them is
// also the coordination store's ping.
type Registry interface {
	Nodes(ctx context.Context) ([]coord.Node, error)
}

// ProductStatus is one product's line on the heartbeat.
type ProductStatus struct {
	Name    string   `json:"name"`
	Label   string   `json:"label"`
	Status  Verdict  `json:"status"`
	Reasons []string `json:"reasons"`
}

// IncidentView is an active incident as the public sees it: the monitor's
// own title and rule stay internal.
type IncidentView struct {
	ID        int64   `json:"id"`
	Product   string  `json:"product"`
	Severity  string  `json:"severity"`
	Title     string  `json:"title"`
	Status    Verdict `json:"status"`
	StartedAt string  `json:"started_at"`
}

// Status is the heartbeat's body.
type Status struct {
	Status    Verdict         `json:"status"`
	CheckedAt string          `json:"checked_at"`
	Products  []ProductStatus `json:"products"`
	Incidents []IncidentView  `json:"incidents"`
}

// publicIncident is what the heartbeat and alert.triggered say of inc.
func publicIncident(inc storage.Incident) IncidentView {
	return IncidentView{ID: inc.ID, Product: inc.Product, Severity: inc.Severity,
		Title: label(inc.Product) + ": degraded service under investigation", Status: Degraded, StartedAt: api.TS(inc.StartedAt)}
}

// heartbeat computes Status and keeps it for the cache's TTL. One caller
// computes while the others wait for its answer.
type heartbeat struct {
	cfg       Config
	db        Pinger
	nodes     Registry
	incidents ActiveLister
	providers func() map[string]ProviderHealth

	mu     sync.Mutex
	cached Status
	at     time.Time
}

// ActiveLister lists the incidents the heartbeat shows.
type ActiveLister interface {
	ActiveIncidents(ctx context.Context) ([]storage.Incident, error)
}

// invalidate drops the cached answer (an incident opened or closed here;
// other replicas see it when their cache expires).
func (h *heartbeat) invalidate() {
	h.mu.Lock()
	h.at = time.Time{}
	h.mu.Unlock()
}

// status returns the cached verdicts or computes them. The probes run on a
// context of their own: a client that hangs up must not cache an outage.
func (h *heartbeat) status(ctx context.Context) Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.cfg.Now()
	if !h.at.IsZero() && now.Sub(h.at) < h.cfg.CacheTTL {
		return h.cached
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.ProbeTimeout)
	defer cancel()
	h.cached, h.at = h.compute(pctx, now), now
	return h.cached
}

func (h *heartbeat) compute(ctx context.Context, now time.Time) Status {
	verdict := map[string]Verdict{}
	reasons := map[string][]string{}
	mark := func(v Verdict, reason string, ps ...string) {
		for _, p := range ps {
			verdict[p] = worse(verdict[p], v)
			if !slices.Contains(reasons[p], reason) {
				reasons[p] = append(reasons[p], reason)
			}
		}
	}
	all := make([]string, len(products))
	for i, p := range products {
		all[i] = p.name
		verdict[p.name] = Operational
	}

	dbUp := h.db.PingContext(ctx) == nil
	if !dbUp {
		mark(Outage, ReasonDatabase, all...)
	}
	if h.nodes != nil {
		nodes, err := h.nodes.Nodes(ctx)
		if err != nil {
			mark(Degraded, ReasonCoordination, ProductAPI)
			mark(Outage, ReasonCoordination, mediaProducts...)
		} else {
			live := 0
			for _, n := range nodes {
				if !n.Draining {
					live++
				}
			}
			switch {
			case len(nodes) > 0 && live == 0, h.cfg.MinNodes > 0 && live == 0:
				mark(Outage, ReasonNoMediaNodes, mediaProducts...)
			case live < h.cfg.MinNodes:
				mark(Degraded, ReasonFewMediaNodes, mediaProducts...)
			}
		}
	}
	if h.providers != nil {
		for kind, ph := range h.providers() {
			var affected []string
			switch kind {
			case ProviderLLM, ProviderSTT, ProviderTTS:
				affected = mediaProducts
			case ProviderPayments:
				affected = []string{ProductBilling}
			}
			if len(affected) == 0 || ph.Requests < minProviderRequests {
				continue
			}
			switch rate := float64(ph.Errors) / float64(ph.Requests); {
			case rate >= outageRate:
				mark(Outage, ReasonProviderErrors, affected...)
			case rate >= degradedRate:
				mark(Degraded, ReasonProviderErrors, affected...)
			}
		}
	}
	views := []IncidentView{}
	if dbUp {
		// An unreadable incident list adds nothing: the verdicts above
		// already say what the probes saw.
		if incs, err := h.incidents.ActiveIncidents(ctx); err == nil {
			for _, inc := range incs {
				mark(Degraded, ReasonIncident, inc.Product)
				if len(views) < maxListed {
					views = append(views, publicIncident(inc))
				}
			}
		}
	}

	st := Status{Status: Operational, CheckedAt: api.TS(now), Incidents: views}
	for _, p := range products {
		st.Products = append(st.Products, ProductStatus{Name: p.name, Label: p.label, Status: verdict[p.name], Reasons: api.NonNil(reasons[p.name])})
		st.Status = worse(st.Status, verdict[p.name])
	}
	return st
}
