package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	operator "github.com/voiced/voiced/control/admin"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// syncBuf is a goroutine-safe buffer for the server's output.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestInvalidFlagsAreOneLineNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"serve", "--http-addr", "nonsense"}, nil, "--http-addr"},
		{[]string{"serve", "--rtp-ports", "20000-10000"}, nil, "--rtp-ports"},
		{[]string{"serve", "--sip-addr", "x"}, nil, "--sip-addr"},
		{[]string{"serve", "--database-url", "mysql://x"}, nil, "--database-url"},
		{[]string{"serve", "--redis-url", "http://x"}, nil, "--redis-url"},
		{[]string{"serve", "--public-url", "ftp://x"}, nil, "--public-url"},
		{[]string{"serve", "--secret-key", "short"}, nil, "--secret-key"},
		{[]string{"serve", "--dev-credit-cents", "-5"}, nil, "--dev-credit-cents"},
		{[]string{"serve"}, map[string]string{"VOICED_RTP_PORTS": "abc"}, "--rtp-ports"},
		{[]string{"serve"}, map[string]string{"VOICED_DEV_CREDIT_CENTS": "lots"}, "--dev-credit-cents"},
		{[]string{"migrate", "--database-url", "oracle://x"}, nil, "--database-url"},
		{[]string{"serve", "--did-pool", "/nonexistent/pool.csv"}, nil, "--did-pool"},
		{[]string{"serve", "--products", "storm-base"}, nil, "--products"},
		{[]string{"serve", "--products", "storm-base=cheap"}, nil, "--products"},
		{[]string{"serve"}, map[string]string{"VOICED_PRODUCTS": ""}, "--products"},
		{[]string{"serve", "--audio-url-ttl", "forever"}, nil, "--audio-url-ttl"},
		{[]string{"serve", "--audio-url-ttl", "10s"}, nil, "--audio-url-ttl"},
		{[]string{"serve", "--realtime-delta-ms", "30"}, nil, "--realtime-delta-ms"},
		{[]string{"serve", "--realtime-delta-ms", "0"}, nil, "--realtime-delta-ms"},
		{[]string{"serve", "--huge-pages=maybe"}, nil, "huge-pages"},
		{[]string{"serve", "--drain-timeout", "soon"}, nil, "--drain-timeout"},
		{[]string{"serve", "--drain-timeout", "-1s"}, nil, "--drain-timeout"},
		{[]string{"serve"}, map[string]string{"VOICED_DRAIN_TIMEOUT": "48h"}, "--drain-timeout"},
		{[]string{"media", "--drain-timeout", "x"}, nil, "--drain-timeout"},
		{[]string{"serve", "--sip-max-calls", "-1"}, nil, "--sip-max-calls"},
		{[]string{"serve"}, map[string]string{"VOICED_HUGE_PAGES": "sometimes"}, "huge-pages"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			err := run(context.Background(), append(tc.args, "--data-dir", t.TempDir()), io.Discard, io.Discard)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestHelpListsEveryFlagWithItsEnv(t *testing.T) {
	var out bytes.Buffer
	require.ErrorIs(t, run(context.Background(), []string{"serve", "--help"}, &out, io.Discard), flag.ErrHelp)
	for _, f := range []string{"data-dir", "http-addr", "database-url", "redis-url", "sip-addr", "rtp-ports", "public-url", "dev-credit-cents", "did-pool", "products", "audio-url-ttl"} {
		require.Contains(t, out.String(), "-"+f)
		require.Contains(t, out.String(), "VOICED_"+strings.ToUpper(strings.ReplaceAll(f, "-", "_")))
	}
}

func TestAdminBootstrapAndCredit(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"admin", "bootstrap", "--data-dir", dir, "--dev-credit-cents", "250"}, &out, io.Discard))
	var b operator.Bootstrapped
	require.NoError(t, json.Unmarshal(out.Bytes(), &b), out.String())
	require.Positive(t, b.OrgID)
	require.Positive(t, b.UserID)
	require.Regexp(t, `^sk_live_[0-9a-f]{48}$`, b.APIKey)

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"admin", "add-credit", "--data-dir", dir, "--org-id", "1", "--cents", "50"}, &out, io.Discard))
	require.Contains(t, out.String(), `"balance_cents":300`)
	err := run(context.Background(), []string{"admin", "add-credit", "--data-dir", dir, "--org-id", "1", "--cents", "-1000"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "below zero")
	err = run(context.Background(), []string{"admin", "add-credit", "--data-dir", dir, "--org-id", "99", "--cents", "5"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "no organization 99")

	out.Reset()
	require.NoError(t, run(context.Background(), []string{"admin", "create-user", "--data-dir", dir, "--email", "dev@example.com"}, &out, io.Discard))
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"admin", "create-token", "--data-dir", dir, "--email", "dev@example.com"}, &out, io.Discard))
	require.Contains(t, out.String(), `"token":"pt_`)
	err = run(context.Background(), []string{"admin", "create-key", "--data-dir", dir, "--org-id", "1", "--email", "dev@example.com"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "not a member")
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"admin", "create-org", "--data-dir", dir, "--email", "dev@example.com", "--name", "Dev"}, &out, io.Discard))
	require.Contains(t, out.String(), `"org_id":2`)
}

// TestServeFirstUse runs serve on SQLite and on PostgreSQL: an empty
// database gets an owner, an org with starting credit and a printed key
// that lists the org; SIGTERM (context cancel) drains and returns nil.
func TestServeFirstUse(t *testing.T) {
	for _, tc := range []struct {
		d     migrations.Dialect
		redis bool
	}{{migrations.SQLite, false}, {migrations.Postgres, false}, {migrations.Postgres, true}} {
		name := string(tc.d)
		if tc.redis {
			name += "+redis"
		}
		t.Run(name, func(t *testing.T) {
			d := tc.d
			url, redisURL := "", ""
			if d == migrations.Postgres {
				url = sqltest.URL(t, d)
			}
			if tc.redis {
				redisURL = testRedisURL(t)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var stdout, stderr syncBuf
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, []string{"serve", "--data-dir", t.TempDir(), "--database-url", url, "--http-addr", "127.0.0.1:0", "--redis-url", redisURL}, &stdout, &stderr)
			}()
			addrRe := regexp.MustCompile(`http_addr=(127\.0\.0\.1:\d+)`)
			var addr string
			require.Eventually(t, func() bool {
				m := addrRe.FindStringSubmatch(stderr.String())
				if m != nil {
					addr = m[1]
				}
				return m != nil
			}, 20*time.Second, 20*time.Millisecond, "stderr: %s", stderr.String())
			key := regexp.MustCompile(`sk_live_[0-9a-f]+`).FindString(stdout.String())
			require.NotEmpty(t, key, stdout.String())

			req, _ := http.NewRequest("GET", "http://"+addr+"/v1/orgs/", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			require.Equal(t, 200, res.StatusCode)
			var orgs []map[string]any
			require.NoError(t, json.Unmarshal(body, &orgs))
			require.Len(t, orgs, 1)
			require.Equal(t, "Default", orgs[0]["name"])

			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop after cancel")
			}
			require.Contains(t, stderr.String(), "stopped")
			if tc.redis {
				require.Contains(t, stderr.String(), "coordination=redis")
			}
		})
	}
}

func testRedisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("VOICED_TEST_REDIS_URL")
	if u == "" {
		u = "redis://127.0.0.1:6379/0"
	}
	opt, err := redis.ParseURL(u)
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		sqltest.Unavailable(t, "Redis", err)
	}
	return u
}
