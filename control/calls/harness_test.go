package calls_test

import (
	"net/http"
	"testing"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/control/numbers"
	"github.com/voiced/voiced/storage"
)

// The call log tests drive the real router with real stores
// (controltest.Resources); these lowercase helpers keep them in the
// words they were written in beside package control.

var testPool = controltest.Pool

type resAPI struct {
	t       *testing.T
	x       *controltest.Resources
	srv     *control.Server
	store   *storage.Store
	blobDir string
}

func newResAPI(t *testing.T, db *storage.DB, pool []numbers.DID) *resAPI {
	t.Helper()
	x := controltest.NewResources(t, db, pool)
	return &resAPI{t: t, x: x, srv: x.Srv, store: x.Store, blobDir: x.BlobDir}
}

type resp struct {
	status int
	body   []byte
	header http.Header
}

func (r resp) obj(t *testing.T) map[string]any {
	t.Helper()
	return controltest.Resp{Status: r.status, Body: r.body, Header: r.header}.Obj(t)
}

func (r resp) list(t *testing.T) []map[string]any {
	t.Helper()
	return controltest.Resp{Status: r.status, Body: r.body, Header: r.header}.List(t)
}

// do sends a request. auth is "Bearer sk_..." or "Token pt_...|orgID".
func (a *resAPI) do(method, path, auth string, body any) resp {
	a.t.Helper()
	r := a.x.Do(method, path, auth, body)
	return resp{status: r.Status, body: r.Body, header: r.Header}
}

// world is an org with an owner, an admin and a member, each with an API
// key (controltest.World).
type world struct {
	org                   storage.Org
	ownerK, adminK, membK string
}

func (a *resAPI) world() world {
	a.t.Helper()
	w := a.x.World()
	return world{org: w.Org, ownerK: w.OwnerK, adminK: w.AdminK, membK: w.MembK}
}

func (a *resAPI) credit(orgID, cents int64) { a.t.Helper(); a.x.Credit(orgID, cents) }

func (a *resAPI) agent(auth, name string, extra map[string]any) map[string]any {
	a.t.Helper()
	return a.x.Agent(auth, name, extra)
}

func (a *resAPI) trunk(w world, number string) (int64, map[string]any) {
	a.t.Helper()
	return a.x.Trunk(controltest.World{Org: w.org, OwnerK: w.ownerK}, number)
}

func id(m map[string]any) int64 { return controltest.ID(m) }

var testSigningKey = controltest.SigningKey
