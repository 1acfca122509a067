package control

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v3"
)

var paramRe = regexp.MustCompile(`:([a-z_]+)`)

// openapiPath turns a Fiber path into an OpenAPI one (":id" -> "{id}",
// "*" -> "{rest}").
func openapiPath(p string) string {
	p = paramRe.ReplaceAllString(p, "{$1}")
	return strings.ReplaceAll(p, "*", "{rest}")
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

var (
	str     = map[string]any{"type": "string"}
	dt      = map[string]any{"type": "string", "format": "date-time"}
	dtNull  = map[string]any{"type": []string{"string", "null"}, "format": "date-time"}
	i64     = map[string]any{"type": "integer", "format": "int64"}
	boolean = map[string]any{"type": "boolean"}
	roleEnm = map[string]any{"type": "string", "enum": []string{"owner", "admin", "member"}}
)

func obj(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

var schemas = map[string]any{
	"Health":        obj(map[string]any{"ok": boolean, "database": boolean, "version": str}, "ok"),
	"Detail":        obj(map[string]any{"detail": str}, "detail"),
	"FieldErrors":   map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "array", "items": str}},
	"LegacyPath":    obj(map[string]any{"detail": str, "legacy_path": str, "new_path": str}, "detail", "legacy_path", "new_path"),
	"Org":           obj(map[string]any{"id": i64, "name": str, "role": map[string]any{"type": []string{"string", "null"}, "enum": []any{"owner", "admin", "member", nil}}, "created_at": dt, "updated_at": dt}),
	"OrgInput":      obj(map[string]any{"name": map[string]any{"type": "string", "minLength": 1, "maxLength": 120}}, "name"),
	"Member":        obj(map[string]any{"id": i64, "email": str, "first_name": str, "last_name": str, "role": roleEnm, "has_passkey": boolean, "created_at": dt}),
	"RoleInput":     obj(map[string]any{"role": map[string]any{"type": "string", "enum": []string{"admin", "member"}}}, "role"),
	"Webhook":       obj(map[string]any{"url": str, "secret": str, "created_at": dt, "updated_at": dt}),
	"WebhookInput":  obj(map[string]any{"url": map[string]any{"type": "string", "format": "uri", "maxLength": 2048}}, "url"),
	"APIKey":        obj(map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}, "name": str, "key_prefix": str, "is_active": boolean, "created_at": dt, "last_used_at": dtNull, "revoked_at": dtNull}),
	"APIKeyCreated": map[string]any{"allOf": []any{ref("APIKey"), obj(map[string]any{"key": map[string]any{"type": "string", "description": "the raw key, shown once"}}, "key")}},
	"APIKeyInput":   obj(map[string]any{"name": map[string]any{"type": "string", "minLength": 1, "maxLength": 120, "default": "Default key"}}),
	"Invite": obj(map[string]any{"id": map[string]any{"type": "string", "format": "uuid"}, "org_id": i64, "org_name": str, "email": str,
		"role": map[string]any{"type": "string", "enum": []string{"admin", "member"}}, "status": map[string]any{"type": "string", "enum": []string{"pending", "accepted", "revoked", "expired"}},
		"created_at": dt, "expires_at": dt, "accepted_at": dtNull, "revoked_at": dtNull}),
	"InviteCreated": map[string]any{"allOf": []any{ref("Invite"), obj(map[string]any{"token": str, "invite_url": str}, "token", "invite_url")}},
	"InviteInput":   obj(map[string]any{"email": map[string]any{"type": "string", "format": "email"}, "role": map[string]any{"type": "string", "enum": []string{"admin", "member"}, "default": "member"}}, "email"),
}

// openapi builds the OpenAPI 3.1 document from the route table.
func (s *Server) openapi() map[string]any {
	paths := map[string]any{}
	for _, r := range s.routes {
		p := openapiPath(r.path)
		item, _ := paths[p].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[p] = item
		}
		op := map[string]any{"summary": r.summary, "tags": []string{r.tag}, "operationId": strings.ToLower(r.method) + strings.NewReplacer("/", "_", ":", "", "*", "rest", "-", "_").Replace(r.path)}
		var params []any
		for _, m := range paramRe.FindAllStringSubmatch(r.path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": str})
		}
		for _, q := range r.query {
			params = append(params, map[string]any{"name": q, "in": "query", "required": true, "schema": str})
		}
		if strings.Contains(r.path, "*") {
			params = append(params, map[string]any{"name": "rest", "in": "path", "required": true, "schema": str})
		}
		if params != nil {
			op["parameters"] = params
		}
		if r.auth != authNone {
			op["security"] = []any{map[string]any{"apiKey": []string{}}, map[string]any{"personalToken": []string{}, "serviceOrg": []string{}}}
		} else {
			op["security"] = []any{}
		}
		if r.reqSchema != "" {
			content := map[string]any{"application/json": map[string]any{"schema": ref(r.reqSchema)}}
			if r.streamBody { // uploads: files as multipart parts
				bin := map[string]any{"type": "string", "format": "binary"}
				content["multipart/form-data"] = map[string]any{"schema": obj(map[string]any{"files[]": map[string]any{"type": "array", "items": bin}, "file": bin, "name": str})}
			}
			op["requestBody"] = map[string]any{"required": true, "content": content}
		}
		res := map[string]any{}
		ok := map[string]any{"description": http.StatusText(r.resStatus)}
		if r.resSchema != "" {
			sc := ref(r.resSchema)
			if r.resList {
				sc = map[string]any{"type": "array", "items": sc}
			}
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": sc}}
		}
		if r.resStatus == http.StatusGone {
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": ref("LegacyPath")}}
		}
		res[strconv.Itoa(r.resStatus)] = ok
		errs := r.errors
		if r.auth != authNone {
			errs = append([]int{401}, errs...)
		}
		for _, code := range errs {
			sc := ref("Detail")
			switch {
			case code == 400 && r.resSchema == "JSONRPCResponse":
				// /v1/mcp: protocol errors are JSON-RPC error bodies.
				sc = ref("JSONRPCResponse")
			case code == 400:
				sc = map[string]any{"oneOf": []any{ref("Detail"), ref("FieldErrors")}}
			case r.paymentErrors && (code == 402 || code == 422 || code == 502 || code == 503):
				sc = map[string]any{"oneOf": []any{ref("PaymentError"), ref("Detail")}}
			}
			res[strconv.Itoa(code)] = map[string]any{"description": http.StatusText(code), "content": map[string]any{"application/json": map[string]any{"schema": sc}}}
		}
		op["responses"] = res
		item[strings.ToLower(r.method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": "voiced API", "version": "v1", "description": "Self-hostable platform for voice AI agents. See spec/api.md."},
		"servers": []any{map[string]any{"url": s.cfg.PublicURL}},
		"paths":   paths,
		"components": map[string]any{
			"schemas": allSchemas(),
			"securitySchemes": map[string]any{
				"apiKey":        map[string]any{"type": "http", "scheme": "bearer", "description": "Authorization: Bearer sk_live_..."},
				"personalToken": map[string]any{"type": "apiKey", "in": "header", "name": "Authorization", "description": "Authorization: Token <personal token>"},
				"serviceOrg":    map[string]any{"type": "apiKey", "in": "header", "name": "X-Service-Org"},
			},
		},
	}
}

func (s *Server) openapiHandler(c fiber.Ctx) error {
	b, err := json.Marshal(s.openapi())
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(b)
}
