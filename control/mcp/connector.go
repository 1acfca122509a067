package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
)

// Connector opens client sessions to registered MCP servers over
// streamable HTTP. Every connection goes through the webhook SSRF guard:
// the dial itself refuses non-public addresses (loopback only when
// AllowLoopback and the URL names the local machine), so a name that
// re-resolves to an internal address is refused at every connection,
// not only at registration. Safe for concurrent use.
type Connector struct {
	client *http.Client
}

// ConnectorConfig configures a Connector. Zero values mean defaults.
type ConnectorConfig struct {
	// AllowLoopback lets http://localhost and 127.0.0.1 URLs through, for
	// development (the webhook switch).
	AllowLoopback bool
	// Timeout bounds each HTTP request to an MCP server. Default 10 s.
	Timeout time.Duration
}

// NewConnector returns a Connector.
func NewConnector(cfg ConnectorConfig) *Connector {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Connector{client: webhook.NewClient(cfg.AllowLoopback, cfg.Timeout)}
}

// headerTransport sends the server's configured headers on every request.
type headerTransport struct {
	headers []storage.MCPHeader
	next    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for _, hd := range h.headers {
		r.Header.Set(hd.Key, hd.Value)
	}
	return h.next.RoundTrip(r)
}

// Connect opens a client session (initialize included) to url with
// headers. The caller closes it.
func (c *Connector) Connect(ctx context.Context, url string, headers []storage.MCPHeader) (*sdk.ClientSession, error) {
	hc := &http.Client{Transport: headerTransport{headers: headers, next: c.client.Transport}, Timeout: c.client.Timeout,
		CheckRedirect: c.client.CheckRedirect}
	cl := sdk.NewClient(&sdk.Implementation{Name: "voiced", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := cl.Connect(ctx, tr, nil)
	if err != nil {
		return nil, fmt.Errorf("connect mcp server: %w", err)
	}
	return cs, nil
}

// Tools connects to url and lists every tool it offers.
func (c *Connector) Tools(ctx context.Context, url string, headers []storage.MCPHeader) ([]*sdk.Tool, error) {
	cs, err := c.Connect(ctx, url, headers)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	var out []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list mcp tools: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// blocked reports whether err is the SSRF guard refusing an address.
func blocked(err error) bool {
	return errors.Is(err, webhook.ErrBlockedAddress) || strings.Contains(err.Error(), webhook.ErrBlockedAddress.Error())
}

// CachedTool is one entry of a server's cached_tools: a function-format
// tool definition a model accepts, and which MCP tool it stands for.
type CachedTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	MCP         ToolRef         `json:"mcp"`
}

// ToolRef names an MCP tool: the server and the tool's own name.
type ToolRef struct {
	ServerID string `json:"server_id"`
	ToolName string `json:"tool_name"`
}

// maxToolName is the longest function name the model APIs accept
// (OpenAI: ^[a-zA-Z0-9_-]{1,64}$).
const maxToolName = 64

// ToolName is the model-facing name of tool on server serverID:
// mcp_<server-id>_<tool> with every character outside [A-Za-z0-9_-]
// replaced by "_"; when that is longer than 64 characters the tool part
// is cut and a hash of the full tool name keeps it unique.
func ToolName(serverID, tool string) string {
	var b strings.Builder
	b.WriteString("mcp_" + serverID + "_")
	prefix := b.Len()
	for _, r := range tool {
		if r < 128 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) <= maxToolName {
		return name
	}
	sum := sha256.Sum256([]byte(tool))
	h := hex.EncodeToString(sum[:4])
	keep := maxToolName - prefix - len(h) - 1
	return name[:prefix+keep] + "_" + h
}

// cache renders tools as cached_tools of server serverID.
func cache(serverID string, tools []*sdk.Tool) (json.RawMessage, error) {
	out := make([]CachedTool, 0, len(tools))
	for _, t := range tools {
		params := json.RawMessage(`{"type":"object","properties":{}}`)
		if t.InputSchema != nil {
			b, err := json.Marshal(t.InputSchema)
			if err != nil {
				return nil, err
			}
			params = b
		}
		out = append(out, CachedTool{Type: "function", Name: ToolName(serverID, t.Name), Description: t.Description, Parameters: params,
			MCP: ToolRef{ServerID: serverID, ToolName: t.Name}})
	}
	return json.Marshal(out)
}
