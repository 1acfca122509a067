package call

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/realtime"
)

// Node is the live call on one node: the three front doors and what they
// share (the providers, the tool chain, the media figures, the pacer and
// the link to the control plane).
//
// Lifecycle: NewNode starts the phone and browser doors (the control
// plane takes them as its dialer, trunk verifier and browser media);
// Connect wires the control plane and starts the realtime door
// (RecordProviders feeds its provider window); Drain
// ends the phone and realtime calls; Close ends the browser calls and
// frees the rest.
type Node struct {
	// Phone is the SIP/RTP door; PhoneOn reports whether it listens.
	Phone   *Phone
	PhoneOn bool
	// Browser is the WebRTC door, nil when its port cannot be opened.
	Browser *Browser
	// Stats are the node's media figures (control.Server.SetMediaStats).
	Stats *Stats

	cfg   Config
	log   *slog.Logger
	link  Link
	prov  *Providers
	chain *Chain
	rt    *Realtime
	// recs writes every call's recording; it outlives the front doors.
	recs *agent.Recorders
	// knowledge records retrievals in the background; Close waits for it.
	knowledge *KnowledgeTool
}

// NewNode starts the phone and browser front doors with the providers
// pc names (none when every door is in loopback).
func NewNode(cfg Config, pc ProvidersConfig, log *slog.Logger) (*Node, error) {
	n := &Node{cfg: cfg, log: log, Stats: NewStats(), recs: agent.NewRecorders(0)}
	if !cfg.Loopback || !cfg.Realtime.Loopback {
		p, err := NewProviders(pc)
		if err != nil {
			n.recs.Close()
			return nil, err
		}
		n.prov = p
	}
	n.knowledge = &KnowledgeTool{Knowledge: n.link.Knowledge, Recorder: n.link.Recorder, Log: log}
	n.chain = NewChain(log, n.link.Recorder, WebhookTools{X: linkTools{&n.link}}, &MCPTools{Catalog: n.link.MCP, Log: log},
		n.knowledge, Transfers{Recorder: n.link.Recorder, Log: log}, Keypad{})
	n.Phone = NewPhone(cfg, log, &n.link, n.prov, n.chain, n.Stats, n.recs)
	on, err := n.Phone.Start()
	if err != nil {
		n.prov.Close()
		n.recs.Close()
		return nil, fmt.Errorf("telephony: %w", err)
	}
	n.PhoneOn = on
	if n.Browser, err = NewBrowser(cfg, log, n.Phone.Pacer(), &n.link, n.prov, n.chain, n.Stats, n.recs); err != nil {
		n.Drain(context.Background())
		n.Close(context.Background())
		return nil, fmt.Errorf("browser calls: %w", err)
	}
	return n, nil
}

// RecordProviders reports each request to the node's AI providers to r
// (control.Server.ProviderErrors), so the status heartbeat sees their
// error rates. A node in loopback on every door has no providers.
func (n *Node) RecordProviders(r ProviderOutcomes) { n.prov.Record(r) }

// Connect wires the control plane and starts the realtime door, whose
// handler it returns (control.Realtime.Mount). slots bounds an
// organization's realtime sessions (nil: no cap).
func (n *Node) Connect(ctl Control, slots Slots) (http.Handler, error) {
	n.link.Set(ctl)
	var rs realtime.Slots
	if slots != nil {
		rs = rtSlots{slots}
	}
	rt, err := NewRealtime(n.cfg, n.log, n.Phone.Pacer(), ctl, n.prov, rs, n.chain, n.Stats, n.recs)
	if err != nil {
		return nil, fmt.Errorf("realtime: %w", err)
	}
	n.rt = rt
	return rt.Handler(), nil
}

// Live counts the node's calls and sessions in progress on every front
// door (a media node's load in the registry).
func (n *Node) Live() (calls int) {
	for _, v := range n.Stats.Read().Sessions {
		calls += v
	}
	return calls
}

// Drain stops taking calls on every front door at once (SIP INVITEs and
// OPTIONS probes get 503, new realtime sockets and browser calls are
// refused), gives the calls in progress until ctx ends, then ends the
// rest with end reason node_shutdown (a BYE to phone callers, a 1001
// close to realtime clients); each is recorded and billed as it ends.
// No call is cut before ctx ends.
func (n *Node) Drain(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { n.rt.Drain(ctx) })
	wg.Go(func() { n.Phone.Close(ctx) })
	wg.Go(func() { n.Browser.Drain(ctx) })
	wg.Wait()
	// Browser calls left at the deadline end now, not after the HTTP
	// drain; Close waits for them again (a no-op by then).
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	n.Browser.Close(bctx)
}

// Close ends the browser calls (they are recorded; give them until ctx
// ends), then stops the pacer, frees the providers and finishes the
// recordings. Drain first.
func (n *Node) Close(ctx context.Context) {
	n.Browser.Close(ctx)
	n.Phone.ClosePacer()
	n.knowledge.Wait()
	n.prov.Close()
	n.recs.Close()
}

// linkTools is the control plane's tool exchange, through the link.
type linkTools struct{ l *Link }

func (t linkTools) Tool(ctx context.Context, orgID int64, req webhook.ToolRequest) (webhook.ToolResponse, error) {
	c := t.l.get()
	if c == nil || c.Tools == nil {
		return webhook.ToolResponse{}, errors.New("no control plane to run the tool")
	}
	return c.Tools.Tool(ctx, orgID, req)
}
