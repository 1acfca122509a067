package oai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai"
)

// server answers every request with status and body and counts requests
// and the Authorization headers it saw.
func server(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32, *atomic.Value) {
	var n atomic.Int32
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		auth.Store(r.Header.Get("Authorization"))
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n, &auth
}

func models(t *testing.T, c Config) error {
	t.Helper()
	opts, err := Options(c)
	require.NoError(t, err)
	var res *http.Response
	svc := openai.NewModelService(opts...)
	_, err = svc.Get(context.Background(), "m", option.WithResponseInto(&res))
	if ae := HTTPError(c.Service, res, err); ae != nil {
		return ae
	}
	return err
}

func TestOptionsIgnoreTheEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	srv, n, auth := server(t, 200, `{"id":"m","object":"model","created":1,"owned_by":"me"}`)
	require.NoError(t, models(t, Config{Service: "llm", BaseURL: srv.URL + "/v1"}))
	require.EqualValues(t, 1, n.Load(), "plain http to the configured URL")
	require.Empty(t, auth.Load(), "no key configured, none sent")
	require.NoError(t, models(t, Config{Service: "llm", BaseURL: srv.URL + "/v1", APIKey: "sk-test"}))
	require.Equal(t, "Bearer sk-test", auth.Load())
}

func TestRetries(t *testing.T) {
	srv, n, _ := server(t, 503, `{"error":{"message":"overloaded","type":"server_error","code":null}}`)
	err := models(t, Config{Service: "llm", BaseURL: srv.URL})
	require.ErrorIs(t, err, ai.ErrUnavailable)
	require.EqualValues(t, 1, n.Load(), "MaxRetries 0 sends once")
	n.Store(0)
	err = models(t, Config{Service: "stt", BaseURL: srv.URL, MaxRetries: 1})
	require.ErrorIs(t, err, ai.ErrUnavailable)
	require.EqualValues(t, 2, n.Load())
}

func TestHTTPError(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   error
		msg    string
	}{
		{401, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`, ai.ErrUnauthorized, "bad key"},
		{429, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, ai.ErrRateLimited, "slow down"},
		// openai-go cannot decode this one into its *openai.Error.
		{500, `{"error":"llama runner process has terminated"}`, ai.ErrUnavailable, "llama runner"},
		{422, `{"detail":"no audio"}`, ai.ErrBadRequest, "no audio"},
	} {
		srv, _, _ := server(t, tc.status, tc.body)
		err := models(t, Config{Service: "embed", BaseURL: srv.URL})
		require.ErrorIs(t, err, tc.want)
		var ae *ai.APIError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, tc.status, ae.StatusCode)
		require.Equal(t, tc.msg, ae.Message[:len(tc.msg)])
		require.Contains(t, err.Error(), "embed: HTTP")
	}
	require.Nil(t, HTTPError("llm", nil, nil))
	_, err := Options(Config{Service: "llm", BaseURL: "localhost:11434"})
	require.ErrorContains(t, err, "llm: base URL")
}
