package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/voiced/voiced/storage"
)

// The legacy URL's blocking exchanges (spec section 6.2) are synchronous
// requests whose answer the call waits for: the incoming configuration
// request when a call starts, and webhook-mode tool dispatch when the agent
// calls a tool routed to the webhook. The spec leaves their shapes open;
// these are voiced's (docs/decisions.md, "Legacy blocking exchanges").
//
// Both POST the legacy envelope {"data": ..., "type": ...} signed exactly
// like deliveries (X-Service-Signature plus the Standard Webhooks headers;
// webhook-id is a fresh id per exchange), make a single attempt, never
// follow redirects, and expect a 2xx with a JSON object (or an empty body).

// Exchange time limits (spec section 8).
const (
	IncomingTimeout = 10 * time.Second
	ToolTimeout     = 20 * time.Second
)

// Channel is where a call comes from: it names the event types of its
// exchanges ("telephony.incoming" or "web.incoming", and so on).
type Channel string

// The channels.
const (
	Telephony Channel = "telephony"
	Web       Channel = "web"
)

// IncomingRequest is the data of the incoming configuration request.
type IncomingRequest struct {
	Channel    Channel `json:"-"`
	CallID     int64   `json:"call_id"`
	AgentID    *int64  `json:"agent_id"`
	Direction  string  `json:"direction"`
	FromNumber string  `json:"from_number"`
	ToNumber   string  `json:"to_number"`
}

// IncomingResponse is what the receiver may answer; every field is
// optional and an empty body (or {}) means "answer with the agent as
// configured".
type IncomingResponse struct {
	// Reject, when true, refuses the call (inbound calls get a SIP 603).
	Reject bool `json:"reject,omitempty"`
	// RejectReason is kept on the call record.
	RejectReason string `json:"reject_reason,omitempty"`
	// AgentID answers with another agent of the same organization.
	AgentID *int64 `json:"agent_id,omitempty"`
	// Prompt replaces the agent's system prompt for this call.
	Prompt string `json:"prompt,omitempty"`
	// FirstMessage is spoken first, instead of the agent's greeting.
	FirstMessage string `json:"first_message,omitempty"`
	// Voice replaces the agent's voice for this call.
	Voice string `json:"voice,omitempty"`
	// Variables fill {{name}} placeholders in the prompt and first message.
	Variables map[string]string `json:"variables,omitempty"`
	// Metadata is stored with the call and echoed in its later events.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// ToolRequest is the data of a webhook-mode tool dispatch.
type ToolRequest struct {
	Channel    Channel         `json:"-"`
	CallID     int64           `json:"call_id"`
	AgentID    *int64          `json:"agent_id"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
}

// ToolResponse is the receiver's answer: {"output": <any JSON>} or
// {"error": "message"}. A 2xx whose body is not a JSON object is taken as
// plain-text output.
type ToolResponse struct {
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// LegacyStore finds an organization's legacy webhook.
type LegacyStore interface {
	GetWebhook(ctx context.Context, orgID int64) (storage.Webhook, error)
}

// Exchanger runs the blocking exchanges. It is safe for concurrent use;
// the media side reaches it through an interface of its own, wired by
// cmd/voiced.
type Exchanger struct {
	store  LegacyStore
	client *http.Client
	now    func() time.Time
	log    *slog.Logger
}

// NewExchanger returns an Exchanger. allowLoopback is the guard's switch
// (see NewClient); now is the clock of signatures (nil for time.Now).
func NewExchanger(store LegacyStore, allowLoopback bool, now func() time.Time, log *slog.Logger) *Exchanger {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Per-exchange contexts carry the real limits; the client's own timeout
	// is only a backstop.
	return &Exchanger{store: store, client: NewClient(allowLoopback, ToolTimeout), now: now, log: log}
}

// Incoming asks orgID's legacy URL how to answer a call. Within 10 s it
// returns the answer, ErrNoLegacyWebhook, or an error wrapping ErrExchange
// (the caller then answers with the agent as configured).
func (x *Exchanger) Incoming(ctx context.Context, orgID int64, req IncomingRequest) (IncomingResponse, error) {
	var out IncomingResponse
	body, err := x.exchange(ctx, orgID, string(channelOr(req.Channel))+".incoming", req, IncomingTimeout)
	if err != nil {
		return out, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return IncomingResponse{}, fmt.Errorf("%w: answer is not the documented JSON object", ErrExchange)
	}
	return out, nil
}

// Tool dispatches a tool call to orgID's legacy URL and returns its
// result within 20 s, or an error wrapping ErrExchange or
// ErrNoLegacyWebhook (the caller reports the failure to the model).
func (x *Exchanger) Tool(ctx context.Context, orgID int64, req ToolRequest) (ToolResponse, error) {
	if len(req.Arguments) == 0 {
		req.Arguments = json.RawMessage(`{}`)
	}
	body, err := x.exchange(ctx, orgID, string(channelOr(req.Channel))+".tool", req, ToolTimeout)
	if err != nil {
		return ToolResponse{}, err
	}
	trim := bytes.TrimSpace(body)
	if len(trim) > 0 && trim[0] == '{' {
		var out ToolResponse
		if err := json.Unmarshal(trim, &out); err == nil {
			return out, nil
		}
	}
	text, _ := json.Marshal(string(trim))
	return ToolResponse{Output: text}, nil
}

func channelOr(c Channel) Channel {
	if c == "" {
		return Telephony
	}
	return c
}

// exchange POSTs one signed legacy envelope and returns the 2xx body.
func (x *Exchanger) exchange(ctx context.Context, orgID int64, typ string, data any, limit time.Duration) ([]byte, error) {
	wh, err := x.store.GetWebhook(ctx, orgID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrNoLegacyWebhook
	}
	if err != nil {
		return nil, err
	}
	d, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	body := Envelope("", typ, d, true)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, wh.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: invalid URL", ErrExchange)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	setSignatures(req.Header, wh.Secret, storage.NewUUID(), x.now().Unix(), body)
	res, err := x.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrExchange, describe(err))
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrExchange, describe(err))
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, fmt.Errorf("%w: HTTP %d", ErrExchange, res.StatusCode)
	}
	return b, nil
}
