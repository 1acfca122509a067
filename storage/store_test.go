package storage_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func newStore(t *testing.T, db *storage.DB) *storage.Store {
	t.Helper()
	s, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32)})
	require.NoError(t, err)
	return s
}

// fixture: an org with an owner, an admin and a member.
type fixture struct {
	s                     *storage.Store
	org                   storage.Org
	owner, admin, member  storage.User
	ownerM, adminM, membM storage.Member
}

func newFixture(t *testing.T, db *storage.DB) fixture {
	t.Helper()
	ctx := context.Background()
	f := fixture{s: newStore(t, db)}
	tag := storage.NewUUID()[28:]
	var err error
	f.owner, err = f.s.Orgs.CreateUser(ctx, "Owner-"+tag+"@Example.com", "O", "Wner")
	require.NoError(t, err)
	f.admin, err = f.s.Orgs.CreateUser(ctx, "admin-"+tag+"@example.com", "A", "Dmin")
	require.NoError(t, err)
	f.member, err = f.s.Orgs.CreateUser(ctx, "member-"+tag+"@example.com", "M", "Ember")
	require.NoError(t, err)
	f.org, err = f.s.Orgs.CreateOrg(ctx, f.owner.ID, "Acme")
	require.NoError(t, err)
	f.ownerM, err = f.s.Orgs.MemberByUser(ctx, f.org.ID, f.owner.ID)
	require.NoError(t, err)
	f.adminM, err = f.s.Orgs.AddMember(ctx, f.org.ID, f.admin.ID, storage.RoleAdmin)
	require.NoError(t, err)
	f.membM, err = f.s.Orgs.AddMember(ctx, f.org.ID, f.member.ID, storage.RoleMember)
	require.NoError(t, err)
	return f
}

func TestStore(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()

		t.Run("users", func(t *testing.T) {
			s := newStore(t, db)
			u, err := s.Orgs.CreateUser(ctx, " Mixed@Case.io ", "a", "b")
			require.NoError(t, err)
			require.Equal(t, "mixed@case.io", u.Email)
			_, err = s.Orgs.CreateUser(ctx, "MIXED@case.io", "", "")
			require.ErrorIs(t, err, storage.ErrConflict)
			got, err := s.Orgs.UserByEmail(ctx, "mixed@CASE.io")
			require.NoError(t, err)
			require.Equal(t, u, got)
			_, err = s.Orgs.UserByID(ctx, 1<<40)
			require.ErrorIs(t, err, storage.ErrNotFound)
		})

		t.Run("members and roles", func(t *testing.T) {
			f := newFixture(t, db)
			ms, err := f.s.Orgs.Members(ctx, f.org.ID)
			require.NoError(t, err)
			require.Len(t, ms, 3)
			require.Equal(t, []storage.Role{storage.RoleOwner, storage.RoleAdmin, storage.RoleMember}, []storage.Role{ms[0].Role, ms[1].Role, ms[2].Role})

			require.ErrorIs(t, f.s.Orgs.RemoveMember(ctx, f.org.ID, f.admin.ID, f.adminM.ID), storage.ErrSelf)
			require.ErrorIs(t, f.s.Orgs.RemoveMember(ctx, f.org.ID, f.admin.ID, f.ownerM.ID), storage.ErrTargetOwner)
			require.ErrorIs(t, f.s.Orgs.RemoveMember(ctx, f.org.ID, f.member.ID, f.adminM.ID), storage.ErrRole)
			_, err = f.s.Orgs.SetRole(ctx, f.org.ID, f.admin.ID, f.membM.ID, storage.RoleAdmin)
			require.ErrorIs(t, err, storage.ErrRole)
			m, err := f.s.Orgs.SetRole(ctx, f.org.ID, f.owner.ID, f.membM.ID, storage.RoleAdmin)
			require.NoError(t, err)
			require.Equal(t, storage.RoleAdmin, m.Role)
			require.ErrorIs(t, f.s.Orgs.RemoveMember(ctx, f.org.ID, f.admin.ID, f.membM.ID), storage.ErrTargetAdmin)
			_, err = f.s.Orgs.SetRole(ctx, f.org.ID, f.owner.ID, f.ownerM.ID, storage.RoleMember)
			require.ErrorIs(t, err, storage.ErrTargetOwner)
			require.NoError(t, f.s.Orgs.RemoveMember(ctx, f.org.ID, f.owner.ID, f.membM.ID))
			require.ErrorIs(t, f.s.Orgs.RemoveMember(ctx, f.org.ID, f.owner.ID, f.membM.ID), storage.ErrNotFound)
		})

		t.Run("keys act for their creator and die with the membership", func(t *testing.T) {
			f := newFixture(t, db)
			k, raw, err := f.s.Keys.CreateAPIKey(ctx, f.org.ID, f.member.ID, "ci")
			require.NoError(t, err)
			require.Len(t, k.KeyPrefix, 15)
			require.Equal(t, raw[:15], k.KeyPrefix)
			p, err := f.s.Keys.AuthAPIKey(ctx, storage.HashToken(raw))
			require.NoError(t, err)
			require.Equal(t, storage.Principal{OrgID: f.org.ID, UserID: f.member.ID, MemberID: f.membM.ID, Role: storage.RoleMember, KeyID: k.ID}, p)
			require.NoError(t, f.s.Orgs.RemoveMember(ctx, f.org.ID, f.admin.ID, f.membM.ID))
			_, err = f.s.Keys.AuthAPIKey(ctx, storage.HashToken(raw))
			require.ErrorIs(t, err, storage.ErrNotFound)
			keys, err := f.s.Keys.APIKeys(ctx, f.org.ID)
			require.NoError(t, err)
			require.Len(t, keys, 1)
			require.NotNil(t, keys[0].RevokedAt)

			used := time.UnixMilli(time.Now().UnixMilli()).UTC()
			k2, raw2, err := f.s.Keys.CreateAPIKey(ctx, f.org.ID, f.owner.ID, "two")
			require.NoError(t, err)
			require.NoError(t, f.s.Keys.TouchAPIKeys(ctx, map[string]time.Time{k2.ID: used}))
			keys, err = f.s.Keys.APIKeys(ctx, f.org.ID)
			require.NoError(t, err)
			require.Equal(t, k2.ID, keys[0].ID, "newest first")
			require.Equal(t, used, *keys[0].LastUsedAt)
			require.NoError(t, f.s.Keys.RevokeAPIKey(ctx, f.org.ID, k2.ID))
			_, err = f.s.Keys.AuthAPIKey(ctx, storage.HashToken(raw2))
			require.ErrorIs(t, err, storage.ErrNotFound)
			require.ErrorIs(t, f.s.Keys.RevokeAPIKey(ctx, f.org.ID+1, k2.ID), storage.ErrNotFound)
		})

		t.Run("concurrent key creation", func(t *testing.T) {
			f := newFixture(t, db)
			const n = 20
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for range n {
				wg.Go(func() {
					_, _, err := f.s.Keys.CreateAPIKey(ctx, f.org.ID, f.owner.ID, "k")
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			keys, err := f.s.Keys.APIKeys(ctx, f.org.ID)
			require.NoError(t, err)
			require.Len(t, keys, n)
		})

		t.Run("ownership transfer races a role change", func(t *testing.T) {
			for i := range 10 {
				f := newFixture(t, db)
				var wg sync.WaitGroup
				var tErr, rErr error
				wg.Go(func() { tErr = f.s.Orgs.TransferOwnership(ctx, f.org.ID, f.owner.ID, f.adminM.ID) })
				wg.Go(func() { _, rErr = f.s.Orgs.SetRole(ctx, f.org.ID, f.owner.ID, f.adminM.ID, storage.RoleMember) })
				wg.Wait()
				require.NoError(t, tErr, "round %d", i)
				ms, err := f.s.Orgs.Members(ctx, f.org.ID)
				require.NoError(t, err)
				owners := 0
				for _, m := range ms {
					if m.Role == storage.RoleOwner {
						owners++
						require.Equal(t, f.admin.ID, m.UserID)
					}
				}
				require.Equal(t, 1, owners)
				old, err := f.s.Orgs.MemberByUser(ctx, f.org.ID, f.owner.ID)
				require.NoError(t, err)
				require.Equal(t, storage.RoleAdmin, old.Role)
				if rErr != nil {
					// The role change lost: it saw the old owner demoted or the target promoted.
					require.True(t, errors.Is(rErr, storage.ErrRole) || errors.Is(rErr, storage.ErrTargetOwner), "round %d: %v", i, rErr)
				}
			}
		})

		t.Run("transfer ownership rules", func(t *testing.T) {
			f := newFixture(t, db)
			require.ErrorIs(t, f.s.Orgs.TransferOwnership(ctx, f.org.ID, f.admin.ID, f.membM.ID), storage.ErrRole)
			require.ErrorIs(t, f.s.Orgs.TransferOwnership(ctx, f.org.ID, f.owner.ID, f.ownerM.ID), storage.ErrTargetOwner)
			require.ErrorIs(t, f.s.Orgs.TransferOwnership(ctx, f.org.ID, f.owner.ID, 1<<40), storage.ErrNotFound)
			require.NoError(t, f.s.Orgs.TransferOwnership(ctx, f.org.ID, f.owner.ID, f.membM.ID))
			m, err := f.s.Orgs.Member(ctx, f.org.ID, f.membM.ID)
			require.NoError(t, err)
			require.Equal(t, storage.RoleOwner, m.Role)
		})

		t.Run("leave and delete org", func(t *testing.T) {
			f := newFixture(t, db)
			require.ErrorIs(t, f.s.Orgs.Leave(ctx, f.org.ID, f.owner.ID), storage.ErrIsOwner)
			require.ErrorIs(t, f.s.Orgs.Leave(ctx, f.org.ID, f.member.ID), storage.ErrOnlyOrg)
			other, err := f.s.Orgs.CreateOrg(ctx, f.member.ID, "Side")
			require.NoError(t, err)
			require.NoError(t, f.s.Orgs.Leave(ctx, f.org.ID, f.member.ID))
			require.ErrorIs(t, f.s.Orgs.Leave(ctx, f.org.ID, f.member.ID), storage.ErrNotMember)

			require.ErrorIs(t, f.s.Orgs.DeleteOrg(ctx, other.ID, f.member.ID), storage.ErrOnlyOrg)
			require.ErrorIs(t, f.s.Orgs.DeleteOrg(ctx, f.org.ID, f.admin.ID), storage.ErrRole)
			_, err = f.s.Orgs.CreateOrg(ctx, f.owner.ID, "Second")
			require.NoError(t, err)
			require.ErrorIs(t, f.s.Orgs.DeleteOrg(ctx, f.org.ID, f.owner.ID), storage.ErrMembersRemain)
			require.NoError(t, f.s.Orgs.RemoveMember(ctx, f.org.ID, f.owner.ID, f.adminM.ID))
			require.NoError(t, f.s.Orgs.DeleteOrg(ctx, f.org.ID, f.owner.ID))
			_, err = f.s.Orgs.OrgForUser(ctx, f.org.ID, f.owner.ID)
			require.ErrorIs(t, err, storage.ErrNotFound)
		})

		t.Run("webhook secret is sealed and rotates only on put", func(t *testing.T) {
			f := newFixture(t, db)
			_, err := f.s.Webhooks.GetWebhook(ctx, f.org.ID)
			require.ErrorIs(t, err, storage.ErrNotFound)
			w1, err := f.s.Webhooks.SetWebhook(ctx, f.org.ID, "https://a.example/hook", false)
			require.NoError(t, err)
			w2, err := f.s.Webhooks.SetWebhook(ctx, f.org.ID, "https://b.example/hook", false)
			require.NoError(t, err)
			require.Equal(t, w1.Secret, w2.Secret)
			require.Equal(t, "https://b.example/hook", w2.URL)
			w3, err := f.s.Webhooks.SetWebhook(ctx, f.org.ID, "https://b.example/hook", true)
			require.NoError(t, err)
			require.NotEqual(t, w2.Secret, w3.Secret)
			var raw string
			require.NoError(t, db.QueryRow(`SELECT secret_enc FROM org_webhooks WHERE org_id = $1`, f.org.ID).Scan(&raw))
			require.NotContains(t, raw, w3.Secret)
		})

		t.Run("invites", func(t *testing.T) {
			f := newFixture(t, db)
			_, _, err := f.s.Orgs.CreateInvite(ctx, f.org.ID, f.admin.ID, "x@example.com", storage.RoleAdmin, time.Hour)
			require.ErrorIs(t, err, storage.ErrTargetAdmin)
			_, _, err = f.s.Orgs.CreateInvite(ctx, f.org.ID, f.member.ID, "x@example.com", storage.RoleMember, time.Hour)
			require.ErrorIs(t, err, storage.ErrRole)
			inv, tok, err := f.s.Orgs.CreateInvite(ctx, f.org.ID, f.admin.ID, "New-"+f.owner.Email, storage.RoleMember, time.Hour)
			require.NoError(t, err)
			require.Equal(t, "new-"+f.owner.Email, inv.Email)
			require.Equal(t, "pending", inv.Status(time.Now()))
			u, err := f.s.Orgs.CreateUser(ctx, inv.Email, "", "")
			require.NoError(t, err)
			m, err := f.s.Orgs.AcceptInvite(ctx, tok, u.ID)
			require.NoError(t, err)
			require.Equal(t, storage.RoleMember, m.Role)
			_, err = f.s.Orgs.AcceptInvite(ctx, tok, u.ID)
			require.ErrorIs(t, err, storage.ErrGone)
			_, err = f.s.Orgs.AcceptInvite(ctx, "inv_nope", u.ID)
			require.ErrorIs(t, err, storage.ErrNotFound)

			_, expired, err := f.s.Orgs.CreateInvite(ctx, f.org.ID, f.owner.ID, "late@example.com", storage.RoleAdmin, -time.Second)
			require.NoError(t, err)
			_, err = f.s.Orgs.AcceptInvite(ctx, expired, u.ID)
			require.ErrorIs(t, err, storage.ErrGone)

			inv3, tok3, err := f.s.Orgs.CreateInvite(ctx, f.org.ID, f.owner.ID, "r@example.com", storage.RoleMember, time.Hour)
			require.NoError(t, err)
			require.NoError(t, f.s.Orgs.RevokeInvite(ctx, f.org.ID, inv3.ID))
			require.ErrorIs(t, f.s.Orgs.RevokeInvite(ctx, f.org.ID, inv3.ID), storage.ErrGone)
			_, err = f.s.Orgs.AcceptInvite(ctx, tok3, u.ID)
			require.ErrorIs(t, err, storage.ErrGone)
			list, err := f.s.Orgs.Invites(ctx, f.org.ID)
			require.NoError(t, err)
			require.Len(t, list, 3)
		})

		t.Run("ledger never goes negative under concurrent debits", func(t *testing.T) {
			f := newFixture(t, db)
			_, err := f.s.Billing.Post(ctx, f.org.ID, storage.TxAdjustment, 100, "start", "")
			require.NoError(t, err)
			var ok, refused atomic.Int64
			var wg sync.WaitGroup
			for range 30 {
				wg.Go(func() {
					_, err := f.s.Billing.Post(ctx, f.org.ID, storage.TxCallUsage, -7, "call", "")
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, storage.ErrInsufficientFunds):
						refused.Add(1)
					default:
						t.Error(err)
					}
				})
			}
			wg.Wait()
			require.Equal(t, int64(14), ok.Load())
			require.Equal(t, int64(16), refused.Load())
			b, err := f.s.Billing.Balance(ctx, f.org.ID)
			require.NoError(t, err)
			require.Equal(t, int64(2), b)
			txs, err := f.s.Billing.Transactions(ctx, f.org.ID, 100, 0)
			require.NoError(t, err)
			require.Len(t, txs, 15)
			require.Equal(t, int64(2), txs[0].BalanceAfterCents, "newest first")
			_, err = f.s.Billing.Post(ctx, f.org.ID, storage.TxTopUp, 500, "pi", "pi_123")
			require.NoError(t, err)
			_, err = f.s.Billing.Post(ctx, f.org.ID, storage.TxTopUp, 500, "pi", "pi_123")
			require.ErrorIs(t, err, storage.ErrConflict)
			b, err = f.s.Billing.Balance(ctx, f.org.ID)
			require.NoError(t, err)
			require.Equal(t, int64(502), b)
		})
	})
}
