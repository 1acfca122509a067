package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// AgentReader reads agents in the caller's organization, rendered as the
// REST API renders them.
type AgentReader interface {
	AgentViews(ctx context.Context, p *storage.Principal) (any, error)
	AgentView(ctx context.Context, p *storage.Principal, agentID int64) (any, error)
}

// CallReader reads calls in the caller's organization, rendered as the
// REST API renders them. Limit is 1-100 and status is "" or a call status.
type CallReader interface {
	CallView(ctx context.Context, p *storage.Principal, callID int64) (any, error)
	CallViews(ctx context.Context, p *storage.Principal, limit int, status string) (any, error)
	TranscriptView(ctx context.Context, p *storage.Principal, callID int64) (any, error)
}

// CallPlacer places an outbound call with the guards of POST /v1/call.
type CallPlacer interface {
	PlaceCall(ctx context.Context, p *storage.Principal, agentID int64, from, to string) (any, error)
}

// Server is voiced itself as an MCP server (POST /v1/mcp): streamable
// HTTP, stateless, JSON responses. It is safe for concurrent use.
type Server struct {
	agents AgentReader
	calls  CallReader
	placer CallPlacer
	log    *slog.Logger
	http   fiber.Handler
}

// NewServer returns the /v1/mcp server over the given domain readers.
func NewServer(version string, log *slog.Logger, agents AgentReader, calls CallReader, placer CallPlacer) *Server {
	s := &Server{agents: agents, calls: calls, placer: placer, log: log}
	srv := sdk.NewServer(&sdk.Implementation{Name: "voiced", Version: version}, nil)
	s.addTools(srv)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		// Every request stands alone: any replica answers any request and
		// nothing is kept between them.
		Stateless:    true,
		JSONResponse: true,
		// The credential is a bearer secret key a DNS-rebinding page
		// cannot have, and behind a proxy the Host is rarely loopback.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        1 << 20,
	})
	// The principal was resolved by the router; the SDK's bearer
	// middleware is how it reaches tool handlers (req.Extra.TokenInfo).
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		ctx, ok := adaptor.LocalContextFromHTTPRequest(r)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		p, ok := ctx.Value(principalKey{}).(*storage.Principal)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: p.KeyID, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{extraPrincipal: p}}, nil
	}
	s.http = adaptor.HTTPHandlerWithContext(auth.RequireBearerToken(verify, nil)(h))
	return s
}

type principalKey struct{}

const extraPrincipal = "principal"

// Routes returns POST /v1/mcp.
func (s *Server) Routes() []api.Route {
	return []api.Route{
		{Method: "POST", Path: "/v1/mcp", Summary: "voiced as an MCP server (JSON-RPC 2.0 over streamable HTTP): initialize, notifications/initialized, tools/list, tools/call; secret API keys only; unknown methods give -32601 with 400",
			Tag: "mcp", Auth: api.AuthUser, ReqSchema: "JSONRPCRequest", ResSchema: "JSONRPCResponse", Errors: []int{400, 401}, Handler: s.serve},
	}
}

func (s *Server) serve(c fiber.Ctx, p *storage.Principal) error {
	if p.KeyID == "" {
		// Spec 5.6: no session auth on /v1/mcp, only secret keys.
		return api.ErrUnauthenticated
	}
	c.SetContext(context.WithValue(c.Context(), principalKey{}, p))
	if err := s.http(c); err != nil {
		return err
	}
	rewritePlain400(c)
	return nil
}

// rewritePlain400 turns the SDK's plain-text 400s into JSON-RPC errors:
// -32601 for a method it does not handle, -32600 for anything else, with
// the request's id when it has one; and its 404 for an unknown method
// (protocol 2026-07-28) into a 400.
func rewritePlain400(c fiber.Ctx) {
	res := c.Response()
	if res.StatusCode() == http.StatusNotFound && bytes.Contains(res.Body(), []byte(`"code":-32601`)) {
		// From protocol 2026-07-28 the SDK answers an unknown method
		// with 404; the spec says 400 whatever the version.
		res.SetStatusCode(http.StatusBadRequest)
		return
	}
	if res.StatusCode() != http.StatusBadRequest || !strings.HasPrefix(string(res.Header.ContentType()), "text/plain") {
		return
	}
	msg := strings.TrimSpace(string(res.Body()))
	code, text := jsonrpc.CodeInvalidRequest, "Invalid Request"
	if strings.HasPrefix(msg, "JSON RPC not handled") {
		code, text = jsonrpc.CodeMethodNotFound, "Method not found"
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(c.Body(), &req)
	id := req.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if req.Method != "" && code == jsonrpc.CodeMethodNotFound {
		text += ": " + req.Method
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": text}})
	res.Header.SetContentType("application/json")
	res.SetBodyRaw(body)
}

// principal is the caller of a tool.
func principal(req *sdk.CallToolRequest) (*storage.Principal, error) {
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		if p, ok := req.Extra.TokenInfo.Extra[extraPrincipal].(*storage.Principal); ok {
			return p, nil
		}
	}
	return nil, errors.New("no principal")
}

// toolErr is the in-band text of err: an API error's user text, never an
// internal error string.
func (s *Server) toolErr(tool string, err error) error {
	var ae *api.Error
	if errors.As(err, &ae) {
		if len(ae.Fields) == 0 {
			return errors.New(ae.Detail)
		}
		names := make([]string, 0, len(ae.Fields))
		for k := range ae.Fields {
			names = append(names, k)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, k := range names {
			parts[i] = k + ": " + strings.Join(ae.Fields[k], " ")
		}
		return errors.New("Invalid arguments. " + strings.Join(parts, "; "))
	}
	if s.log != nil {
		s.log.Error("mcp tool failed", "tool", tool, "err", err)
	}
	return errors.New("Internal error.")
}
