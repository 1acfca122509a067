package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/knowledge"
	"github.com/voiced/voiced/control/webhook"
	"github.com/voiced/voiced/storage"
)

// ClientConfig is a media node's link to the control plane.
type ClientConfig struct {
	// URL is the control role's internal API base (http://host:port).
	URL string
	// Secret is the shared cluster secret.
	Secret string
	// SpoolDir is where the node's recordings are written while the call
	// runs (the node's call.Config.BlobDir); Finish uploads a call's and
	// removes it.
	SpoolDir string
	// Timeout bounds one request (default 10 s); a tool exchange has its
	// caller's deadline instead, and a blob upload 2 minutes.
	Timeout time.Duration
	// CAFile, when set, holds the PEM certificates an https URL's server
	// must chain to (else the system's roots).
	CAFile string
	// NodeID names the node in the registry; every request carries it
	// (NodeHeader), so the calls the node admits or claims are known to
	// be its own and are ended if it is lost.
	NodeID string
}

// Client is the control plane over the internal API: it implements the
// interfaces of call.Control (Admitter, Recorder, Finisher,
// ToolExchanger, TrunkLookup, Credentials, Knowledge) and mcp.Catalog.
// Safe for concurrent use; connections are kept alive and reused.
type Client struct {
	base    string
	secret  string
	node    string
	spool   string
	timeout time.Duration
	hc      *http.Client
	log     *slog.Logger
}

// NewClient checks cfg and returns its client.
func NewClient(cfg ClientConfig, log *slog.Logger) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("control URL %q: want http(s)://host:port", cfg.URL)
	}
	if cfg.Secret == "" {
		return nil, errors.New("no cluster secret")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	// Calls reuse kept-alive connections: a busy node holds up to 128
	// idle ones to the control plane.
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		pool := x509.NewCertPool()
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %q: want PEM certificates", cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &Client{base: strings.TrimRight(cfg.URL, "/") + Prefix, secret: cfg.Secret, node: cfg.NodeID, spool: cfg.SpoolDir,
		timeout: cfg.Timeout, hc: &http.Client{Transport: tr, CheckRedirect: noRedirects}, log: log}, nil
}

// noRedirects keeps the secret from following a redirect: the internal
// API never redirects, so one is a misconfiguration, reported as it is.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Close frees idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// retries are the waits before the second and third attempts of a call
// that is safe to repeat.
var retries = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond}

// do POSTs in to path and decodes the answer into out (nil: none).
// idempotent calls are retried when the request may not have reached the
// control plane or it answered 502-504; timeout 0 leaves ctx's deadline.
func (c *Client) do(ctx context.Context, path string, idempotent bool, timeout time.Duration, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	attempts := 1
	if idempotent {
		attempts += len(retries)
	}
	for i := 0; ; i++ {
		retry, err := c.once(ctx, path, timeout, body, out)
		if err == nil || !retry || i+1 >= attempts {
			return err
		}
		t := time.NewTimer(retries[i])
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// once is one attempt; retry reports whether another may help.
func (c *Client) once(ctx context.Context, path string, timeout time.Duration, body []byte, out any) (retry bool, err error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.secret)
	if c.node != "" {
		req.Header.Set(NodeHeader, c.node)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("control plane %s: %w", path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("control plane %s: %w", path, err)
	}
	switch {
	case res.StatusCode == http.StatusNoContent:
		return false, nil
	case res.StatusCode == http.StatusOK:
		if out == nil {
			return false, nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return false, fmt.Errorf("control plane %s: bad answer: %w", path, err)
		}
		return false, nil
	}
	st := res.StatusCode
	return st == http.StatusBadGateway || st == http.StatusServiceUnavailable || st == http.StatusGatewayTimeout, decodeErr(st, data)
}

// Ping checks that the control plane answers and takes the secret: a
// media node's first call, so a wrong secret or URL stops it at start.
func (c *Client) Ping(ctx context.Context) error {
	return c.do(ctx, pathPing, true, c.timeout, struct{}{}, nil)
}

// Started tells the control plane that this node (ClientConfig.NodeID)
// has just started, before it takes calls: the calls it held before a
// crash are ended. Retried: it applies once.
func (c *Client) Started(ctx context.Context) error {
	if c.node == "" {
		return errors.New("no node id")
	}
	return c.do(ctx, pathNodeStart, true, c.timeout, struct{}{}, nil)
}

// Admit implements call.Admitter. Not retried: each admission is a new
// call.
func (c *Client) Admit(ctx context.Context, r calllog.AdmitRequest) (control.Admission, error) {
	var a admission
	err := c.do(ctx, pathAdmit, false, c.timeout, r, &a)
	return a, err
}

// AdmitInline implements call.Admitter; a bad configuration comes back
// as the *api.Error with its Fields.
func (c *Client) AdmitInline(ctx context.Context, orgID int64, cfg json.RawMessage, room string) (control.Admission, error) {
	var a admission
	err := c.do(ctx, pathAdmitInline, false, c.timeout, admitInlineReq{OrgID: orgID, Config: cfg, Room: room}, &a)
	return a, err
}

// Append implements call.Recorder; event ids make a retry harmless.
func (c *Client) Append(ctx context.Context, callID int64, events []calllog.CallEvent) error {
	return c.do(ctx, pathAppend, true, c.timeout, appendReq{CallID: callID, Events: events}, nil)
}

// ToolEvent implements call.Recorder. Not retried: it emits a webhook
// event.
func (c *Client) ToolEvent(ctx context.Context, callID int64, r calllog.ToolRun) error {
	return c.do(ctx, pathToolEvent, false, c.timeout, toolEventReq{CallID: callID, Run: r}, nil)
}

// Answered implements call.Recorder: the callee of an outbound call
// answered at at. It applies once, so it is retried.
func (c *Client) Answered(ctx context.Context, callID int64, at time.Time) error {
	return c.do(ctx, pathAnswered, true, c.timeout, answeredReq{CallID: callID, At: at}, nil)
}

// Finish implements call.Finisher: the call's recording goes to the
// control plane's blob store first (and leaves the node), then the end,
// which applies once and so is retried. A recording that cannot be
// uploaded stays on the node and the call ends without it.
func (c *Client) Finish(ctx context.Context, callID int64, end calllog.CallEnd) error {
	if end.RecordingKey != "" && c.spool != "" {
		if err := c.uploadRecording(ctx, end.RecordingKey); err != nil {
			c.log.Error("recording not uploaded: the call ends without it", "call_id", callID, "key", end.RecordingKey, "err", err)
			end.RecordingKey, end.RecordingStartedAt = "", time.Time{}
		}
	}
	return c.do(ctx, pathFinish, true, c.timeout, finishReq{CallID: callID, End: end}, nil)
}

// Fail implements call.Finisher; it applies once, so it is retried.
func (c *Client) Fail(ctx context.Context, callID int64, reason, detail string) error {
	return c.do(ctx, pathFail, true, c.timeout, failReq{CallID: callID, Reason: reason, Detail: detail}, nil)
}

// Tool implements call.ToolExchanger: the exchange runs on the control
// plane (which holds the webhook's secret) within ctx's deadline. Not
// retried: the webhook may have acted.
func (c *Client) Tool(ctx context.Context, orgID int64, req webhook.ToolRequest) (webhook.ToolResponse, error) {
	var res webhook.ToolResponse
	timeout := time.Duration(0)
	if _, ok := ctx.Deadline(); !ok {
		timeout = time.Minute // never unbounded
	}
	err := c.do(ctx, pathTool, false, timeout, toolReq{OrgID: orgID, Channel: req.Channel, Request: req}, &res)
	return res, err
}

// InboundTrunk implements call.TrunkLookup.
func (c *Client) InboundTrunk(ctx context.Context, number string) (calllog.InboundTrunk, bool, error) {
	var res trunkRes
	err := c.do(ctx, pathTrunk, true, c.timeout, trunkReq{Number: number}, &res)
	return res.Trunk, res.Found, err
}

// AuthenticateAPIKey implements call.Credentials.
func (c *Client) AuthenticateAPIKey(ctx context.Context, key string) (int64, error) {
	var res orgRes
	err := c.do(ctx, pathAPIKey, true, c.timeout, credentialReq{Credential: key}, &res)
	return res.OrgID, err
}

// ClaimRealtimeToken implements call.Credentials. Not retried: a token
// is claimed once.
func (c *Client) ClaimRealtimeToken(ctx context.Context, token string) (control.RealtimeGrant, error) {
	var g control.RealtimeGrant
	err := c.do(ctx, pathClaim, false, c.timeout, credentialReq{Credential: token}, &g)
	return g, err
}

// MCPServers implements mcp.Catalog: the organization's MCP servers, for
// a CallCatalog on the node (which then talks to them itself).
func (c *Client) MCPServers(ctx context.Context, orgID int64) ([]storage.MCPServer, error) {
	var out []storage.MCPServer
	err := c.do(ctx, pathMCPServers, true, c.timeout, mcpReq{OrgID: orgID}, &out)
	return out, err
}

// SearchKnowledge implements call.Knowledge.
func (c *Client) SearchKnowledge(ctx context.Context, orgID int64, bases, docs []string, query string, limit int) ([]knowledge.Passage, error) {
	var out []knowledge.Passage
	err := c.do(ctx, pathKnowledge, true, c.timeout, knowledgeReq{OrgID: orgID, Bases: bases, Docs: docs, Query: query, Limit: limit}, &out)
	return out, err
}

// uploadRecording puts the spooled recording key in the control plane's
// blob store and removes it here.
func (c *Client) uploadRecording(ctx context.Context, key string) error {
	file := filepath.Join(c.spool, filepath.FromSlash(key))
	if err := c.PutBlob(ctx, key, file); err != nil {
		return err
	}
	return os.Remove(file)
}

// PutBlob uploads file as blob key (a clean relative path); a repeated
// upload replaces the blob whole, so it is retried.
func (c *Client) PutBlob(ctx context.Context, key, file string) error {
	var err error
	for i := 0; ; i++ {
		var retry bool
		retry, err = c.putOnce(ctx, key, file)
		if err == nil || !retry || i >= len(retries) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(retries[i]):
		}
	}
}

func (c *Client) putOnce(ctx context.Context, key, file string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.base+pathBlobs+key, f)
	if err != nil {
		return false, err
	}
	req.ContentLength = fi.Size()
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Authorization", "Bearer "+c.secret)
	res, err := c.hc.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("upload blob %s: %w", key, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode == http.StatusNoContent || res.StatusCode == http.StatusOK {
		return false, nil
	}
	st := res.StatusCode
	return st >= 500, decodeErr(st, data)
}
