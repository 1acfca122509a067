package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
)

// Store is what the MCP server routes need from storage.
type Store interface {
	MCPServers(ctx context.Context, orgID int64) ([]storage.MCPServer, error)
	MCPServer(ctx context.Context, orgID int64, id string) (storage.MCPServer, error)
	CreateMCPServer(ctx context.Context, m storage.MCPServer) (storage.MCPServer, error)
	UpdateMCPServer(ctx context.Context, m storage.MCPServer) (storage.MCPServer, error)
	DeleteMCPServer(ctx context.Context, orgID int64, id string) error
}

// ToolLister lists an MCP server's tools (a Connector).
type ToolLister interface {
	Tools(ctx context.Context, url string, headers []storage.MCPHeader) ([]*sdk.Tool, error)
}

// TransportStreamableHTTP is the only transport (spec 2.17).
const TransportStreamableHTTP = "streamable_http"

type servers struct {
	store Store
	tools ToolLister
	now   func() time.Time
}

// ServerRoutes returns the /v1/mcp-servers routes (spec 4.12): reads for
// every member, writes for admins.
func ServerRoutes(store Store, tools ToolLister) []api.Route {
	h := &servers{store: store, tools: tools, now: time.Now}
	const tag = "mcp-servers"
	return []api.Route{
		{Method: "GET", Path: "/v1/mcp-servers", Summary: "List MCP servers; header values never, key names to admins only", Tag: tag, Auth: api.AuthOrg, ResSchema: "MCPServer", ResList: true, Handler: h.list},
		{Method: "POST", Path: "/v1/mcp-servers", Summary: "Register an MCP server: connects and syncs its tools inline; a failure is 400 on url and nothing is saved", Tag: tag, Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "MCPServerInput", ResSchema: "MCPServer", ResStatus: 201, Errors: []int{400, 403}, Handler: h.create},
		{Method: "GET", Path: "/v1/mcp-servers/:server_id", Summary: "Get an MCP server", Tag: tag, Auth: api.AuthOrg, ResSchema: "MCPServer", Errors: []int{404}, Handler: h.get},
		{Method: "PATCH", Path: "/v1/mcp-servers/:server_id", Summary: "Change an MCP server; re-syncs when display_name, url, transport or headers change; an empty header value keeps the stored one", Tag: tag, Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ReqSchema: "MCPServerInput", ResSchema: "MCPServer", Errors: []int{400, 403, 404}, Handler: h.patch},
		{Method: "DELETE", Path: "/v1/mcp-servers/:server_id", Summary: "Delete an MCP server", Tag: tag, Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResStatus: 204, Errors: []int{403, 404}, Handler: h.delete},
		{Method: "POST", Path: "/v1/mcp-servers/:server_id/sync-tools", Summary: "Re-sync the server's tools; returns the updated server", Tag: tag, Auth: api.AuthOrg, MinRole: storage.RoleAdmin, ResSchema: "MCPServer", Errors: []int{400, 403, 404}, Handler: h.sync},
	}
}

type headerInput struct {
	Key   *string `json:"key"`
	Value *string `json:"value"`
}

type serverInput struct {
	DisplayName *string        `json:"display_name"`
	URL         *string        `json:"url"`
	Transport   *string        `json:"transport"`
	Headers     *[]headerInput `json:"headers"`
	Enabled     *bool          `json:"enabled"`
}

// view renders m; header key names only to admins, values never.
func view(m storage.MCPServer, p *storage.Principal) map[string]any {
	headers := []map[string]string{}
	if p.Role.AtLeast(storage.RoleAdmin) {
		for _, h := range m.Headers {
			headers = append(headers, map[string]string{"key": h.Key})
		}
	}
	tools := m.CachedTools
	if len(tools) == 0 {
		tools = json.RawMessage("[]")
	}
	return map[string]any{"id": m.ID, "display_name": m.DisplayName, "url": m.URL, "transport": m.Transport, "headers": headers,
		"enabled": m.Enabled, "last_tools_sync_at": api.TSPtr(m.LastToolsSyncAt), "cached_tools": tools,
		"created_at": api.TS(m.CreatedAt), "updated_at": api.TS(m.UpdatedAt)}
}

func (h *servers) list(c fiber.Ctx, p *storage.Principal) error {
	ms, err := h.store.MCPServers(c.Context(), p.OrgID)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(ms))
	for i, m := range ms {
		out[i] = view(m, p)
	}
	return c.JSON(out)
}

func (h *servers) load(c fiber.Ctx, p *storage.Principal) (storage.MCPServer, error) {
	id := c.Params("server_id")
	if !isUUID(id) {
		return storage.MCPServer{}, api.ErrNotFound
	}
	m, err := h.store.MCPServer(c.Context(), p.OrgID, id)
	return m, api.StoreErr(err)
}

func (h *servers) get(c fiber.Ctx, p *storage.Principal) error {
	m, err := h.load(c, p)
	if err != nil {
		return err
	}
	return c.JSON(view(m, p))
}

// apply validates in onto m. old holds the stored headers (PATCH), whose
// values an empty value keeps. It reports whether the connection
// (display name, URL, transport or headers) changed.
func apply(in serverInput, m *storage.MCPServer, create bool, f api.Fields) bool {
	changed := false
	if in.DisplayName != nil || create {
		name := f.Name("display_name", in.DisplayName, true, 255)
		changed = changed || name != m.DisplayName
		m.DisplayName = name
	}
	if in.URL != nil || create {
		switch {
		case in.URL == nil:
			f.Add("url", "This field is required.")
		default:
			u, msg := webhook.CheckURL(*in.URL)
			if msg != "" {
				f.Add("url", msg)
			}
			changed = changed || u != m.URL
			m.URL = u
		}
	}
	if in.Transport != nil {
		if *in.Transport != TransportStreamableHTTP {
			f.Add("transport", `"`+*in.Transport+`" is not a valid choice; the only transport is streamable_http.`)
		}
		changed = changed || *in.Transport != m.Transport
	}
	m.Transport = TransportStreamableHTTP
	if in.Headers != nil {
		old := map[string]string{}
		for _, hd := range m.Headers {
			old[strings.ToLower(hd.Key)] = hd.Value
		}
		seen := map[string]bool{}
		out := []storage.MCPHeader{}
		for _, hd := range *in.Headers {
			if hd.Key == nil || strings.TrimSpace(*hd.Key) == "" {
				f.Add("headers", "Every header needs a key.")
				continue
			}
			key := strings.TrimSpace(*hd.Key)
			lk := strings.ToLower(key)
			if !validHeaderName(key) {
				f.Add("headers", `"`+key+`" is not a valid header name.`)
				continue
			}
			if seen[lk] {
				f.Add("headers", `Header names must be unique (case-insensitively): "`+key+`" repeats.`)
				continue
			}
			seen[lk] = true
			val := ""
			if hd.Value != nil {
				val = *hd.Value
			}
			if strings.ContainsAny(val, "\r\n") {
				f.Add("headers", `The value of "`+key+`" must be one line.`)
				continue
			}
			if val == "" {
				kept, ok := old[lk]
				if !ok {
					f.Add("headers", `"`+key+`" needs a value.`)
					continue
				}
				val = kept
			}
			out = append(out, storage.MCPHeader{Key: key, Value: val})
		}
		changed = changed || !sameHeaders(m.Headers, out)
		m.Headers = out
	}
	if in.Enabled != nil {
		m.Enabled = *in.Enabled
	}
	return changed
}

func sameHeaders(a, b []storage.MCPHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// validHeaderName reports whether s is an HTTP field name (RFC 9110
// section 5.1, a token).
func validHeaderName(s string) bool {
	for _, r := range s {
		if r > 126 || r <= 32 || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return s != ""
}

// syncTools connects to m and replaces its cached tools. A failure is a
// 400 on url: the server cannot be used as it is configured.
func (h *servers) syncTools(ctx context.Context, m *storage.MCPServer) error {
	tools, err := h.tools.Tools(ctx, m.URL, m.Headers)
	if err != nil {
		if blocked(err) {
			return api.FieldErr("url", "The URL must resolve to a public address.")
		}
		return api.FieldErr("url", "Could not connect to the MCP server and list its tools: check the URL, the headers and that the server speaks streamable HTTP.")
	}
	cached, err := cache(m.ID, tools)
	if err != nil {
		return err
	}
	now := h.now()
	m.CachedTools, m.LastToolsSyncAt = cached, &now
	return nil
}

func conflictErr(err error) error {
	if errors.Is(err, storage.ErrConflict) {
		return api.FieldErr("display_name", "An MCP server with this name already exists.")
	}
	return api.StoreErr(err)
}

func (h *servers) create(c fiber.Ctx, p *storage.Principal) error {
	var in serverInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	m := storage.MCPServer{ID: storage.NewUUID(), OrgID: p.OrgID, Enabled: true, Headers: []storage.MCPHeader{}}
	f := api.Fields{}
	apply(in, &m, true, f)
	if err := f.Err(); err != nil {
		return err
	}
	ctx := c.Context()
	if err := h.syncTools(ctx, &m); err != nil {
		return err
	}
	m, err := h.store.CreateMCPServer(ctx, m)
	if err != nil {
		return conflictErr(err)
	}
	return c.Status(http.StatusCreated).JSON(view(m, p))
}

func (h *servers) patch(c fiber.Ctx, p *storage.Principal) error {
	m, err := h.load(c, p)
	if err != nil {
		return err
	}
	var in serverInput
	if err := api.Decode(c, &in); err != nil {
		return err
	}
	f := api.Fields{}
	changed := apply(in, &m, false, f)
	if err := f.Err(); err != nil {
		return err
	}
	ctx := c.Context()
	if changed {
		if err := h.syncTools(ctx, &m); err != nil {
			return err
		}
	}
	if m, err = h.store.UpdateMCPServer(ctx, m); err != nil {
		return conflictErr(err)
	}
	return c.JSON(view(m, p))
}

func (h *servers) delete(c fiber.Ctx, p *storage.Principal) error {
	m, err := h.load(c, p)
	if err != nil {
		return err
	}
	if err := h.store.DeleteMCPServer(c.Context(), p.OrgID, m.ID); err != nil {
		return api.StoreErr(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

func (h *servers) sync(c fiber.Ctx, p *storage.Principal) error {
	m, err := h.load(c, p)
	if err != nil {
		return err
	}
	ctx := c.Context()
	if err := h.syncTools(ctx, &m); err != nil {
		return err
	}
	if m, err = h.store.UpdateMCPServer(ctx, m); err != nil {
		return conflictErr(err)
	}
	return c.JSON(view(m, p))
}

// isUUID reports whether s is a UUID in its canonical 36-character form;
// any other server_id is simply not found.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
				return false
			}
		}
	}
	return true
}
