package realtime

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
)

// TokenPrefix starts the session tokens of POST /v1/realtime/sessions, to
// tell them from API keys.
const TokenPrefix = "rt_"

// Server serves {ws_url}/v1/realtime. It is an http.Handler; mount it on
// the API's listener. See the package documentation.
type Server struct {
	cfg  Config
	log  *slog.Logger
	deps Deps

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup

	active atomic.Int64
}

// New returns a Server. Auth, Calls and Pacer are required; LLM, STT
// and TTS unless cfg.Loopback; Slots when cfg.OrgSessions is set.
func New(cfg Config, log *slog.Logger, deps Deps) (*Server, error) {
	cfg = cfg.withDefaults()
	switch {
	case deps.Auth == nil || deps.Calls == nil || deps.Pacer == nil:
		return nil, fmt.Errorf("%w: Auth, Calls and Pacer are required", ErrConfig)
	case !cfg.Loopback && (deps.LLM == nil || deps.STT == nil || deps.TTS == nil):
		return nil, fmt.Errorf("%w: LLM, STT and TTS are required without loopback", ErrConfig)
	case cfg.OrgSessions > 0 && deps.Slots == nil:
		return nil, fmt.Errorf("%w: OrgSessions needs Slots", ErrConfig)
	case cfg.OrgSessions < 0 || cfg.MaxMessageBytes < 1024:
		return nil, fmt.Errorf("%w: OrgSessions must be >= 0 and MaxMessageBytes >= 1024", ErrConfig)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Server{cfg: cfg, log: log, deps: deps, conns: map[*conn]struct{}{}}, nil
}

// Sessions returns the number of open sockets.
func (s *Server) Sessions() int { return int(s.active.Load()) }

// httpError answers before the upgrade with the API's error body.
func httpError(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"detail": detail})
	_, _ = w.Write(b)
}

// credential finds the socket's credential: the Authorization bearer, the
// api_key query parameter, or the browsers' "openai-insecure-api-key."
// subprotocol.
func credential(r *http.Request) string {
	if scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "bearer") {
		return strings.TrimSpace(cred)
	}
	if k := r.URL.Query().Get("api_key"); k != "" {
		return k
	}
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			if k, ok := strings.CutPrefix(strings.TrimSpace(p), "openai-insecure-api-key."); ok {
				return k
			}
		}
	}
	return ""
}

// initialSettings applies the query's formats to the defaults.
func initialSettings(q map[string][]string) (settings, error) {
	set := defaultSettings()
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	for _, f := range []struct {
		name, rate string
		dst        *format
	}{{"input_audio_format", "input_rate", &set.in}, {"output_audio_format", "output_rate", &set.out}} {
		if v := get(f.name); v != "" {
			ff, ok := parseFormatName(v)
			if !ok {
				return set, fmt.Errorf("%s %q is not one of audio/pcmu, audio/pcma, g711_ulaw, g711_alaw, pcm16", f.name, v)
			}
			*f.dst = ff
		}
		if v := get(f.rate); v != "" {
			rate, err := strconv.Atoi(v)
			if err != nil {
				return set, fmt.Errorf("%s must be a number", f.rate)
			}
			if err := f.dst.setRate(rate); err != nil {
				return set, fmt.Errorf("%s: %v", f.rate, err)
			}
		}
	}
	switch v := get("voiced_events"); v {
	case "":
	case "playout":
		set.playoutEvents = true
	default:
		return set, fmt.Errorf("voiced_events %q is not playout", v)
	}
	return set, nil
}

// ServeHTTP authenticates, admits a saved agent's call (agent_id) or
// redeems a session token, upgrades to a WebSocket and serves it until
// it closes. Refusals before the upgrade are plain HTTP errors: 400 bad
// query, 401 credential, 402 balance, 404 agent, 426 not a WebSocket
// request, 429 session cap, 503 shutting down.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("Upgrade", "websocket")
		httpError(w, http.StatusUpgradeRequired, "This endpoint speaks WebSocket: connect with a WebSocket client.")
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		httpError(w, http.StatusServiceUnavailable, "The server is shutting down.")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q := r.URL.Query()
	set, err := initialSettings(q)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	cred := credential(r)
	if cred == "" {
		httpError(w, http.StatusUnauthorized, "Authentication credentials were not provided: send Authorization: Bearer <API key> or ?api_key=.")
		return
	}
	var adm *Admission
	var org int64
	if strings.HasPrefix(cred, TokenPrefix) {
		a, err := s.deps.Auth.Claim(ctx, cred)
		if err != nil {
			s.refuse(w, err)
			return
		}
		adm, org = &a, a.OrgID
	} else {
		org, err = s.deps.Auth.Authenticate(ctx, cred)
		if err != nil {
			s.refuse(w, err)
			return
		}
	}
	c := &conn{}
	if s.cfg.OrgSessions > 0 {
		c.slotKey = "realtime:org:" + strconv.FormatInt(org, 10)
		tok, err := s.deps.Slots.Acquire(ctx, c.slotKey, s.cfg.OrgSessions, s.cfg.SlotTTL)
		if err != nil {
			if adm != nil {
				s.finishRefused(adm, "session limit")
			}
			s.refuse(w, err)
			return
		}
		c.slotToken = tok
	}
	if id := q.Get("agent_id"); id != "" && adm == nil {
		agentID, err := strconv.ParseInt(id, 10, 64)
		if err != nil || agentID <= 0 {
			s.releaseSlot(c)
			httpError(w, http.StatusBadRequest, "agent_id must be an agent's id.")
			return
		}
		a, err := s.deps.Calls.AdmitAgent(ctx, org, agentID)
		if err != nil {
			s.releaseSlot(c)
			s.refuse(w, err)
			return
		}
		adm = &a
	}
	up := ws.HTTPUpgrader{Timeout: 10 * time.Second, Protocol: func(p string) bool { return p == "realtime" }}
	nc, rw, _, err := up.Upgrade(r, w)
	if err != nil {
		if nc != nil {
			nc.Close()
		}
		s.releaseSlot(c)
		if adm != nil {
			s.finishRefused(adm, "upgrade failed")
		}
		return
	}
	beta := strings.Contains(r.Header.Get("OpenAI-Beta"), "realtime=v1")
	conn := newConn(s, nc, rw.Reader, org, set, beta)
	conn.slotKey, conn.slotToken = c.slotKey, c.slotToken
	if !s.track(conn) {
		nc.Close()
		s.releaseSlot(conn)
		if adm != nil {
			s.finishRefused(adm, "shutting down")
		}
		return
	}
	defer s.untrack(conn)
	conn.run(adm)
}

// refuse answers an authentication or admission refusal.
func (s *Server) refuse(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrUnauthorized):
		httpError(w, http.StatusUnauthorized, "Invalid or expired credential.")
	case errors.Is(err, ErrUnknownAgent):
		httpError(w, http.StatusNotFound, "Agent not found.")
	case errors.Is(err, ErrInsufficientBalance):
		httpError(w, http.StatusPaymentRequired, "Insufficient balance: add credit to start calls.")
	case errors.Is(err, ErrSessionLimit):
		httpError(w, http.StatusTooManyRequests, "Too many concurrent realtime sessions for this organization.")
	default:
		s.log.Error("realtime admission failed", "err", err)
		httpError(w, http.StatusServiceUnavailable, "The session could not be started; try again.")
	}
}

// finishRefused closes the record of a call admitted but never served.
func (s *Server) finishRefused(adm *Admission, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.deps.Calls.Finish(ctx, adm.CallID, CallEnd{Status: "failed", Reason: "error", Detail: why, At: time.Now()}); err != nil {
		s.log.Error("call finish failed", "call_id", adm.CallID, "err", err)
	}
}

func (s *Server) releaseSlot(c *conn) {
	if c.slotToken == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.deps.Slots.Release(ctx, c.slotKey, c.slotToken); err != nil {
		s.log.Warn("session slot release failed", "err", err)
	}
	c.slotToken = ""
}

func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.active.Add(1)
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.active.Add(-1)
	s.wg.Done()
}

// Drain refuses new sockets and lets the open ones run until they end or
// ctx does; then it closes those left with 1001 (going away) and end
// reason node_shutdown, and gives them 5 s to finish their calls before
// cutting their connections. It returns ctx's error when sockets had to
// be closed.
func (s *Server) Drain(ctx context.Context) error {
	done := s.shut()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.closeAll("node_shutdown", "drain timeout", "node shutting down")
	gctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.await(gctx, done)
	return ctx.Err()
}

// Close refuses new sockets, closes the open ones with 1001 (going away)
// and waits for them to finish their calls, or for ctx.
func (s *Server) Close(ctx context.Context) error {
	done := s.shut()
	s.closeAll("error", "server shutdown", "server shutting down")
	return s.await(ctx, done)
}

// shut refuses new sockets; done closes when every open one has ended.
func (s *Server) shut() (done <-chan struct{}) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	d := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(d)
	}()
	return d
}

// closeAll asks every open socket to close with 1001 and reason, its call
// ending with end and detail.
func (s *Server) closeAll(end, detail, reason string) {
	s.mu.Lock()
	for c := range s.conns {
		c.setEnd(end, detail)
		c.requestClose(ws.StatusGoingAway, reason)
	}
	s.mu.Unlock()
}

// await waits for done; if ctx ends first it cuts the connections left
// and returns ctx's error.
func (s *Server) await(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// newTag returns a short random tag for identifiers.
func newTag() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
}

// jsonTools renders tools as the API's function definitions.
func jsonTools(tools []Tool) (json.RawMessage, error) {
	type tool struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	out := make([]tool, len(tools))
	for i, t := range tools {
		out[i] = tool{"function", t.Name, t.Description, t.Parameters}
	}
	return json.Marshal(out)
}
