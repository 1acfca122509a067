package control

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/storage"
)

// credentials resolves raw credentials (by their hash) in storage.
type credentials interface {
	AuthAPIKey(ctx context.Context, hash string) (storage.Principal, error)
	AuthPersonalToken(ctx context.Context, hash string) (int64, error)
}

// keyUses records when API keys were last used.
type keyUses interface {
	TouchAPIKeys(ctx context.Context, used map[string]time.Time) error
}

// memberships finds the membership a personal token acts through.
type memberships interface {
	MemberByUser(ctx context.Context, orgID, userID int64) (storage.Member, error)
}

// authenticator resolves credentials to principals.
//
// Reads (GET, HEAD) are served from a small cache for at most ttl, so an
// authenticated read costs no database round trip for the credential;
// writes always resolve against the database, so a revoked key or a
// lowered role takes effect on the very next write. Revocations made
// through this replica also drop the cache entry at once; other replicas
// stop serving reads on a revoked key within ttl.
//
// last_used_at is best-effort: uses are recorded in memory and flushed
// every touchEvery by one goroutine owned by the authenticator.
type authenticator struct {
	creds   credentials
	uses    keyUses
	members memberships
	ttl     time.Duration
	log     *slog.Logger

	mu    sync.Mutex
	cache map[string]cached
	used  map[string]time.Time

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

type cached struct {
	p       storage.Principal
	userID  int64 // personal token: the user, before an org is picked
	expires time.Time
}

const maxCached = 10000

func newAuthenticator(creds credentials, uses keyUses, members memberships, ttl, touchEvery time.Duration, log *slog.Logger) *authenticator {
	a := &authenticator{creds: creds, uses: uses, members: members, ttl: ttl, log: log, cache: map[string]cached{}, used: map[string]time.Time{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go a.flushLoop(touchEvery)
	return a
}

func (a *authenticator) flushLoop(every time.Duration) {
	defer close(a.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.flush(context.Background())
		}
	}
}

func (a *authenticator) flush(ctx context.Context) {
	a.mu.Lock()
	used := a.used
	a.used = map[string]time.Time{}
	a.mu.Unlock()
	if err := a.uses.TouchAPIKeys(ctx, used); err != nil && a.log != nil {
		a.log.Warn("flush api key last_used_at", "err", err, "keys", len(used))
	}
}

// close stops the flusher and writes the last batch.
func (a *authenticator) close(ctx context.Context) {
	a.once.Do(func() {
		close(a.stop)
		<-a.done
		a.flush(ctx)
	})
}

func (a *authenticator) lookup(k string, now time.Time) (cached, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.cache[k]
	if !ok || now.After(e.expires) {
		return cached{}, false
	}
	return e, true
}

func (a *authenticator) remember(k string, e cached) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= maxCached {
		clear(a.cache)
	}
	a.cache[k] = e
}

func (a *authenticator) touch(keyID string, now time.Time) {
	a.mu.Lock()
	a.used[keyID] = now
	a.mu.Unlock()
}

// ForgetKey drops cached entries of an API key (after revocation).
func (a *authenticator) ForgetKey(keyID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, e := range a.cache {
		if e.p.KeyID == keyID {
			delete(a.cache, k)
		}
	}
}

// ForgetAll drops the whole cache (after membership or role changes).
func (a *authenticator) ForgetAll() {
	a.mu.Lock()
	clear(a.cache)
	a.mu.Unlock()
}

var errNeedOrg = apiErr(http.StatusBadRequest, "The X-Service-Org header is required with a personal token.")

// principal authenticates the request. needOrg says whether the route acts
// on an organization: personal tokens must then name one in X-Service-Org.
func (a *authenticator) principal(c fiber.Ctx, needOrg bool) (*storage.Principal, error) {
	h := c.Get(fiber.HeaderAuthorization)
	scheme, cred, ok := strings.Cut(h, " ")
	cred = strings.TrimSpace(cred)
	if !ok || cred == "" {
		return nil, errUnauthenticated
	}
	read := c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead
	now := time.Now()
	ctx := c.Context()
	switch strings.ToLower(scheme) {
	case "bearer":
		if !strings.HasPrefix(cred, storage.APIKeyPrefix) {
			// Publishable keys (pk_live_) and anything else are refused here.
			return nil, errUnauthenticated
		}
		hash := storage.HashToken(cred)
		var p storage.Principal
		if e, ok := a.lookup(hash, now); ok && read {
			p = e.p
		} else {
			var err error
			if p, err = a.creds.AuthAPIKey(ctx, hash); err != nil {
				if errors.Is(err, storage.ErrNotFound) {
					return nil, errUnauthenticated
				}
				return nil, err
			}
			a.remember(hash, cached{p: p, expires: now.Add(a.ttl)})
		}
		a.touch(p.KeyID, now)
		return &p, nil
	case "token":
		hash := storage.HashToken(cred)
		orgHdr := strings.TrimSpace(c.Get("X-Service-Org"))
		ck := hash + "|" + orgHdr
		if e, ok := a.lookup(ck, now); ok && read {
			p := e.p
			if needOrg && p.OrgID == 0 {
				return nil, errNeedOrg
			}
			return &p, nil
		}
		uid, err := a.creds.AuthPersonalToken(ctx, hash)
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return nil, errUnauthenticated
			}
			return nil, err
		}
		p := storage.Principal{UserID: uid}
		if orgHdr != "" {
			orgID, err := strconv.ParseInt(orgHdr, 10, 64)
			if err != nil || orgID <= 0 {
				return nil, apiErr(http.StatusBadRequest, "X-Service-Org must be an organization id.")
			}
			m, err := a.members.MemberByUser(ctx, orgID, uid)
			if err != nil {
				if errors.Is(err, storage.ErrNotFound) {
					return nil, apiErr(http.StatusForbidden, "You are not a member of that organization.")
				}
				return nil, err
			}
			p.OrgID, p.MemberID, p.Role = orgID, m.ID, m.Role
		}
		a.remember(ck, cached{p: p, expires: now.Add(a.ttl)})
		if needOrg && p.OrgID == 0 {
			return nil, errNeedOrg
		}
		return &p, nil
	}
	return nil, errUnauthenticated
}
