package cluster

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/calls"
	"github.com/voiced/voiced/control/knowledge"
	"github.com/voiced/voiced/control/mcp"
	"github.com/voiced/voiced/control/webhook"
)

// Backend is the control plane the API serves: the same implementations
// the all-in-one server hands its node (call.Control). MCP and Knowledge
// may be nil (none).
type Backend struct {
	Calls Calls
	Tools interface {
		Tool(ctx context.Context, orgID int64, req webhook.ToolRequest) (webhook.ToolResponse, error)
	}
	Credentials interface {
		AuthenticateAPIKey(ctx context.Context, key string) (int64, error)
		ClaimRealtimeToken(ctx context.Context, token string) (control.RealtimeGrant, error)
	}
	MCP       mcp.Catalog
	Knowledge interface {
		SearchKnowledge(ctx context.Context, orgID int64, bases, docs []string, query string, limit int) ([]knowledge.Passage, error)
	}
	// Restarts ends the calls a node held before it (re)started (the
	// Reaper); nil: node-start does nothing.
	Restarts interface {
		Restarted(ctx context.Context, node string) (int, error)
	}
}

// Calls is the call log's part (control.CallLog): admission, the record,
// the end, trunks.
type Calls interface {
	Admit(ctx context.Context, r calllog.AdmitRequest) (control.Admission, error)
	AdmitInline(ctx context.Context, orgID int64, cfg json.RawMessage, room string) (control.Admission, error)
	Append(ctx context.Context, callID int64, events []calllog.CallEvent) error
	ToolEvent(ctx context.Context, callID int64, r calllog.ToolRun) error
	Answered(ctx context.Context, callID int64, at time.Time) error
	Finish(ctx context.Context, callID int64, end calllog.CallEnd) error
	Fail(ctx context.Context, callID int64, reason, detail string) error
	InboundTrunk(ctx context.Context, number string) (calllog.InboundTrunk, bool, error)
	AssignNode(ctx context.Context, callID int64, node string) error
}

// ServerConfig is the API's.
type ServerConfig struct {
	// Secret is the shared cluster secret; empty refuses every request.
	Secret string
	// BlobDir is the control plane's blob store, where uploads go.
	BlobDir string
	// MaxBlob bounds one upload (default 1 GiB).
	MaxBlob int64
	// Metrics, when set, gets voiced_internal_api_requests_total by
	// method path and status class, and the bytes of blobs stored.
	Metrics prometheus.Registerer
}

// maxBody bounds a JSON request: a call's events come in batches.
const maxBody = 8 << 20

// NewServer returns the internal API's handler (paths under Prefix).
func NewServer(cfg ServerConfig, b Backend, log *slog.Logger) http.Handler {
	if cfg.MaxBlob == 0 {
		cfg.MaxBlob = 1 << 30
	}
	s := &server{cfg: cfg, b: b, log: log, known: map[string]bool{}}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voiced_internal_api_requests_total",
		Help: "Requests to the internal API media nodes use, by method (path under /internal/v1/) and status class."}, []string{"method", "code"})
	s.blobBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "voiced_internal_api_blob_bytes_total",
		Help: "Bytes of blobs (recordings) media nodes uploaded through the internal API."})
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(s.requests, s.blobBytes)
	}
	mux := http.NewServeMux()
	for p, h := range map[string]func(*http.Request) (any, error){
		pathAdmit: s.admit, pathAdmitInline: s.admitInline, pathAppend: s.append, pathToolEvent: s.toolEvent,
		pathAnswered: s.answered,
		pathFinish:   s.finish, pathFail: s.fail, pathTool: s.tool, pathTrunk: s.trunk, pathAPIKey: s.apiKey,
		pathClaim: s.claim, pathPing: func(*http.Request) (any, error) { return nil, nil }, pathMCPServers: s.mcpServers, pathKnowledge: s.knowledge,
		pathNodeStart: s.nodeStart,
	} {
		mux.Handle("POST "+Prefix+p, s.call(h))
		s.known[p] = true
	}
	mux.HandleFunc("PUT "+Prefix+pathBlobs+"{key...}", s.putBlob)
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, wireError{Code: codeNotFound, Detail: "no internal API at " + r.Method + " " + r.URL.Path})
	})
	return s.auth(mux)
}

type server struct {
	cfg       ServerConfig
	b         Backend
	log       *slog.Logger
	requests  *prometheus.CounterVec
	blobBytes prometheus.Counter
	known     map[string]bool
}

// auth admits requests bearing the cluster secret: 401 without a bearer
// token, 403 with a wrong one or when no secret is configured.
func (s *server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		switch {
		case !ok || tok == "":
			w.Header().Set("WWW-Authenticate", `Bearer realm="voiced-internal"`)
			writeJSON(w, http.StatusUnauthorized, wireError{Code: codeUnauthorized, Detail: "the internal API needs the cluster secret as a bearer token"})
		case s.cfg.Secret == "":
			writeJSON(w, http.StatusForbidden, wireError{Code: codeForbidden, Detail: "the internal API is off: no cluster secret is configured"})
		case subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Secret)) != 1:
			s.log.Warn("internal API: wrong cluster secret", "remote", r.RemoteAddr, "path", r.URL.Path)
			writeJSON(w, http.StatusForbidden, wireError{Code: codeForbidden, Detail: "wrong cluster secret"})
		default:
			sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
			next.ServeHTTP(sw, r)
			if s.requests != nil {
				m := strings.TrimPrefix(r.URL.Path, Prefix)
				switch {
				case strings.HasPrefix(m, pathBlobs):
					m = "blobs"
				case !s.known[m]:
					m = "other" // no label per unknown path
				}
				s.requests.WithLabelValues(m, strconv.Itoa(sw.code/100)+"xx").Inc()
			}
		}
	})
}

// statusWriter keeps the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// call serves one JSON call: h decodes the body and answers.
func (s *server) call(h func(*http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		out, err := h(r)
		var bad badRequest
		switch {
		case errors.As(err, &bad):
			writeJSON(w, http.StatusBadRequest, wireError{Code: codeBadRequest, Detail: bad.Error()})
		case err != nil:
			st, we := nodeErr(err)
			if we.Code == codeInternal {
				s.log.Error("internal API", "path", r.URL.Path, "err", err)
			}
			writeJSON(w, st, we)
		case out == nil:
			w.WriteHeader(http.StatusNoContent)
		default:
			writeJSON(w, http.StatusOK, out)
		}
	})
}

// badRequest is a body the API cannot read.
type badRequest struct{ error }

func decode[T any](r *http.Request) (T, error) {
	var v T
	d := json.NewDecoder(r.Body)
	d.DisallowUnknownFields()
	if err := d.Decode(&v); err != nil {
		return v, badRequest{fmt.Errorf("invalid request body: %v", err)}
	}
	return v, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *server) admit(r *http.Request) (any, error) {
	req, err := decode[calllog.AdmitRequest](r)
	if err != nil {
		return nil, err
	}
	// The call is the requesting node's: recorded with its admission.
	req.NodeID = nodeOf(r)
	return s.b.Calls.Admit(r.Context(), req)
}

// nodeOf is the media node a request comes from (NodeHeader), "" when it
// does not say: its registry id as it heartbeats under it (behind the
// cluster secret, like everything the node says).
func nodeOf(r *http.Request) string { return r.Header.Get(NodeHeader) }

// own records the call an answer names as the requesting node's.
func (s *server) own(r *http.Request, callID int64) error {
	if n := nodeOf(r); n != "" && callID != 0 {
		return s.b.Calls.AssignNode(r.Context(), callID, n)
	}
	return nil
}

func (s *server) admitInline(r *http.Request) (any, error) {
	req, err := decode[admitInlineReq](r)
	if err != nil {
		return nil, err
	}
	adm, err := s.b.Calls.AdmitInline(r.Context(), req.OrgID, req.Config, req.Room)
	if err == nil {
		err = s.own(r, adm.CallID)
	}
	return adm, err
}

func (s *server) append(r *http.Request) (any, error) {
	req, err := decode[appendReq](r)
	if err != nil {
		return nil, err
	}
	return nil, s.b.Calls.Append(r.Context(), req.CallID, req.Events)
}

func (s *server) toolEvent(r *http.Request) (any, error) {
	req, err := decode[toolEventReq](r)
	if err != nil {
		return nil, err
	}
	return nil, s.b.Calls.ToolEvent(r.Context(), req.CallID, req.Run)
}

func (s *server) answered(r *http.Request) (any, error) {
	req, err := decode[answeredReq](r)
	if err != nil {
		return nil, err
	}
	if req.CallID <= 0 {
		return nil, badRequest{errors.New("answered needs a call_id")}
	}
	return nil, s.b.Calls.Answered(r.Context(), req.CallID, req.At)
}

func (s *server) finish(r *http.Request) (any, error) {
	req, err := decode[finishReq](r)
	if err != nil {
		return nil, err
	}
	return nil, s.b.Calls.Finish(r.Context(), req.CallID, req.End)
}

func (s *server) fail(r *http.Request) (any, error) {
	req, err := decode[failReq](r)
	if err != nil {
		return nil, err
	}
	return nil, s.b.Calls.Fail(r.Context(), req.CallID, req.Reason, req.Detail)
}

// nodeStart is a media node's first word after a start: the calls it
// held before (it died and came back under the same id before the
// registry's TTL, so the reaper never saw it gone) are ended now.
func (s *server) nodeStart(r *http.Request) (any, error) {
	if _, err := decode[struct{}](r); err != nil {
		return nil, err
	}
	node := nodeOf(r)
	if node == "" {
		return nil, badRequest{errors.New("node-start needs the " + NodeHeader + " header")}
	}
	if s.b.Restarts == nil {
		return nil, nil
	}
	n, err := s.b.Restarts.Restarted(r.Context(), node)
	if n > 0 {
		s.log.Info("media node restarted: its earlier calls ended", "node_id", node, "calls", n)
	}
	return nil, err
}

func (s *server) tool(r *http.Request) (any, error) {
	req, err := decode[toolReq](r)
	if err != nil {
		return nil, err
	}
	if s.b.Tools == nil {
		return nil, errors.New("no tool exchange on this control plane")
	}
	req.Request.Channel = req.Channel
	return s.b.Tools.Tool(r.Context(), req.OrgID, req.Request)
}

func (s *server) trunk(r *http.Request) (any, error) {
	req, err := decode[trunkReq](r)
	if err != nil {
		return nil, err
	}
	t, ok, err := s.b.Calls.InboundTrunk(r.Context(), req.Number)
	if err != nil {
		return nil, err
	}
	return trunkRes{Trunk: t, Found: ok}, nil
}

func (s *server) apiKey(r *http.Request) (any, error) {
	req, err := decode[credentialReq](r)
	if err != nil {
		return nil, err
	}
	org, err := s.b.Credentials.AuthenticateAPIKey(r.Context(), req.Credential)
	if err != nil {
		return nil, err
	}
	return orgRes{OrgID: org}, nil
}

func (s *server) claim(r *http.Request) (any, error) {
	req, err := decode[credentialReq](r)
	if err != nil {
		return nil, err
	}
	g, err := s.b.Credentials.ClaimRealtimeToken(r.Context(), req.Credential)
	if err == nil {
		err = s.own(r, g.CallID)
	}
	return g, err
}

func (s *server) mcpServers(r *http.Request) (any, error) {
	req, err := decode[mcpReq](r)
	if err != nil || s.b.MCP == nil {
		return []struct{}{}, err
	}
	return s.b.MCP.MCPServers(r.Context(), req.OrgID)
}

func (s *server) knowledge(r *http.Request) (any, error) {
	req, err := decode[knowledgeReq](r)
	if err != nil || s.b.Knowledge == nil {
		return []struct{}{}, err
	}
	return s.b.Knowledge.SearchKnowledge(r.Context(), req.OrgID, req.Bases, req.Docs, req.Query, req.Limit)
}

// putBlob stores the body as blob key in the blob store: written to a
// temporary file, then renamed, so a reader never sees half a blob and
// a repeated upload replaces it whole.
func (s *server) putBlob(w http.ResponseWriter, r *http.Request) {
	// The key as sent, not as the router cleaned it: a path that is not
	// clean is refused, never reinterpreted.
	key := strings.TrimPrefix(r.URL.Path, Prefix+pathBlobs)
	if !calls.ValidBlobKey(key) {
		writeJSON(w, http.StatusBadRequest, wireError{Code: codeBadRequest, Detail: fmt.Sprintf("blob key %q is not a clean relative path", key)})
		return
	}
	if err := s.storeBlob(key, http.MaxBytesReader(w, r.Body, s.cfg.MaxBlob)); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, wireError{Code: codeBadRequest, Detail: fmt.Sprintf("blob larger than %d bytes", s.cfg.MaxBlob)})
			return
		}
		s.log.Error("internal API: blob not stored", "key", key, "err", err)
		writeJSON(w, http.StatusInternalServerError, wireError{Code: codeInternal, Detail: "blob not stored: " + err.Error()})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) storeBlob(key string, body io.Reader) error {
	dst := filepath.Join(s.cfg.BlobDir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".upload-*")
	if err != nil {
		return err
	}
	n, err := io.Copy(f, body)
	if s.blobBytes != nil {
		s.blobBytes.Add(float64(n))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
