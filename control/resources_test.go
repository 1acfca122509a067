package control_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/storage"
)

// fakeDialer stands in for the telephony side at the Dialer boundary.
type fakeDialer struct {
	mu    sync.Mutex
	calls []control.OutboundCall
	err   error
}

func (d *fakeDialer) Dial(_ context.Context, c control.OutboundCall) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, c)
	return d.err
}

// fakeVerifier stands in for the SIP OPTIONS check at the VoIPVerifier
// boundary.
type fakeVerifier struct {
	mu     sync.Mutex
	res    numbers.VoIPResult
	err    error
	checks []numbers.VoIPCheck
}

func (v *fakeVerifier) VerifyVoIP(_ context.Context, c numbers.VoIPCheck) (numbers.VoIPResult, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.checks = append(v.checks, c)
	return v.res, v.err
}

func (v *fakeVerifier) set(res numbers.VoIPResult, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.res, v.err = res, err
}

// testPool is the demo DID pool of the resource tests.
var testPool = controltest.Pool

var testSigningKey = controltest.SigningKey

// resAPI is the API with telephony fakes, a DID pool and a blob dir.
type resAPI struct {
	*api
	blobDir  string
	dialer   *fakeDialer
	verifier *fakeVerifier
}

func newResAPI(t *testing.T, db *storage.DB, pool []numbers.DID) *resAPI {
	t.Helper()
	r := &resAPI{blobDir: t.TempDir(), dialer: &fakeDialer{}, verifier: &fakeVerifier{}}
	r.api = newAPIWith(t, db, control.Config{PublicURL: "https://voice.example", Resources: control.ResourcesConfig{
		DIDPool: pool, BlobDir: r.blobDir, SigningKey: testSigningKey}},
		control.WithDialer(r.dialer), control.WithVoIPVerifier(r.verifier))
	return r
}

// credit gives org cents of balance.
func (a *api) credit(orgID, cents int64) { a.t.Helper(); a.x.Credit(orgID, cents) }

// agent creates an agent with extra fields and returns it.
func (a *api) agent(auth, name string, extra map[string]any) map[string]any {
	a.t.Helper()
	return a.x.Agent(auth, name, extra)
}

// trunk creates a VoIP connection (as the owner) and imports number on
// it, returning the connection id and the number object.
func (a *api) trunk(w world, number string) (int64, map[string]any) {
	a.t.Helper()
	return a.x.Trunk(controltest.World{Org: w.org, OwnerK: w.ownerK}, number)
}

// id reads an object's integer id.
func id(m map[string]any) int64 { return controltest.ID(m) }

// callOrg is an org with credit, an agent and a VoIP number answered by it.
type callOrg struct {
	world
	agentID int64
	number  string
	numID   int64
}

func (a *resAPI) callOrg(number string) callOrg {
	a.t.Helper()
	w := a.world()
	a.credit(w.org.ID, 500)
	ag := a.agent(w.ownerK, "Receptionist", map[string]any{"prompt": "Answer for Acme Dental.", "tools": []any{map[string]any{"name": "reschedule"}}})
	_, num := a.trunk(w, number)
	r := a.do("PATCH", fmt.Sprintf("/v1/phone-numbers/%d", id(num)), w.ownerK, map[string]any{"inbound_agent_id": id(ag)})
	require.Equal(a.t, 200, r.status, string(r.body))
	return callOrg{world: w, agentID: id(ag), number: number, numID: id(num)}
}
