package oai

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Body is what a server said about a failed request.
type Body struct {
	// Message is the server's explanation, the body's first line when it is
	// not one of the known shapes, or the status text.
	Message string
	// Type and Code are the server's classification when it gives one.
	Type, Code string
}

// Parse reads the error shapes of OpenAI-compatible servers:
// {"error":{"message","type","code"}} (OpenAI, Ollama, llama.cpp; code a
// string or a number), {"error":"text"} (older Ollama), {"detail":"text"}
// (FastAPI servers such as faster-whisper) and
// {"object":"error","message","type","code"} (vLLM). Anything else keeps the
// body's first line, at most 200 bytes, as the message.
func Parse(status int, body []byte) Body {
	var b Body
	var top struct {
		Error   json.RawMessage `json:"error"`
		Detail  json.RawMessage `json:"detail"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &top) == nil {
		var inner struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		var text string
		switch {
		case json.Unmarshal(top.Error, &text) == nil && text != "":
			b.Message = text
		case json.Unmarshal(top.Error, &inner) == nil && inner.Message != "":
			b.Message, b.Type, b.Code = inner.Message, inner.Type, rawCode(inner.Code)
		case json.Unmarshal(top.Detail, &text) == nil && text != "":
			b.Message = text
		case top.Message != "":
			b.Message, b.Type, b.Code = top.Message, top.Type, rawCode(top.Code)
		}
	}
	if b.Message == "" {
		line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		if len(line) > 200 {
			line = line[:200]
		}
		b.Message = line
	}
	if b.Message == "" {
		b.Message = http.StatusText(status)
	}
	return b
}

// rawCode renders a JSON string or number code as text; null is "".
func rawCode(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}
