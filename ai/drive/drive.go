// Package drive reads files from Google Drive with a user's short-lived
// OAuth access token, through the Drive API v3's file shapes: files.get
// for metadata (GET {base}/files/{id}?fields=...), files.export for
// Google Docs and Sheets (GET {base}/files/{id}/export?mimeType=...) and
// alt=media downloads for every other file (GET {base}/files/{id}?alt=media).
//
// Errors wrap package ai's taxonomy: a refused token is ai.ErrUnauthorized,
// a missing file ErrNotFound, a file Drive will not export because it is
// too large ErrTooLarge, Drive's own failures ai.ErrUnavailable. A Client
// is safe for concurrent use.
package drive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/voiced/voiced/ai"
)

// Google Drive's own MIME types, which have no bytes of their own and are
// exported.
const (
	MimeDoc   = "application/vnd.google-apps.document"
	MimeSheet = "application/vnd.google-apps.spreadsheet"
)

var (
	// ErrNotFound means Drive has no such file, or not one the token's
	// user may read.
	ErrNotFound = errors.New("drive: file not found")
	// ErrTooLarge means Drive refused to export a file for its size.
	ErrTooLarge = errors.New("drive: file too large to export")
)

// Config configures a Client. Zero values mean defaults.
type Config struct {
	// BaseURL is the Drive API root; default https://www.googleapis.com/drive/v3.
	BaseURL string
	// HTTPClient sends the requests; default a client on
	// http.DefaultTransport.
	HTTPClient *http.Client
	// Timeout bounds one metadata request; a download is bounded by its
	// context. Default 15 s.
	Timeout time.Duration
}

// Client calls the Drive API.
type Client struct {
	cfg Config
}

// New returns a client for cfg; it fails if BaseURL is not an absolute
// http(s) URL.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://www.googleapis.com/drive/v3"
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("drive: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 15 * time.Second
	}
	return &Client{cfg: cfg}, nil
}

// File is a Drive file's metadata.
type File struct {
	ID, Name, MimeType string
	// Size is the file's bytes; 0 for Google Docs and Sheets, which have
	// none until exported.
	Size int64
}

// Get returns a file's metadata (files.get).
func (c *Client) Get(ctx context.Context, token, id string) (File, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.cfg.Timeout, ai.ErrTimeout)
	defer cancel()
	q := url.Values{"fields": {"id,name,mimeType,size"}, "supportsAllDrives": {"true"}}
	res, err := c.do(ctx, token, "/files/"+url.PathEscape(id), q)
	if err != nil {
		return File{}, err
	}
	defer res.Body.Close()
	var m struct {
		ID, Name, MimeType string
		Size               string `json:"size"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&m); err != nil {
		return File{}, fmt.Errorf("drive: files.get %s: %w: %w", id, ai.ErrMalformed, err)
	}
	f := File{ID: m.ID, Name: m.Name, MimeType: m.MimeType}
	if m.Size != "" {
		if f.Size, err = strconv.ParseInt(m.Size, 10, 64); err != nil {
			return File{}, fmt.Errorf("drive: files.get %s: %w: size %q", id, ai.ErrMalformed, m.Size)
		}
	}
	return f, nil
}

// Export streams a Google Doc or Sheet converted to mimeType
// (files.export). The caller closes the body.
func (c *Client) Export(ctx context.Context, token, id, mimeType string) (io.ReadCloser, error) {
	res, err := c.do(ctx, token, "/files/"+url.PathEscape(id)+"/export", url.Values{"mimeType": {mimeType}})
	if err != nil {
		return nil, err
	}
	return res.Body, nil
}

// Download streams a file's bytes (alt=media). The caller closes the body.
func (c *Client) Download(ctx context.Context, token, id string) (io.ReadCloser, error) {
	res, err := c.do(ctx, token, "/files/"+url.PathEscape(id), url.Values{"alt": {"media"}, "supportsAllDrives": {"true"}})
	if err != nil {
		return nil, err
	}
	return res.Body, nil
}

// do sends an authorized GET and returns a 2xx response, or the error
// the status means.
func (c *Client) do(ctx context.Context, token, path string, q url.Values) (*http.Response, error) {
	if strings.TrimSpace(token) == "" {
		return nil, fmt.Errorf("drive: %w: no access token", ai.ErrUnauthorized)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.BaseURL+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("drive: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ai.ErrTimeout) {
			return nil, fmt.Errorf("drive: GET %s: %w", path, ai.ErrTimeout)
		}
		return nil, fmt.Errorf("drive: GET %s: %w: %w", path, ai.ErrUnavailable, err)
	}
	if res.StatusCode/100 == 2 {
		return res, nil
	}
	defer res.Body.Close()
	return nil, apiError(res)
}

// apiError reads Drive's error body ({"error": {"code", "message",
// "errors": [{"reason"}]}}).
func apiError(res *http.Response) error {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Errors  []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(res.Body, 64<<10)).Decode(&body)
	ae := &ai.APIError{Service: "drive", StatusCode: res.StatusCode, Message: body.Error.Message}
	if len(body.Error.Errors) > 0 {
		ae.Code = body.Error.Errors[0].Reason
	}
	if ae.Message == "" {
		ae.Message = http.StatusText(res.StatusCode)
	}
	switch {
	case res.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %w", ErrNotFound, ae)
	case ae.Code == "exportSizeLimitExceeded":
		return fmt.Errorf("%w: %w", ErrTooLarge, ae)
	case res.StatusCode == http.StatusForbidden && ae.Code != "" && ae.Code != "insufficientPermissions" && ae.Code != "authError" &&
		ae.Code != "insufficientFilePermissions" && ae.Code != "appNotAuthorizedToFile":
		// 403 for quota and rate limits (userRateLimitExceeded, ...).
		return &rateLimited{ae}
	}
	return ae
}

// rateLimited is a Drive 403 that means a quota, not a refusal.
type rateLimited struct{ *ai.APIError }

func (e *rateLimited) Unwrap() error { return ai.ErrRateLimited }
