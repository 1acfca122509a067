package grading_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/ai/llm"
	"github.com/voiced/voiced/control/grading"
	"github.com/voiced/voiced/control/jobs/jobstest"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// The replica process of TestGradingReplicaKilledMidJob reads these.
const (
	replicaDBEnv    = "VOICED_TEST_GRADING_REPLICA_DB"
	replicaJudgeEnv = "VOICED_TEST_GRADING_REPLICA_JUDGE"
)

// replicaLease is the grading lease of both replicas: short, so the
// takeover is quick.
const replicaLease = 2 * time.Second

// TestGradingReplicaProcess is not a test: it is the control replica that
// TestGradingReplicaKilledMidJob starts (the os/exec helper-process
// pattern), a control plane whose grading worker runs until the process
// is killed. Run directly, it returns at once.
func TestGradingReplicaProcess(t *testing.T) {
	dbURL := os.Getenv(replicaDBEnv)
	if dbURL == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	db, err := storage.Open(ctx, storage.Config{URL: dbURL})
	require.NoError(t, err)
	defer db.Close()
	server(t, db, grading.Config{Model: llm.OpenAIConfig{BaseURL: os.Getenv(replicaJudgeEnv), Model: "judge-1"}, Poll: 20 * time.Millisecond, Lease: replicaLease})
	<-ctx.Done()
}

// TestGradingReplicaKilledMidJob: a control replica is killed (SIGKILL)
// while its grading worker waits on the judge; another replica takes the
// job over once the dead one's lease lapses and grades the call once: one
// grade, one call.graded event, two attempts, and nothing more after.
func TestGradingReplicaKilledMidJob(t *testing.T) {
	for _, d := range sqltest.Dialects {
		t.Run(string(d), func(t *testing.T) { testReplicaKilled(t, d) })
	}
}

func testReplicaKilled(t *testing.T, d migrations.Dialect) {
	ctx := context.Background()
	dbURL := sqltest.URL(t, d)
	db, err := storage.Open(ctx, storage.Config{URL: dbURL})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, db.Migrate(ctx, nil))

	// The judge: the first request hangs (the replica is mid-job when it
	// dies), the next ones get the scripted grade.
	j, judgeURL := newJudge(t)
	j.set(goodReply, 200)
	target, err := url.Parse(judgeURL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	var mu sync.Mutex
	requests := 0
	first, release := make(chan struct{}), make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		n := requests
		mu.Unlock()
		if n == 1 {
			close(first)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	t.Cleanup(func() { close(release) })

	a := server(t, db, grading.Config{NoWorker: true})
	o := a.CallOrg("+13105550420")
	cid := failedToolCall(t, a, o)

	replica := jobstest.Start(t, "TestGradingReplicaProcess", replicaDBEnv+"="+dbURL, replicaJudgeEnv+"="+front.URL+"/v1")
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		t.Fatalf("the replica never asked the judge; its output:\n%s", replica.Output())
	}
	replica.Kill(t)
	killed := time.Now()
	st, attempts, _, err := a.Store.Grading.GradeJobStatus(ctx, cid)
	require.NoError(t, err)
	require.Equal(t, "processing", st, "the dead replica holds the job")
	require.EqualValues(t, 1, attempts)
	require.Equal(t, 404, a.Do("GET", fmt.Sprintf("/v1/calls/%d/grade", cid), o.MembK, nil).Status, "nothing graded yet")

	// Another replica, on the same database, takes it over after the
	// dead one's lease.
	b := server(t, db, grading.Config{Model: llm.OpenAIConfig{BaseURL: front.URL + "/v1", Model: "judge-1"}, Poll: 20 * time.Millisecond, Lease: replicaLease})
	require.Eventually(t, func() bool {
		st, _, _, _ := b.Store.Grading.GradeJobStatus(ctx, cid)
		return st == "done"
	}, 15*time.Second, 20*time.Millisecond)
	t.Logf("graded by the other replica %v after the kill (lease %v)", time.Since(killed).Round(time.Millisecond), replicaLease)
	g := b.Do("GET", fmt.Sprintf("/v1/calls/%d/grade", cid), o.MembK, nil).Obj(t)
	require.Equal(t, "completed", g["status"])
	require.Equal(t, float64(82), g["score"])
	_, attempts, _, err = b.Store.Grading.GradeJobStatus(ctx, cid)
	require.NoError(t, err)
	require.EqualValues(t, 2, attempts)

	// Once: no second grade or event, now or after another lease.
	time.Sleep(replicaLease + 500*time.Millisecond)
	require.Len(t, events(t, b, o.Org.ID, "call.graded"), 1)
	var grades int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM call_grades WHERE call_id = $1`, cid).Scan(&grades))
	require.Equal(t, 1, grades)
	mu.Lock()
	require.Equal(t, 2, requests, "the judge was asked once by each replica")
	mu.Unlock()
}
