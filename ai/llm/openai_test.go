package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
)

// sseServer serves a recorded event stream from testdata, cut into random
// pieces with a flush after each so that events and lines arrive split
// across reads, and records the request it got.
func sseServer(t *testing.T, file string, got *map[string]any) *httptest.Server {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if got != nil {
			req := map[string]any{}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			req["authorization"] = r.Header.Get("Authorization")
			*got = req
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		rng := rand.New(rand.NewPCG(1, 2))
		for b := body; len(b) > 0; {
			n := min(len(b), 1+rng.IntN(90))
			_, _ = w.Write(b[:n])
			w.(http.Flusher).Flush()
			b = b[n:]
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newClient(t *testing.T, base string) *llm.OpenAI {
	t.Helper()
	c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: base + "/v1/", APIKey: "sk-test", Model: "gpt-4o-mini"})
	require.NoError(t, err)
	return c
}

// drain reads a stream to io.EOF.
func drain(t *testing.T, s llm.Stream) []llm.Chunk {
	t.Helper()
	var out []llm.Chunk
	for {
		c, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, c)
	}
}

func TestOpenAIStreamsText(t *testing.T) {
	var got map[string]any
	srv := sseServer(t, "openai_text.sse", &got)
	temp := 0.3
	s, err := newClient(t, srv.URL).Stream(context.Background(), llm.Request{
		Messages:    []llm.Message{{Role: llm.RoleSystem, Content: "Be brief."}, {Role: llm.RoleUser, Content: "Hi"}},
		Temperature: &temp,
		MaxTokens:   64,
	})
	require.NoError(t, err)
	defer s.Close()
	chunks := drain(t, s)

	var text strings.Builder
	for _, c := range chunks[:len(chunks)-1] {
		require.NotEmpty(t, c.Text, "only text deltas before the last chunk")
		require.Empty(t, c.FinishReason)
		text.WriteString(c.Text)
	}
	require.Equal(t, "Hello! How can I help you today?", text.String())
	last := chunks[len(chunks)-1]
	require.Equal(t, "stop", last.FinishReason)
	require.Equal(t, &llm.Usage{PromptTokens: 19, CompletionTokens: 10, TotalTokens: 29}, last.Usage)
	_, err = s.Recv()
	require.ErrorIs(t, err, io.EOF, "EOF stays")

	require.Equal(t, "gpt-4o-mini", got["model"])
	require.Equal(t, true, got["stream"])
	require.Equal(t, map[string]any{"include_usage": true}, got["stream_options"])
	require.InDelta(t, 0.3, got["temperature"], 1e-9)
	require.InDelta(t, 64, got["max_tokens"], 0)
	require.Equal(t, "Bearer sk-test", got["authorization"])
	require.Equal(t, []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "user", "content": "Hi"},
	}, got["messages"])
	require.NotContains(t, got, "tools")
}

func TestOpenAIAssemblesToolCalls(t *testing.T) {
	var got map[string]any
	srv := sseServer(t, "openai_tools.sse", &got)
	params := json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`)
	s, err := newClient(t, srv.URL).Stream(context.Background(), llm.Request{
		Model: "gpt-4.1",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "Weather in Paris, and the time?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"q":"x"}`}}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: `{"ok":true}`},
		},
		Tools: []llm.Tool{{Name: "get_weather", Description: "Current weather", Parameters: params}, {Name: "get_time"}},
	})
	require.NoError(t, err)
	defer s.Close()
	chunks := drain(t, s)
	require.Len(t, chunks, 3)
	require.Equal(t, &llm.ToolCall{ID: "call_DdmO9pD3xa9XTPNJ32zg2hcA", Name: "get_weather", Arguments: `{"location": "Paris, France"}`}, chunks[0].ToolCall)
	require.Equal(t, &llm.ToolCall{ID: "call_7BQ1Yk3LJ8kWcs0Yt4Fp1nDz", Name: "get_time", Arguments: `{"tz": "Europe/Paris"}`}, chunks[1].ToolCall)
	require.True(t, json.Valid([]byte(chunks[0].ToolCall.Arguments)))
	require.Equal(t, "tool_calls", chunks[2].FinishReason)
	require.Equal(t, 129, chunks[2].Usage.TotalTokens)

	require.Equal(t, "gpt-4.1", got["model"], "the request's model wins")
	require.Equal(t, []any{
		map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Current weather",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}, "required": []any{"location"}}}},
		map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}},
	}, got["tools"])
	msgs := got["messages"].([]any)
	require.Equal(t, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
		map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "lookup", "arguments": `{"q":"x"}`}},
	}}, msgs[1])
	require.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"ok":true}`}, msgs[2])
}

func TestOtherServers(t *testing.T) {
	t.Run("ollama", func(t *testing.T) {
		s, err := newClient(t, sseServer(t, "ollama_tools.sse", nil).URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "bye"}}})
		require.NoError(t, err)
		defer s.Close()
		chunks := drain(t, s)
		require.Len(t, chunks, 2)
		require.Equal(t, &llm.ToolCall{ID: "call_k1y7ab2q", Name: "end_call", Arguments: `{"reason":"caller said goodbye"}`}, chunks[0].ToolCall)
		require.Equal(t, llm.Chunk{FinishReason: "tool_calls"}, chunks[1])
	})
	t.Run("llama.cpp", func(t *testing.T) {
		s, err := newClient(t, sseServer(t, "llamacpp_text.sse", nil).URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
		require.NoError(t, err)
		defer s.Close()
		chunks := drain(t, s)
		require.Equal(t, []llm.Chunk{{Text: "Sure"}, {Text: ", one moment."},
			{FinishReason: "length", Usage: &llm.Usage{PromptTokens: 25, CompletionTokens: 4, TotalTokens: 29}}}, chunks)
	})
}

// rawServer answers every request with status and body, as given.
func rawServer(t *testing.T, status int, contentType, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestOpenAIErrors(t *testing.T) {
	user := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	for _, tc := range []struct {
		name, ctype, body string
		status            int
		want              error
		message, code     string
	}{
		{"openai bad key", "application/json", `{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			401, llm.ErrUnauthorized, "Incorrect API key provided", "invalid_api_key"},
		{"openai quota", "application/json", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			429, llm.ErrRateLimited, "exceeded your current quota", "insufficient_quota"},
		{"ollama unknown model", "application/json", `{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`,
			404, llm.ErrBadRequest, `model "llama9" not found`, ""},
		{"vllm", "application/json", `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`,
			400, llm.ErrBadRequest, "maximum context length", "400"},
		{"old ollama", "application/json", `{"error":"llama runner process has terminated"}`,
			500, llm.ErrServer, "llama runner process has terminated", ""},
		{"proxy", "text/html", "<html><body>502 Bad Gateway</body></html>\n",
			502, llm.ErrServer, "502 Bad Gateway", ""},
		{"empty", "text/plain", "", 503, llm.ErrServer, "Service Unavailable", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := rawServer(t, tc.status, tc.ctype, tc.body)
			s, err := newClient(t, srv.URL).Stream(context.Background(), user)
			require.Nil(t, s)
			require.ErrorIs(t, err, tc.want)
			var ae *llm.APIError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, tc.status, ae.StatusCode)
			require.Contains(t, ae.Message, tc.message)
			require.Equal(t, tc.code, ae.Code)
			require.Contains(t, err.Error(), tc.message)
		})
	}

	t.Run("error event mid-stream", func(t *testing.T) {
		srv := rawServer(t, 200, "text/event-stream",
			`data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Par"},"finish_reason":null}]}`+"\n\n"+
				`data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`+"\n\n")
		s, err := newClient(t, srv.URL).Stream(context.Background(), user)
		require.NoError(t, err)
		defer s.Close()
		c, err := s.Recv()
		require.NoError(t, err)
		require.Equal(t, "Par", c.Text)
		_, err = s.Recv()
		require.ErrorIs(t, err, llm.ErrServer)
		require.ErrorContains(t, err, "had an error while processing")
		_, err = s.Recv()
		require.ErrorIs(t, err, llm.ErrServer, "the error stays")
	})
	t.Run("cut before finish", func(t *testing.T) {
		srv := rawServer(t, 200, "text/event-stream",
			`data: {"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`+"\n\n"+
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{"}}]},"finish_reason":null}]}`+"\n\n")
		s, err := newClient(t, srv.URL).Stream(context.Background(), user)
		require.NoError(t, err)
		defer s.Close()
		c, err := s.Recv()
		require.NoError(t, err)
		require.Equal(t, "Hel", c.Text)
		_, err = s.Recv()
		require.ErrorIs(t, err, llm.ErrTruncated, "a half call is not emitted")
	})
	t.Run("not json", func(t *testing.T) {
		srv := rawServer(t, 200, "text/event-stream", "data: {\"choices\":[\n\n")
		s, err := newClient(t, srv.URL).Stream(context.Background(), user)
		require.NoError(t, err)
		defer s.Close()
		_, err = s.Recv()
		require.ErrorIs(t, err, llm.ErrMalformed)
	})
	t.Run("last event without blank line", func(t *testing.T) {
		srv := rawServer(t, 200, "text/event-stream",
			`data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]")
		s, err := newClient(t, srv.URL).Stream(context.Background(), user)
		require.NoError(t, err)
		require.Equal(t, []llm.Chunk{{Text: "ok"}, {FinishReason: "stop"}}, drain(t, s))
	})
	t.Run("no messages", func(t *testing.T) {
		_, err := newClient(t, "http://127.0.0.1:1").Stream(context.Background(), llm.Request{})
		require.ErrorIs(t, err, llm.ErrNoMessages)
	})
	t.Run("bad config", func(t *testing.T) {
		_, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "localhost:11434"})
		require.Error(t, err)
		_, err = llm.NewOpenAI(llm.OpenAIConfig{Timeout: -time.Second})
		require.Error(t, err)
		c, err := llm.NewOpenAI(llm.OpenAIConfig{})
		require.NoError(t, err)
		require.Equal(t, "gpt-4o-mini", c.Model())
	})
}

// heldServer sends one text event, then holds the stream open until the
// request's context ends (the client went away) or release is closed, and
// reports on gone when the handler saw the client leave.
func heldServer(t *testing.T, release <-chan struct{}) (srv *httptest.Server, gone <-chan struct{}) {
	g := make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"first"},"finish_reason":null}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(g)
		case <-release:
			_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":" second"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv, g
}

func TestOpenAIStreamsBeforeTheAnswerEnds(t *testing.T) {
	release := make(chan struct{})
	srv, _ := heldServer(t, release)
	s, err := newClient(t, srv.URL).Stream(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	require.NoError(t, err)
	defer s.Close()
	c, err := s.Recv() // the server is still holding the rest
	require.NoError(t, err)
	require.Equal(t, "first", c.Text)
	close(release)
	require.Equal(t, []llm.Chunk{{Text: " second"}, {FinishReason: "stop"}}, drain(t, s))
}

func TestOpenAICancellation(t *testing.T) {
	user := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	t.Run("context", func(t *testing.T) {
		srv, gone := heldServer(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		s, err := newClient(t, srv.URL).Stream(ctx, user)
		require.NoError(t, err)
		defer s.Close()
		_, err = s.Recv()
		require.NoError(t, err)
		time.AfterFunc(20*time.Millisecond, cancel)
		start := time.Now()
		_, err = s.Recv()
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, time.Since(start), 2*time.Second)
		select {
		case <-gone:
		case <-time.After(5 * time.Second):
			t.Fatal("the server never saw the connection close")
		}
	})
	t.Run("close from another goroutine", func(t *testing.T) {
		srv, gone := heldServer(t, nil)
		s, err := newClient(t, srv.URL).Stream(context.Background(), user)
		require.NoError(t, err)
		_, err = s.Recv()
		require.NoError(t, err)
		time.AfterFunc(20*time.Millisecond, func() { _ = s.Close() })
		_, err = s.Recv()
		require.ErrorIs(t, err, llm.ErrClosed)
		require.NoError(t, s.Close(), "Close is idempotent")
		select {
		case <-gone:
		case <-time.After(5 * time.Second):
			t.Fatal("the server never saw the connection close")
		}
	})
	t.Run("timeout waiting for headers", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // the server watches the connection once the body is read
			<-r.Context().Done()
		}))
		t.Cleanup(srv.Close)
		c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL, Timeout: 50 * time.Millisecond})
		require.NoError(t, err)
		_, err = c.Stream(context.Background(), user)
		require.ErrorIs(t, err, llm.ErrTimeout)
	})
	t.Run("canceled before headers", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // the server watches the connection once the body is read
			<-r.Context().Done()
		}))
		t.Cleanup(srv.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := newClient(t, srv.URL).Stream(ctx, user)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}
