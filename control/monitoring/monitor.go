package monitoring

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// Config holds the monitoring settings. Zero values mean defaults.
type Config struct {
	// Token is the shared secret the receivers and auto-ack take in the
	// token query parameter. Empty turns them off: they answer 404.
	Token string
	// PublicURL is the base of acknowledgement links and of the status
	// URL in alert.triggered. Default http://127.0.0.1:8080.
	PublicURL string
	// CacheTTL is how long a computed heartbeat is served. Default 5 s.
	CacheTTL time.Duration
	// ProbeTimeout bounds each heartbeat probe (database ping, node
	// registry). Default 1 s.
	ProbeTimeout time.Duration
	// MinNodes is how many live, non-draining media nodes a scale-out
	// deployment expects; fewer degrade the media products and none takes
	// them out. 0 (the default) is the all-in-one server whose media runs
	// in process: then only registered nodes that are all draining count.
	MinNodes int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.PublicURL == "" {
		c.PublicURL = "http://127.0.0.1:8080"
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.CacheTTL <= 0 {
		c.CacheTTL = 5 * time.Second
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Store is what the receivers need from storage (storage.IncidentStore).
type Store interface {
	RecordAlert(ctx context.Context, a storage.Alert, event func(storage.Incident) any) (storage.Incident, string, error)
	ResolveAlert(ctx context.Context, source, key string, at time.Time) (storage.Incident, error)
	ActiveLister
}

// AckStore acknowledges incidents (storage.IncidentStore).
type AckStore interface {
	AckIncident(ctx context.Context, raw string) (storage.Incident, error)
	AckIncidentsByRule(ctx context.Context, rules []string) (int64, error)
}

// Deps are the collaborators of a Monitor. Nodes and Providers may be nil:
// no registry (nothing to check) and no provider figures.
type Deps struct {
	Store     Store
	Acks      AckStore
	DB        Pinger
	Nodes     Registry
	Providers func() map[string]ProviderHealth
}

// Monitor serves the heartbeat and the monitoring receivers.
type Monitor struct {
	cfg   Config
	log   *slog.Logger
	store Store
	acks  AckStore
	hb    *heartbeat
	// tokenSum is the SHA-256 of Config.Token: comparing digests keeps the
	// comparison constant-time whatever length the caller sends.
	tokenSum [32]byte
}

// New returns a Monitor; log may be nil.
func New(cfg Config, log *slog.Logger, d Deps) (*Monitor, error) {
	if d.Store == nil || d.Acks == nil || d.DB == nil {
		return nil, errors.New("monitoring: store, acks and db are required")
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Monitor{cfg: cfg, log: log, store: d.Store, acks: d.Acks, tokenSum: sha256.Sum256([]byte(cfg.Token))}
	m.hb = &heartbeat{cfg: cfg, db: d.DB, nodes: d.Nodes, incidents: d.Store, providers: d.Providers}
	return m, nil
}

// Routes returns the status and monitoring routes, all without a
// credential: the receivers check the shared token themselves.
func (m *Monitor) Routes() []api.Route {
	tok := []string{"token"}
	return []api.Route{
		{Method: "GET", Path: "/v1/status/heartbeat", Summary: "Public per-product status verdicts (cached for a few seconds)", Tag: "health", ResSchema: "Heartbeat", Handler: m.heartbeat},
		{Method: "POST", Path: "/v1/monitoring/azure-alert", Summary: "Receive an Azure Monitor alert (common alert schema); shared token in the query string", Tag: "monitoring", Query: tok, ReqSchema: "AzureAlert", ResSchema: "AlertReceipt", Errors: []int{400, 401, 404}, Handler: m.azureAlert},
		{Method: "POST", Path: "/v1/monitoring/glitchtip-alert", Summary: "Receive a GlitchTip issue alert (Slack-compatible webhook); shared token in the query string", Tag: "monitoring", Query: tok, ReqSchema: "GlitchTipAlert", ResSchema: "AlertReceipt", Errors: []int{400, 401, 404}, Handler: m.glitchtipAlert},
		{Method: "GET", Path: "/v1/monitoring/ack/:token", Summary: "Acknowledge an incident with its single-use link", Tag: "monitoring", ResSchema: "IncidentAck", Errors: []int{404, 410}, Handler: m.ack},
		{Method: "POST", Path: "/v1/monitoring/auto-ack", Summary: "Acknowledge every open incident of the named rules; shared token in the query string", Tag: "monitoring", Query: tok, ReqSchema: "AutoAckInput", ResSchema: "AutoAckResult", Errors: []int{400, 401, 404}, Handler: m.autoAck},
	}
}

// checkToken answers 404 when no token is configured and 401 for a
// missing or wrong one.
func (m *Monitor) checkToken(c fiber.Ctx) error {
	if m.cfg.Token == "" {
		return api.ErrNotFound
	}
	sum := sha256.Sum256([]byte(c.Query("token")))
	if subtle.ConstantTimeCompare(sum[:], m.tokenSum[:]) != 1 {
		return errBadToken
	}
	return nil
}

func (m *Monitor) heartbeat(c fiber.Ctx, _ *storage.Principal) error {
	c.Set(fiber.HeaderCacheControl, "public, max-age="+strconv.Itoa(int(m.cfg.CacheTTL/time.Second)))
	// A status page on another origin may read it: it is public and
	// carries no credential.
	c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	return c.JSON(m.hb.status(c.Context()))
}

// receipt is one incident a receiver touched.
type receipt struct {
	ID      int64  `json:"id"`
	Product string `json:"product"`
	Status  string `json:"status"`
	New     bool   `json:"new"`
	Count   int64  `json:"count"`
	// AckURL is the one-tap acknowledgement link, given once, when the
	// incident opens (the caller holds the shared token already).
	AckURL string `json:"ack_url,omitempty"`
}

// fire records a firing alert and, for a new incident, logs its
// acknowledgement link for the operators.
func (m *Monitor) fire(ctx context.Context, a storage.Alert) (receipt, error) {
	inc, raw, err := m.store.RecordAlert(ctx, a, m.alertEvent)
	if err != nil {
		return receipt{}, err
	}
	r := receipt{ID: inc.ID, Product: inc.Product, Status: "open", New: raw != "", Count: inc.Count}
	if raw != "" {
		r.AckURL = m.cfg.PublicURL + "/v1/monitoring/ack/" + raw
		m.hb.invalidate()
		m.log.Warn("incident opened", "incident_id", inc.ID, "source", inc.Source, "rule", inc.Rule, "product", inc.Product, "severity", inc.Severity, "ack_url", r.AckURL)
	}
	return r, nil
}

// resolve resolves the open incident of a; nothing open is not an error.
func (m *Monitor) resolve(ctx context.Context, source, key string, at time.Time) ([]receipt, error) {
	inc, err := m.store.ResolveAlert(ctx, source, key, at)
	if errors.Is(err, storage.ErrNotFound) {
		return []receipt{}, nil
	}
	if err != nil {
		return nil, err
	}
	m.hb.invalidate()
	m.log.Info("incident resolved", "incident_id", inc.ID, "source", inc.Source, "rule", inc.Rule)
	return []receipt{{ID: inc.ID, Product: inc.Product, Status: "resolved", Count: inc.Count}}, nil
}

// alertEvent is alert.triggered's data: what the public may know.
func (m *Monitor) alertEvent(inc storage.Incident) any {
	v := publicIncident(inc)
	return map[string]any{"incident_id": v.ID, "product": v.Product, "severity": v.Severity, "title": v.Title,
		"started_at": v.StartedAt, "status": v.Status, "status_url": m.cfg.PublicURL + "/v1/status/heartbeat"}
}

type ackView struct {
	ID             int64  `json:"id"`
	Product        string `json:"product"`
	Rule           string `json:"rule"`
	Severity       string `json:"severity"`
	Status         string `json:"status"`
	StartedAt      string `json:"started_at"`
	AcknowledgedAt string `json:"acknowledged_at"`
}

func (m *Monitor) ack(c fiber.Ctx, _ *storage.Principal) error {
	inc, err := m.acks.AckIncident(c.Context(), c.Params("token"))
	switch {
	case errors.Is(err, storage.ErrGone):
		return errAckUsed
	case err != nil:
		return api.StoreErr(err)
	}
	m.hb.invalidate()
	m.log.Info("incident acknowledged", "incident_id", inc.ID, "rule", inc.Rule)
	status := "acknowledged"
	if inc.ResolvedAt != nil {
		status = "resolved"
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(ackView{ID: inc.ID, Product: inc.Product, Rule: inc.Rule, Severity: inc.Severity, Status: status,
		StartedAt: api.TS(inc.StartedAt), AcknowledgedAt: api.TS(*inc.AckedAt)})
}

type autoAckInput struct {
	Rule  *string  `json:"rule"`
	Rules []string `json:"rules"`
}

func (m *Monitor) autoAck(c fiber.Ctx, _ *storage.Principal) error {
	if err := m.checkToken(c); err != nil {
		return err
	}
	var in autoAckInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	var rules []string
	if in.Rule != nil {
		if strings.TrimSpace(*in.Rule) == "" {
			f.Add("rule", "This field may not be blank.")
		}
		rules = append(rules, *in.Rule)
	}
	for _, r := range in.Rules {
		if strings.TrimSpace(r) == "" {
			f.Add("rules", "Rule names may not be blank.")
			break
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 && len(f) == 0 {
		f.Add("rules", "Give a rule name in rule or a list in rules.")
	}
	if len(rules) > 100 {
		f.Add("rules", "Ensure this field has no more than 100 elements.")
	}
	if err := f.Err(); err != nil {
		return err
	}
	n, err := m.acks.AckIncidentsByRule(c.Context(), rules)
	if err != nil {
		return err
	}
	if n > 0 {
		m.hb.invalidate()
		m.log.Info("incidents acknowledged by rule", "count", n)
	}
	return c.JSON(fiber.Map{"acknowledged": n})
}
