package keys_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/voiced/voiced/control/controltest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

func TestKeysAPI(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := controltest.New(t, db)

		t.Run("api keys", func(t *testing.T) {
			w := a.World()
			require.Equal(t, 403, a.Do("GET", "/v1/developer/api-keys", w.MembK, nil).Status)
			require.Equal(t, 403, a.Do("POST", "/v1/developer/api-keys", w.MembK, map[string]any{"name": "x"}).Status)
			r := a.Do("POST", "/v1/developer/api-keys", w.AdminK, nil)
			require.Equal(t, 201, r.Status, string(r.Body))
			k := r.Obj(t)
			require.Equal(t, "Default key", k["name"])
			raw := k["key"].(string)
			require.True(t, strings.HasPrefix(raw, "sk_live_"))
			require.Equal(t, raw[:15], k["key_prefix"])
			require.Regexp(t, `^sk_live_[0-9a-f]{7}$`, k["key_prefix"])
			require.Equal(t, true, k["is_active"])
			require.Nil(t, k["revoked_at"])
			require.Equal(t, 400, a.Do("POST", "/v1/developer/api-keys", w.AdminK, map[string]any{"name": ""}).Status)
			require.Equal(t, 400, a.Do("POST", "/v1/developer/api-keys", w.AdminK, map[string]any{"name": strings.Repeat("n", 121)}).Status)
			require.Equal(t, 400, a.Do("POST", "/v1/developer/api-keys", w.AdminK, "[1,2]").Status)

			require.Equal(t, 200, a.Do("GET", "/v1/members", "Bearer "+raw, nil).Status)
			l := a.Do("GET", "/v1/developer/api-keys", w.OwnerK, nil).List(t)
			require.Equal(t, k["id"], l[0]["id"], "newest first")
			for _, e := range l {
				require.NotContains(t, e, "key")
			}
			require.Equal(t, 404, a.Do("DELETE", "/v1/developer/api-keys/"+storage.NewUUID(), w.AdminK, nil).Status)
			require.Equal(t, 204, a.Do("DELETE", "/v1/developer/api-keys/"+k["id"].(string), w.AdminK, nil).Status)
			require.Equal(t, 401, a.Do("GET", "/v1/members", "Bearer "+raw, nil).Status, "revoked key")
			l = a.Do("GET", "/v1/developer/api-keys", w.OwnerK, nil).List(t)
			require.Equal(t, false, l[0]["is_active"])
			require.NotNil(t, l[0]["revoked_at"])
		})

		t.Run("concurrent key creation", func(t *testing.T) {
			w := a.World()
			const n = 16
			var wg sync.WaitGroup
			statuses := make([]int, n)
			keys := make([]string, n)
			for i := range n {
				wg.Go(func() {
					r := a.Do("POST", "/v1/developer/api-keys", w.AdminK, map[string]any{"name": fmt.Sprint("k", i)})
					statuses[i] = r.Status
					if r.Status == 201 {
						keys[i] = r.Obj(t)["key"].(string)
					}
				})
			}
			wg.Wait()
			seen := map[string]bool{}
			for i := range n {
				require.Equal(t, 201, statuses[i])
				require.False(t, seen[keys[i]])
				seen[keys[i]] = true
				require.Equal(t, 200, a.Do("GET", "/v1/members", "Bearer "+keys[i], nil).Status)
			}
			require.Len(t, a.Do("GET", "/v1/developer/api-keys", w.OwnerK, nil).List(t), n+3)
		})
	})
}
