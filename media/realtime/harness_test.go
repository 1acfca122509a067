package realtime

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/ai/stt"
	"github.com/voiced/voiced/ai/tts"
	"github.com/voiced/voiced/codecs/wav"
	"github.com/voiced/voiced/media/agent"
	"github.com/voiced/voiced/media/pace"
)

// Fakes stand in for control (auth, call log, slots) and for the STT and
// TTS providers; the model is the real offline echo provider.

const (
	goodKey = "sk_live_good"
	poorKey = "sk_live_poor" // an organization without balance
)

type fakeAuth struct {
	mu     sync.Mutex
	tokens map[string]Admission
}

func (a *fakeAuth) Authenticate(_ context.Context, key string) (int64, error) {
	switch key {
	case goodKey:
		return 1, nil
	case poorKey:
		return 2, nil
	}
	return 0, ErrUnauthorized
}

func (a *fakeAuth) Claim(_ context.Context, token string) (Admission, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	adm, ok := a.tokens[token]
	if !ok {
		return Admission{}, ErrUnauthorized
	}
	delete(a.tokens, token)
	return adm, nil
}

type fakeCalls struct {
	mu       sync.Mutex
	next     int64
	agents   map[int64]Agent
	configs  []map[string]any
	events   map[int64][]callEvent
	finished map[int64]CallEnd
	changed  chan struct{}
}

func newFakeCalls() *fakeCalls {
	return &fakeCalls{next: 100, agents: map[int64]Agent{}, events: map[int64][]callEvent{}, finished: map[int64]CallEnd{},
		changed: make(chan struct{}, 1)}
}

func (f *fakeCalls) notify() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *fakeCalls) AdmitAgent(_ context.Context, org, agentID int64) (Admission, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if org == 2 {
		return Admission{}, ErrInsufficientBalance
	}
	a, ok := f.agents[agentID]
	if !ok {
		return Admission{}, ErrUnknownAgent
	}
	f.next++
	a.Engine.EndCall = true // a saved agent may end the call, as package call maps it
	return Admission{CallID: f.next, OrgID: org, AgentID: agentID, Agent: a, Start: time.Now()}, nil
}

func (f *fakeCalls) AdmitInline(_ context.Context, org int64, cfg json.RawMessage) (Admission, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if org == 2 {
		return Admission{}, ErrInsufficientBalance
	}
	var m map[string]any
	if err := json.Unmarshal(cfg, &m); err != nil {
		return Admission{}, err
	}
	for k := range m {
		switch k {
		case "prompt", "voice", "product", "tools", "primary_language", "additional_languages", "background_track",
			"telephony", "placeholders", "outbound", "call_events":
		default:
			return Admission{}, &ConfigError{Fields: map[string][]string{k: {"Unknown field."}}}
		}
	}
	f.configs = append(f.configs, m)
	f.next++
	voice, _ := m["voice"].(string)
	return Admission{CallID: f.next, OrgID: org, Inline: true, Start: time.Now(),
		Agent: Agent{Prompt: m["prompt"].(string), Voice: voice, Engine: agent.Config{Language: "en-US"}}}, nil
}

// callEvent is what the fake call log keeps of a recorded engine event.
type callEvent struct{ ID, Kind, Role string }

func (f *fakeCalls) Record(_ context.Context, callID int64, id string, e agent.Event) error {
	ev := callEvent{ID: id}
	switch v := e.(type) {
	case agent.Turn:
		ev.Kind, ev.Role = "turn", v.Role
	case agent.ToolCalled:
		ev.Kind = "tool_call"
	case agent.ToolResult:
		ev.Kind = "tool_result"
	}
	f.mu.Lock()
	f.events[callID] = append(f.events[callID], ev)
	f.mu.Unlock()
	f.notify()
	return nil
}

func (f *fakeCalls) Finish(_ context.Context, callID int64, end CallEnd) error {
	f.mu.Lock()
	f.finished[callID] = end
	f.mu.Unlock()
	f.notify()
	return nil
}

// waitFinished waits for call id's end.
func (f *fakeCalls) waitFinished(t *testing.T, id int64) CallEnd {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		f.mu.Lock()
		end, ok := f.finished[id]
		f.mu.Unlock()
		if ok {
			return end
		}
		select {
		case <-f.changed:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("call %d not finished", id)
		}
	}
}

func (f *fakeCalls) callEvents(id int64) []callEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]callEvent(nil), f.events[id]...)
}

// fakeSlots is a counting semaphore.
type fakeSlots struct {
	mu   sync.Mutex
	held map[string]int
	n    int
}

func (s *fakeSlots) Acquire(_ context.Context, key string, size int, _ time.Duration) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[key] >= size {
		return "", ErrSessionLimit
	}
	s.held[key]++
	s.n++
	return key + "#" + string(rune('a'+s.n)), nil
}

func (s *fakeSlots) Release(_ context.Context, key, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[key]--
	return nil
}

func (s *fakeSlots) ExtendLease(context.Context, string, string, time.Duration) error { return nil }

// fakeSTT answers every turn with text.
type fakeSTT struct {
	mu   sync.Mutex
	text []string
	lens []int
}

func (f *fakeSTT) Transcribe(_ context.Context, r stt.Request) (stt.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lens = append(f.lens, len(r.PCM))
	if len(f.text) == 0 {
		return stt.Result{}, nil
	}
	t := f.text[0]
	if len(f.text) > 1 {
		f.text = f.text[1:]
	}
	return stt.Result{Text: t}, nil
}

// toneTTS speaks each word as wordMS of a 440 Hz tone (pcm, when set,
// replaces it: a recorded voice).
type toneTTS struct {
	wordMS int
	pcm    []int16
}

func (f *toneTTS) Synthesize(_ context.Context, r tts.Request) (tts.Audio, error) {
	if f.pcm != nil {
		return &pcmSpeech{pcm: f.pcm}, nil
	}
	n := len(strings.Fields(r.Text)) * f.wordMS * r.SampleRate / 1000
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/float64(r.SampleRate)))
	}
	return &pcmSpeech{pcm: pcm}, nil
}

type pcmSpeech struct{ pcm []int16 }

func (p *pcmSpeech) Read(dst []int16) (int, error) {
	if len(p.pcm) == 0 {
		return 0, io.EOF
	}
	n := copy(dst, p.pcm)
	p.pcm = p.pcm[n:]
	return n, nil
}

func (p *pcmSpeech) Close() error { return nil }

// env is a realtime server on a loopback HTTP server.
type env struct {
	srv   *Server
	http  *httptest.Server
	url   string
	auth  *fakeAuth
	calls *fakeCalls
	slots *fakeSlots
	stt   *fakeSTT
	tts   *toneTTS
	pacer *pace.Pacer
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	return newEnvSTT(t, cfg, nil)
}

// newEnvSTT is newEnv with a real speech-to-text (nil: the fake).
func newEnvSTT(t *testing.T, cfg Config, sttDep agent.STT) *env {
	t.Helper()
	checkGoroutines(t)
	pacer, err := pace.New(pace.Config{}, nil)
	require.NoError(t, err)
	e := &env{auth: &fakeAuth{tokens: map[string]Admission{}}, calls: newFakeCalls(), slots: &fakeSlots{held: map[string]int{}},
		stt: &fakeSTT{text: []string{"hello"}}, tts: &toneTTS{wordMS: 100}, pacer: pacer}
	if cfg.OrgSessions > 0 {
		cfg.MaxMessageBytes = max(cfg.MaxMessageBytes, 1<<20)
	}
	deps := Deps{Auth: e.auth, Calls: e.calls, Slots: e.slots, Pacer: pacer, LLM: llm.NewEcho(llm.EchoConfig{}), STT: e.stt, TTS: e.tts}
	if sttDep != nil {
		deps.STT = sttDep
	}
	e.srv, err = New(cfg, nil, deps)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/v1/realtime", e.srv)
	e.http = httptest.NewServer(mux)
	e.url = "ws" + strings.TrimPrefix(e.http.URL, "http") + "/v1/realtime"
	t.Cleanup(func() {
		require.NoError(t, e.srv.Close(context.Background()))
		e.http.Close()
		pacer.Close()
	})
	return e
}

// client is a WebSocket client that records every server message.
type client struct {
	t      *testing.T
	nc     net.Conn
	wmu    sync.Mutex
	mu     sync.Mutex
	events []event
	cursor int
	signal chan struct{}
	done   chan struct{}
	closed *wsutil.ClosedError
}

// event is one server message: a JSON event or a binary frame.
type event struct {
	Type   string
	Fields map[string]any
	Binary []byte
	At     time.Time
}

func (e event) str(k string) string { s, _ := e.Fields[k].(string); return s }

func (e event) num(k string) int64 { f, _ := e.Fields[k].(float64); return int64(f) }

func (e event) obj(k string) map[string]any { o, _ := e.Fields[k].(map[string]any); return o }

// dial connects; status is the HTTP status of a refused upgrade.
func (e *env) dial(t *testing.T, query string, header http.Header) (*client, int) {
	t.Helper()
	d := ws.Dialer{Header: ws.HandshakeHeaderHTTP(header)}
	u := e.url
	if query != "" {
		u += "?" + query
	}
	nc, br, _, err := d.Dial(context.Background(), u)
	var se ws.StatusError
	if errors.As(err, &se) {
		return nil, int(se)
	}
	require.NoError(t, err)
	c := &client{t: t, nc: nc, signal: make(chan struct{}, 1), done: make(chan struct{})}
	go c.readLoop(br)
	t.Cleanup(func() { c.nc.Close(); <-c.done })
	return c, 101
}

func bearer(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

func (c *client) readLoop(br *bufio.Reader) {
	defer close(c.done)
	var r io.Reader = c.nc
	if br != nil {
		r = io.MultiReader(br, c.nc)
	}
	rw := struct {
		io.Reader
		io.Writer
	}{r, writerFunc(func(p []byte) (int, error) {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		return c.nc.Write(p)
	})}
	for {
		data, op, err := wsutil.ReadServerData(rw)
		if err != nil {
			var ce wsutil.ClosedError
			c.mu.Lock()
			if errors.As(err, &ce) {
				c.closed = &ce
			}
			c.mu.Unlock()
			c.notify()
			return
		}
		ev := event{At: time.Now()}
		if op == ws.OpBinary {
			ev.Type, ev.Binary = "<binary>", data
		} else {
			if err := json.Unmarshal(data, &ev.Fields); err != nil {
				c.t.Errorf("server sent invalid JSON: %s", data)
				continue
			}
			ev.Type = ev.str("type")
			if ev.str("event_id") == "" {
				c.t.Errorf("server event without event_id: %s", data)
			}
		}
		c.mu.Lock()
		c.events = append(c.events, ev)
		c.mu.Unlock()
		c.notify()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (c *client) notify() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// send writes a client event.
func (c *client) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(c.t, err)
	c.sendRaw(ws.OpText, b)
}

func (c *client) sendRaw(op ws.OpCode, b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = wsutil.WriteClientMessage(c.nc, op, b)
}

// next returns the next event of type typ after the cursor, moving the
// cursor past it.
func (c *client) next(typ string) event {
	c.t.Helper()
	return c.nextWhere(func(e event) bool { return e.Type == typ }, typ)
}

func (c *client) nextWhere(match func(event) bool, what string) event {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		for i := c.cursor; i < len(c.events); i++ {
			if match(c.events[i]) {
				c.cursor = i + 1
				ev := c.events[i]
				c.mu.Unlock()
				return ev
			}
		}
		closed := c.closed
		c.mu.Unlock()
		if closed != nil {
			c.t.Fatalf("socket closed (%d %q) before %s; got %v", closed.Code, closed.Reason, what, c.types())
		}
		select {
		case <-c.signal:
		case <-c.done:
		case <-deadline:
			c.t.Fatalf("no %s within 10 s; got %v", what, c.types())
		}
	}
}

// all returns every event so far.
func (c *client) all() []event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event(nil), c.events...)
}

// types lists the event types so far, runs of one type collapsed.
func (c *client) types() []string {
	var out []string
	run := 0
	evs := c.all()
	for i, e := range evs {
		run++
		if i+1 < len(evs) && evs[i+1].Type == e.Type {
			continue
		}
		if run > 1 {
			out = append(out, fmt.Sprintf("%s x%d", e.Type, run))
		} else {
			out = append(out, e.Type)
		}
		run = 0
	}
	return out
}

// find returns the first event of type typ so far, wherever the cursor is.
func (c *client) find(typ string) event {
	c.t.Helper()
	for _, e := range c.all() {
		if e.Type == typ {
			return e
		}
	}
	c.t.Fatalf("no %s; got %v", typ, c.types())
	return event{}
}

// waitClosed waits for the server's close and returns it.
func (c *client) waitClosed() wsutil.ClosedError {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.t.Fatalf("socket not closed; got %v", c.types())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed == nil {
		return wsutil.ClosedError{}
	}
	return *c.closed
}

func loadWAV(t testing.TB, name string) []int16 {
	t.Helper()
	f, err := os.Open("../turn/testdata/" + name)
	require.NoError(t, err)
	defer f.Close()
	_, pcm, err := wav.ReadAll(f)
	require.NoError(t, err)
	return pcm
}

// checkGoroutines fails the test if it leaves goroutines behind.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			t.Errorf("%d goroutines leaked:\n%s", n-before, buf[:runtime.Stack(buf, true)])
		}
	})
}
