package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/voiced/voiced/control/simulations"
	"github.com/voiced/voiced/storage/coord"
)

// pathSimulate is the node API route that makes one simulation run's
// call with the node's simulated caller and answers, when the call has
// ended, with its outcome (simulations.Outcome).
const pathSimulate = "media/simulate"

// Simulator makes simulation runs' calls on media nodes
// (simulations.Simulator) for a control plane without SIP of its own:
// the coord placement picks a node and the run's call is asked of the
// node's own API, which holds the request until the call has ended and
// answers with the outcome. The simulated caller runs next to the node's
// front doors, as in voiced serve: its SIP user agent on the node's
// loopback dials the node's SIP address (or, inbound, the node's
// telephony dials it), its web calls join the realtime WebSocket of the
// node the session token names. The queue, the lease and the run's
// record stay with the control plane's worker; if the worker goes away
// the request ends and the node hangs up, if the node goes away the
// request fails and the run fails with it.
type Simulator struct {
	placer coord.Placer
	secret string
	scheme string
	hc     *http.Client
	mu     sync.Mutex // owners: the worker may run before SetOwners
	owners Owners
}

// NewSimulator returns the simulator over the media nodes of p,
// authenticating with secret (https when publicURL is, as Nodes).
func NewSimulator(p coord.Placer, secret, publicURL string) *Simulator {
	// No client timeout: a call lasts up to MaxRunMinutes; the request's
	// context bounds it.
	return &Simulator{placer: p, secret: secret, scheme: httpScheme(publicURL), hc: &http.Client{CheckRedirect: noRedirects}}
}

// SetOwners has an inbound run's call (placed by the node's telephony)
// recorded as its node's before the node dials it, so it is ended if the
// node is lost; call it before the first Simulate.
func (s *Simulator) SetOwners(o Owners) {
	s.mu.Lock()
	s.owners = o
	s.mu.Unlock()
}

// Ready implements simulations.Simulator: some media node is live. A
// node whose telephony is off refuses a telephony call when asked (the
// run then fails with its reason).
func (s *Simulator) Ready(string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := s.placer.Pick(ctx); err != nil {
		return fmt.Errorf("no media node is live to run the simulated caller: %v", err)
	}
	return nil
}

// Simulate implements simulations.Simulator on the node the placement
// picks.
func (s *Simulator) Simulate(ctx context.Context, c simulations.Call) (simulations.Outcome, error) {
	n, err := s.placer.Pick(ctx)
	if err != nil {
		return simulations.Outcome{}, fmt.Errorf("no media node is live to run the simulated caller: %v", err)
	}
	s.mu.Lock()
	owners := s.owners
	s.mu.Unlock()
	if len(c.Outbound) > 0 && owners != nil {
		var o struct{ CallID int64 }
		if err := json.Unmarshal(c.Outbound, &o); err != nil {
			return simulations.Outcome{}, fmt.Errorf("the agent's call is unreadable: %v", err)
		}
		if err := owners.AssignNode(ctx, o.CallID, n.ID); err != nil {
			return simulations.Outcome{}, err
		}
	}
	body, err := json.Marshal(c)
	if err != nil {
		return simulations.Outcome{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, simulations.MaxRunMinutes*time.Minute+time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.scheme+"://"+n.Addr+Prefix+pathSimulate, bytes.NewReader(body))
	if err != nil {
		return simulations.Outcome{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.secret)
	res, err := s.hc.Do(req)
	if err != nil {
		return simulations.Outcome{}, fmt.Errorf("media node %s: %v", n.ID, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusOK {
		var we wireError
		if json.Unmarshal(data, &we) == nil && we.Detail != "" {
			return simulations.Outcome{}, fmt.Errorf("media node %s: %s", n.ID, we.Detail)
		}
		return simulations.Outcome{}, fmt.Errorf("media node %s: HTTP %d: %.200s", n.ID, res.StatusCode, data)
	}
	var out simulations.Outcome
	if err := json.Unmarshal(data, &out); err != nil {
		return simulations.Outcome{}, fmt.Errorf("media node %s: bad answer: %w", n.ID, err)
	}
	return out, nil
}

// simulateAPI is the node's side of Simulator: sim makes the call, for
// as long as the request lasts.
func simulateAPI(secret string, sim simulations.Simulator, log *slog.Logger) http.Handler {
	s := &server{cfg: ServerConfig{Secret: secret}, log: log}
	return s.auth(s.call(func(r *http.Request) (any, error) {
		c, err := decode[simulations.Call](r)
		if err != nil {
			return nil, err
		}
		if err := sim.Ready(c.Channel); err != nil {
			return nil, err
		}
		return sim.Simulate(r.Context(), c)
	}))
}
