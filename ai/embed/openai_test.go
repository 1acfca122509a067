package embed_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai"
	"github.com/voiced/voiced/ai/embed"
)

// embeddingsServer answers POST /v1/embeddings with status and body and
// records the request.
func embeddingsServer(t *testing.T, status int, body string, got *map[string]any) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		req := map[string]any{}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req["authorization"] = r.Header.Get("Authorization")
		if got != nil {
			*got = req
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestOpenAIEmbed(t *testing.T) {
	var got map[string]any
	// Out of order, as the protocol allows; the second vector base64, as
	// servers send it when asked for encoding_format "base64" (1.0, -0.5).
	srv := embeddingsServer(t, 200, `{"object":"list","model":"text-embedding-3-small","data":[`+
		`{"object":"embedding","index":1,"embedding":"AACAPwAAAL8="},`+
		`{"object":"embedding","index":0,"embedding":[0.25,-0.125]}],"usage":{"prompt_tokens":5,"total_tokens":5}}`, &got)
	c, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL + "/v1/", APIKey: "sk-test", Dimensions: 2})
	require.NoError(t, err)
	vecs, err := c.Embed(context.Background(), []string{"opening hours", "refund policy"})
	require.NoError(t, err)
	require.Equal(t, [][]float32{{0.25, -0.125}, {1, -0.5}}, vecs)
	require.Equal(t, map[string]any{
		"model": "text-embedding-3-small", "input": []any{"opening hours", "refund policy"}, "dimensions": 2.0,
		"authorization": "Bearer sk-test",
	}, got)
}

func TestOpenAIEmbedErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"unknown model", 404, `{"error":{"message":"model \"nomic\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`, ai.ErrBadRequest},
		{"bad key", 401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`, ai.ErrUnauthorized},
		{"missing vector", 200, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1]}]}`, ai.ErrMalformed},
		{"not json", 200, `Hello`, ai.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: embeddingsServer(t, tc.status, tc.body, nil).URL + "/v1"})
			require.NoError(t, err)
			_, err = c.Embed(context.Background(), []string{"a", "b"})
			require.ErrorIs(t, err, tc.want)
		})
	}
	c, err := embed.NewOpenAI(embed.OpenAIConfig{})
	require.NoError(t, err)
	_, err = c.Embed(context.Background(), nil)
	require.ErrorIs(t, err, embed.ErrNoInput)
	_, err = c.Embed(context.Background(), []string{"a", ""})
	require.ErrorIs(t, err, embed.ErrNoInput)
	_, err = embed.NewOpenAI(embed.OpenAIConfig{BaseURL: "localhost:11434"})
	require.Error(t, err)
}
