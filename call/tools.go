package call

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/media/agent"
)

// Info is what a tool source may know of a call: who it belongs to, its
// agent as admitted, its channel and, on phone calls, its SIP leg.
type Info struct {
	CallID, OrgID, AgentID int64
	Agent                  control.AgentConfig
	// Direction is the call's (inbound, outbound, web or test).
	Direction string
	// Channel is the front door the call came through.
	Channel Channel
	// Leg is the phone call's SIP side (nil on other channels).
	Leg Leg
}

// Leg is a phone call's SIP and RTP side as transfer_call and send_dtmf
// use it (phoneLeg).
type Leg interface {
	// Transfer hands the caller over to target (REFER, else a bridge).
	Transfer(ctx context.Context, target string) error
	// Bridged reports whether the transfer became a bridge.
	Bridged() bool
	// SendDTMF queues digits as RFC 4733 events on the call's stream.
	SendDTMF(digits string) error
}

// Source offers function tools to calls. It is registered once, on the
// node's Chain; Tools is asked once per call, at its start (so no
// database is read per turn), and Run runs one of the tools it offered.
// A knowledge search or an MCP server is one more Source, on every
// channel.
type Source interface {
	// Tools returns the tools the source offers call c (none: nil).
	Tools(c *Info) []llm.Tool
	// Run runs tool call tc of call c. The error goes back to the model
	// as the tool's failure.
	Run(ctx context.Context, c *Info, tc llm.ToolCall) (string, error)
}

// Ender is a Source that keeps state per call (sessions to open
// servers): EndCall frees it when the call ends.
type Ender interface {
	EndCall(callID int64)
}

// Grower is a Source whose tools for a call grow during it (an MCP
// tool_search loads definitions on demand): Grown lists the tools call c
// gained so far. The model is offered them from its next request, and
// they run through this source.
type Grower interface {
	Grown(c *Info) []llm.Tool
}

// ContextSource is a Source that also adds context to the model's request
// before each answer to a caller turn (agent.TurnContext): the knowledge
// retrieved for the turn, say. "" adds nothing.
type ContextSource interface {
	TurnContext(ctx context.Context, c *Info, callerText string) string
}

// toolDeadline bounds one tool run; the model hears of a run that
// overruns it as a failure and the call goes on.
const toolDeadline = 30 * time.Second

// Chain is the one agent.ToolRunner of every call on the node: the tool
// sources, in order. A tool name offered twice goes to the later source,
// so built-ins registered last (transfer_call) win over an agent's own
// tool of the same name.
type Chain struct {
	sources []Source
	// recorder is the control plane's, once wired (nil: no tool events).
	recorder func() Recorder
	log      *slog.Logger
	deadline time.Duration
}

// NewChain returns the chain of sources. recorder returns where tool
// runs are reported (tool webhook events), nil before control runs.
func NewChain(log *slog.Logger, recorder func() Recorder, sources ...Source) *Chain {
	return &Chain{sources: sources, recorder: recorder, log: log, deadline: toolDeadline}
}

// CallTools is one call's tools, resolved at its start: an
// agent.ToolRunner.
type CallTools struct {
	chain *Chain
	info  Info
	specs []llm.Tool
	by    map[string]Source
}

// Resolve asks every source for call c's tools, once, at its start.
func (ch *Chain) Resolve(c Info) *CallTools {
	t := &CallTools{chain: ch, info: c, by: map[string]Source{}}
	if ch == nil {
		return t
	}
	at := map[string]int{}
	for _, s := range ch.sources {
		for _, spec := range s.Tools(&t.info) {
			if spec.Name == agent.EndCallTool {
				continue // the engine's own: it ends the call after the goodbye plays
			}
			t.by[spec.Name] = s
			if i, dup := at[spec.Name]; dup {
				t.specs[i] = spec
				continue
			}
			at[spec.Name] = len(t.specs)
			t.specs = append(t.specs, spec)
		}
	}
	return t
}

// RunTool implements agent.ToolRunner: the tool's source runs it within
// the deadline, and the run is reported as the call's tool webhook
// event (telephony.tool or web.tool).
func (t *CallTools) RunTool(ctx context.Context, tc llm.ToolCall) (string, error) {
	start := time.Now()
	out, err := t.run(ctx, tc)
	t.report(ctx, tc, out, err, start)
	return out, err
}

// Close tells the sources that keep per-call state that the call has
// ended. Safe to call more than once.
func (t *CallTools) Close() { t.chain.End(t.info.CallID) }

// End tells the sources that keep per-call state that call callID has
// ended.
func (ch *Chain) End(callID int64) {
	if ch == nil {
		return
	}
	for _, s := range ch.sources {
		if e, ok := s.(Ender); ok {
			e.EndCall(callID)
		}
	}
}

// TurnContext implements agent.TurnContext: what the chain's context
// sources add for the caller's turn, one paragraph each.
func (t *CallTools) TurnContext(ctx context.Context, callerText string) string {
	if t.chain == nil {
		return ""
	}
	var parts []string
	for _, s := range t.chain.sources {
		if cs, ok := s.(ContextSource); ok {
			if text := cs.TurnContext(ctx, &t.info, callerText); text != "" {
				parts = append(parts, text)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

// Specs are the tools offered to the model.
func (t *CallTools) Specs() []llm.Tool { return t.specs }

// GrownTools implements agent.ToolGrower: the tools the call's sources
// gained since its start (Grower), except names it already had.
func (t *CallTools) GrownTools() []llm.Tool {
	var out []llm.Tool
	t.grown(func(_ Source, spec llm.Tool) bool {
		out = append(out, spec)
		return false
	})
	return out
}

// grown calls fn with each grown tool and its source until fn says stop.
func (t *CallTools) grown(fn func(Source, llm.Tool) bool) {
	if t.chain == nil {
		return
	}
	for _, s := range t.chain.sources {
		g, ok := s.(Grower)
		if !ok {
			continue
		}
		for _, spec := range g.Grown(&t.info) {
			if _, had := t.by[spec.Name]; !had && fn(s, spec) {
				return
			}
		}
	}
}

func (t *CallTools) run(ctx context.Context, tc llm.ToolCall) (string, error) {
	s, ok := t.by[tc.Name]
	if !ok {
		t.grown(func(g Source, spec llm.Tool) bool {
			s, ok = g, spec.Name == tc.Name
			return ok
		})
	}
	if !ok {
		return "", fmt.Errorf("no tool named %q", tc.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, t.chain.deadline)
	defer cancel()
	out, err := s.Run(ctx, &t.info, tc)
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%s did not answer within %s", tc.Name, t.chain.deadline)
	}
	return out, err
}

// report emits the run's tool event. Mic sessions (direction test) are
// not calls anyone subscribes to: no event.
func (t *CallTools) report(ctx context.Context, tc llm.ToolCall, out string, err error, start time.Time) {
	if t.chain.recorder == nil || t.info.Direction == calllog.DirectionTest {
		return
	}
	rec := t.chain.recorder()
	if rec == nil {
		return
	}
	run := calllog.ToolRun{ToolCallID: tc.ID, Name: tc.Name, Arguments: json.RawMessage(tc.Arguments), Output: out, Start: start, End: time.Now()}
	if err != nil {
		run.Output, run.Error = "", err.Error()
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if eerr := rec.ToolEvent(ectx, t.info.CallID, run); eerr != nil {
		t.chain.log.Warn("tool event not recorded", "call_id", t.info.CallID, "tool", tc.Name, "err", eerr)
	}
}
