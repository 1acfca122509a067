// Package controltest drives the real control-plane router with real
// stores, for the tests of control and of its domain packages: an API
// over a migrated database (storage/sqltest), a World of users and
// credentials, and fakes at the telephony boundary.
package controltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/grading"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
)

// Pool is the demo DID pool of the resource tests.
var Pool = []numbers.DID{
	{Number: "+14155550100", City: "San Francisco", State: "CA"},
	{Number: "+14155550101", City: "San Francisco", State: "CA"},
	{Number: "+12125550100", City: "New York", State: "NY"},
}

// SigningKey keys the signed URLs of the resource tests.
var SigningKey = bytes.Repeat([]byte{9}, 32)

// API drives the real router with real stores.
type API struct {
	T     *testing.T
	Srv   *control.Server
	Store *storage.Store
}

// New is NewWith the default test configuration.
func New(t *testing.T, db *storage.DB) *API {
	t.Helper()
	return NewWith(t, db, control.Config{PublicURL: "https://voice.example", Grading: grading.Config{NoWorker: true}})
}

// NewWith builds a server with cfg and opts over db; it is closed when the
// test ends.
func NewWith(t *testing.T, db *storage.DB, cfg control.Config, opts ...control.Option) *API {
	t.Helper()
	store, err := storage.NewStore(db, storage.StoreConfig{SecretKey: bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)
	srv, err := control.New(cfg, nil, store, Limiter(t), opts...)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return &API{T: t, Srv: srv, Store: store}
}

// Limiter is an in-process limiter closed when the test ends.
func Limiter(t *testing.T) control.Limiter {
	l := coord.NewLocal(coord.Config{})
	t.Cleanup(func() { l.Close() })
	return l
}

// Resp is a response.
type Resp struct {
	Status int
	Body   []byte
	Header http.Header
}

// Obj decodes the body as an object.
func (r Resp) Obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	return m
}

// List decodes the body as a list of objects.
func (r Resp) List(t *testing.T) []map[string]any {
	t.Helper()
	var l []map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &l), "body: %s", r.Body)
	return l
}

// Do sends a request. auth is "Bearer sk_..." or "Token pt_...|orgID";
// body is nil, a raw string, or marshalled as JSON.
func (a *API) Do(method, path, auth string, body any) Resp {
	a.T.Helper()
	hdr := map[string]string{}
	if auth != "" {
		cred, org, _ := strings.Cut(auth, "|")
		hdr["Authorization"] = cred
		if org != "" {
			hdr["X-Service-Org"] = org
		}
	}
	return a.Raw(method, path, hdr, body)
}

// World is an org with an owner, an admin and a member, each with an API
// key (OwnerK, ...) and a personal token (OwnerT, ...).
type World struct {
	Org                   storage.Org
	Owner, Admin, Member  storage.User
	OwnerM, AdminM, MembM storage.Member
	OwnerK, AdminK, MembK string
	OwnerT, AdminT, MembT string
}

// World makes a fresh World.
func (a *API) World() World {
	t := a.T
	t.Helper()
	ctx := context.Background()
	s := a.Store
	tag := storage.NewUUID()[28:]
	var w World
	mk := func(name string) storage.User {
		u, err := s.Orgs.CreateUser(ctx, name+"-"+tag+"@example.com", name, "Test")
		require.NoError(t, err)
		return u
	}
	w.Owner, w.Admin, w.Member = mk("owner"), mk("admin"), mk("member")
	var err error
	w.Org, err = s.Orgs.CreateOrg(ctx, w.Owner.ID, "Acme "+tag)
	require.NoError(t, err)
	w.OwnerM, _ = s.Orgs.MemberByUser(ctx, w.Org.ID, w.Owner.ID)
	w.AdminM, err = s.Orgs.AddMember(ctx, w.Org.ID, w.Admin.ID, storage.RoleAdmin)
	require.NoError(t, err)
	w.MembM, err = s.Orgs.AddMember(ctx, w.Org.ID, w.Member.ID, storage.RoleMember)
	require.NoError(t, err)
	key := func(u storage.User) string {
		_, raw, err := s.Keys.CreateAPIKey(ctx, w.Org.ID, u.ID, "k")
		require.NoError(t, err)
		return "Bearer " + raw
	}
	tok := func(u storage.User) string {
		raw, err := s.Keys.CreatePersonalToken(ctx, u.ID, "t")
		require.NoError(t, err)
		return "Token " + raw
	}
	w.OwnerK, w.AdminK, w.MembK = key(w.Owner), key(w.Admin), key(w.Member)
	w.OwnerT, w.AdminT, w.MembT = tok(w.Owner), tok(w.Admin), tok(w.Member)
	return w
}

// OrgHdr is the "|orgID" suffix that makes a personal token act in the
// World's org.
func (w World) OrgHdr() string { return fmt.Sprint("|", w.Org.ID) }

// Credit gives org cents of balance.
func (a *API) Credit(orgID, cents int64) {
	a.T.Helper()
	_, err := a.Store.Billing.Post(context.Background(), orgID, storage.TxAdjustment, cents, "test credit", "")
	require.NoError(a.T, err)
}

// Agent creates an agent with extra fields and returns it.
func (a *API) Agent(auth, name string, extra map[string]any) map[string]any {
	a.T.Helper()
	body := map[string]any{"name": name}
	for k, v := range extra {
		body[k] = v
	}
	r := a.Do("POST", "/v1/agents", auth, body)
	require.Equal(a.T, 201, r.Status, string(r.Body))
	return r.Obj(a.T)
}

// Trunk creates a VoIP connection (as the owner) and imports number on
// it, returning the connection id and the number object.
func (a *API) Trunk(w World, number string) (int64, map[string]any) {
	a.T.Helper()
	r := a.Do("POST", "/v1/voip-connections", w.OwnerK, map[string]any{"host": "sip.carrier.example", "username": "acme", "password": "s3cret-pass"})
	require.Equal(a.T, 201, r.Status, string(r.Body))
	conn := ID(r.Obj(a.T))
	r = a.Do("POST", fmt.Sprintf("/v1/voip-connections/%d/numbers", conn), w.OwnerK, map[string]any{"numbers": []string{number}})
	require.Equal(a.T, 201, r.Status, string(r.Body))
	return conn, r.List(a.T)[0]
}

// ID reads an object's integer id ("id", or "call_id" for calls).
func ID(m map[string]any) int64 {
	for _, k := range []string{"id", "call_id"} {
		if v, ok := m[k].(float64); ok {
			return int64(v)
		}
	}
	panic("no id in object")
}

// Resources is the API with telephony fakes, a DID pool and a blob dir.
type Resources struct {
	*API
	BlobDir  string
	Dialer   *Dialer
	Verifier *Verifier
}

// NewResources builds a Resources over db with the demo pool, and opts.
func NewResources(t *testing.T, db *storage.DB, pool []numbers.DID, opts ...control.Option) *Resources {
	t.Helper()
	r := &Resources{BlobDir: t.TempDir(), Dialer: &Dialer{}, Verifier: &Verifier{}}
	r.API = NewWith(t, db, control.Config{PublicURL: "https://voice.example", Resources: control.ResourcesConfig{
		DIDPool: pool, BlobDir: r.BlobDir, SigningKey: SigningKey}, Grading: grading.Config{NoWorker: true}},
		append([]control.Option{control.WithDialer(r.Dialer), control.WithVoIPVerifier(r.Verifier)}, opts...)...)
	return r
}

// Dialer stands in for the telephony side at the Dialer boundary.
type Dialer struct {
	mu    sync.Mutex
	Calls []control.OutboundCall
	Err   error
}

// Dial records c and answers Err.
func (d *Dialer) Dial(_ context.Context, c control.OutboundCall) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Calls = append(d.Calls, c)
	return d.Err
}

// Verifier stands in for the SIP OPTIONS check at the VoIPVerifier
// boundary.
type Verifier struct {
	mu     sync.Mutex
	res    numbers.VoIPResult
	err    error
	checks []numbers.VoIPCheck
}

// VerifyVoIP records c and answers what Set said.
func (v *Verifier) VerifyVoIP(_ context.Context, c numbers.VoIPCheck) (numbers.VoIPResult, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.checks = append(v.checks, c)
	return v.res, v.err
}

// Set makes the next checks answer res and err.
func (v *Verifier) Set(res numbers.VoIPResult, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.res, v.err = res, err
}

// Checks lists the checks made so far.
func (v *Verifier) Checks() []numbers.VoIPCheck {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]numbers.VoIPCheck(nil), v.checks...)
}

// Last is the last call dialed.
func (d *Dialer) Last() control.OutboundCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.Calls[len(d.Calls)-1]
}

// SetErr makes the next dials answer err.
func (d *Dialer) SetErr(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Err = err
}

// CallOrg is an org with credit, an agent and a VoIP number answered by it.
type CallOrg struct {
	World
	AgentID int64
	Number  string
	NumID   int64
}

// CallOrg makes a fresh World with 500 cents of credit, an agent
// ("Receptionist", with a reschedule tool) and number on a VoIP
// connection, answered by the agent.
func (a *API) CallOrg(number string) CallOrg {
	a.T.Helper()
	w := a.World()
	a.Credit(w.Org.ID, 500)
	ag := a.Agent(w.OwnerK, "Receptionist", map[string]any{"prompt": "Answer for Acme Dental.", "tools": []any{map[string]any{"name": "reschedule"}}})
	_, num := a.Trunk(w, number)
	r := a.Do("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", ID(num)), w.OwnerK, map[string]any{"inbound_agent_id": ID(ag)})
	require.Equal(a.T, 200, r.Status, string(r.Body))
	return CallOrg{World: w, AgentID: ID(ag), Number: number, NumID: ID(num)}
}

// Raw sends a request with headers hdr; body is nil, a raw string, or
// marshalled as JSON.
func (a *API) Raw(method, path string, hdr map[string]string, body any) Resp {
	a.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(a.T, err)
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := a.Srv.App().Test(req, fiber.TestConfig{Timeout: 30 * time.Second})
	require.NoError(a.T, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(a.T, err)
	return Resp{Status: res.StatusCode, Body: b, Header: res.Header}
}
