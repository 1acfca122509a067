package webhook_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/webhook"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		in, want, msg string
	}{
		{"https://hooks.example/a#frag", "https://hooks.example/a", ""},
		{"  http://localhost:9000/h ", "http://localhost:9000/h", ""},
		{"http://127.0.0.1/h", "http://127.0.0.1/h", ""},
		// Numeric hosts are read as a browser reads them.
		{"https://2130706433/", "https://127.0.0.1/", ""},
		{"https://0177.0.0.1/", "https://127.0.0.1/", ""},
		{"https://127.1/", "https://127.0.0.1/", ""},
		{"https://0x7f.0.0.1:8443/x", "https://127.0.0.1:8443/x", ""},
		{"https://0x0A000001/", "https://10.0.0.1/", ""},
		{"https://134744072./", "https://8.8.8.8/", ""},
		{"http://2130706433/h", "http://127.0.0.1/h", ""},
		{"https://1.2.3.999/", "", "Enter a valid URL."},
		{"https://1.2.3.4.5/", "", "Enter a valid URL."},
		{"https://08.0.0.1/", "", "Enter a valid URL."}, // 8 is no octal digit
		{"https://4294967296/", "", "Enter a valid URL."},
		// A label that is not a number keeps the host a name.
		{"https://1.2.3.example/", "https://1.2.3.example/", ""},
		{"", "", "This field may not be blank."},
		{"https://user:pw@hooks.example/", "", "The URL must not contain credentials."},
		{"https://user@hooks.example/", "", "The URL must not contain credentials."},
		{"http://hooks.example/", "", "The URL must use https (http is allowed only for localhost or 127.0.0.1)."},
		{"http://[::1]:8080/", "", "The URL must use https (http is allowed only for localhost or 127.0.0.1)."},
		{"http://10.0.0.1/", "", "The URL must use https (http is allowed only for localhost or 127.0.0.1)."},
		{"ftp://hooks.example/", "", "Enter a valid URL."},
		{"not a url", "", "Enter a valid URL."},
		{"https://", "", "Enter a valid URL."},
	} {
		got, msg := webhook.CheckURL(tc.in)
		require.Equal(t, tc.msg, msg, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
}
