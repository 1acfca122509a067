package drive_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai"
	"github.com/voiced/voiced/ai/drive"
)

// fail answers a Drive API error body.
func fail(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":"m","errors":[{"domain":"global","reason":%q,"message":"m"}]}}`, code, reason)
}

func TestClient(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer tok" {
			fail(w, 401, "authError")
			return
		}
		switch r.URL.Path + "?" + r.URL.RawQuery {
		case "/drive/v3/files/f1?fields=id%2Cname%2CmimeType%2Csize&supportsAllDrives=true":
			fmt.Fprint(w, `{"id":"f1","name":"guide.pdf","mimeType":"application/pdf","size":"1234"}`)
		case "/drive/v3/files/f1?alt=media&supportsAllDrives=true":
			fmt.Fprint(w, "%PDF-1.4 bytes")
		case "/drive/v3/files/d1/export?mimeType=text%2Fplain":
			fmt.Fprint(w, "Doc text")
		case "/drive/v3/files/big/export?mimeType=text%2Fplain":
			fail(w, 403, "exportSizeLimitExceeded")
		case "/drive/v3/files/busy?fields=id%2Cname%2CmimeType%2Csize&supportsAllDrives=true":
			fail(w, 403, "userRateLimitExceeded")
		case "/drive/v3/files/locked?fields=id%2Cname%2CmimeType%2Csize&supportsAllDrives=true":
			fail(w, 403, "insufficientFilePermissions")
		case "/drive/v3/files/down?fields=id%2Cname%2CmimeType%2Csize&supportsAllDrives=true":
			fail(w, 500, "backendError")
		default:
			fail(w, 404, "notFound")
		}
	}))
	defer srv.Close()
	c, err := drive.New(drive.Config{BaseURL: srv.URL + "/drive/v3/"})
	require.NoError(t, err)
	ctx := context.Background()

	f, err := c.Get(ctx, "tok", "f1")
	require.NoError(t, err)
	require.Equal(t, drive.File{ID: "f1", Name: "guide.pdf", MimeType: "application/pdf", Size: 1234}, f)
	body, err := c.Download(ctx, "tok", "f1")
	require.NoError(t, err)
	b, _ := io.ReadAll(body)
	body.Close()
	require.Equal(t, "%PDF-1.4 bytes", string(b))
	body, err = c.Export(ctx, "tok", "d1", "text/plain")
	require.NoError(t, err)
	b, _ = io.ReadAll(body)
	body.Close()
	require.Equal(t, "Doc text", string(b))

	for _, tc := range []struct {
		name, token, id string
		want            error
	}{
		{"refused token", "old", "f1", ai.ErrUnauthorized},
		{"no permission", "tok", "locked", ai.ErrUnauthorized},
		{"missing file", "tok", "nope", drive.ErrNotFound},
		{"rate limited", "tok", "busy", ai.ErrRateLimited},
		{"drive failing", "tok", "down", ai.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Get(ctx, tc.token, tc.id)
			require.ErrorIs(t, err, tc.want)
		})
	}
	_, err = c.Export(ctx, "tok", "big", "text/plain")
	require.ErrorIs(t, err, drive.ErrTooLarge)

	n := calls.Load()
	_, err = c.Get(ctx, " ", "f1")
	require.ErrorIs(t, err, ai.ErrUnauthorized)
	require.Equal(t, n, calls.Load(), "no request without a token")

	_, err = drive.New(drive.Config{BaseURL: "www.googleapis.com"})
	require.Error(t, err)
}
