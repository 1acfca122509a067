package oai

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Body
	}{
		{"openai", `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`, Body{"bad key", "invalid_request_error", "invalid_api_key"}},
		{"numeric code", `{"error":{"message":"busy","type":"server_error","code":503}}`, Body{"busy", "server_error", "503"}},
		{"ollama text", `{"error":"model not found"}`, Body{Message: "model not found"}},
		{"fastapi detail", `{"detail":"no audio"}`, Body{Message: "no audio"}},
		{"vllm", `{"object":"error","message":"too long","type":"BadRequestError","code":400}`, Body{"too long", "BadRequestError", "400"}},
		{"plain text", "upstream down\nmore", Body{Message: "upstream down"}},
		{"empty", "", Body{Message: "Bad Gateway"}},
		{"long line", strings.Repeat("x", 300), Body{Message: strings.Repeat("x", 200)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Parse(502, []byte(tc.body)))
		})
	}
}
