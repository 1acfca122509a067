package control_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestOpenAPICoversEveryRoute fails when a route the router serves is
// missing from /v1/openapi.json, e.g. one registered with app.Get directly
// instead of through the route table.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	a := controltest.New(t, sqltest.New(t, migrations.SQLite))
	r := a.Do("GET", "/v1/openapi.json", "", nil)
	require.Equal(t, 200, r.Status)
	doc := r.Obj(t)
	require.Equal(t, "3.1.0", doc["openapi"])
	paths := doc["paths"].(map[string]any)
	param := regexp.MustCompile(`:([A-Za-z_]+)`)
	n := 0
	for _, rt := range a.Srv.App().GetRoutes(true) {
		if rt.Method == "HEAD" || rt.Method == "USE" {
			continue
		}
		p := strings.ReplaceAll(param.ReplaceAllString(rt.Path, "{$1}"), "*", "{rest}")
		item, ok := paths[p].(map[string]any)
		require.True(t, ok, "route %s %s is not in the OpenAPI document", rt.Method, rt.Path)
		op, ok := item[strings.ToLower(rt.Method)].(map[string]any)
		require.True(t, ok, "route %s %s is not in the OpenAPI document", rt.Method, rt.Path)
		require.NotEmpty(t, op["summary"])
		require.NotEmpty(t, op["responses"])
		n++
	}
	require.Greater(t, n, 20)
	// And every documented schema reference resolves.
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	refs := regexp.MustCompile(`#/components/schemas/([A-Za-z]+)`).FindAllStringSubmatch(string(r.Body), -1)
	require.NotEmpty(t, refs)
	for _, m := range refs {
		require.Contains(t, schemas, m[1])
	}
}

func TestOpenAPIUploadsAreMultipart(t *testing.T) {
	a := controltest.New(t, sqltest.New(t, migrations.SQLite))
	doc := a.Do("GET", "/v1/openapi.json", "", nil).Obj(t)
	post := doc["paths"].(map[string]any)["/v1/knowledge/documents"].(map[string]any)["post"].(map[string]any)
	content := post["requestBody"].(map[string]any)["content"].(map[string]any)
	require.Contains(t, content, "multipart/form-data")
	require.Contains(t, content, "application/json")
	get := doc["paths"].(map[string]any)["/v1/knowledge/documents"].(map[string]any)["get"].(map[string]any)
	require.NotContains(t, get, "requestBody")
}

// TestOpenAPIAgentKnowledge: the agent schema documents its knowledge
// fields, the retrieve-before-reply option among them, live and draft.
func TestOpenAPIAgentKnowledge(t *testing.T) {
	a := controltest.New(t, sqltest.New(t, migrations.SQLite))
	doc := a.Do("GET", "/v1/openapi.json", "", nil).Obj(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, s := range []string{"Agent", "AgentInput"} {
		props := schemas[s].(map[string]any)["properties"].(map[string]any)
		for _, f := range []string{"knowledge_retrieve_before_reply", "draft_knowledge_retrieve_before_reply"} {
			p := props[f].(map[string]any)
			require.Equal(t, "boolean", p["type"], s+"."+f)
			require.Contains(t, p["description"], "before each answer", s+"."+f)
		}
		require.Contains(t, props["knowledge_base_ids"].(map[string]any)["description"], "search_knowledge_base")
	}
}
