package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/control/cluster"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestReaper: calls admitted through the internal API are their node's;
// when a node's heartbeats stop, a sweep (two reapers racing) ends each
// of its calls once, completed with node_lost, billed up to the node's
// last heartbeat with one ledger entry and one telephony.complete; a late
// finish from the node changes nothing; the calls of live nodes, young
// calls and the all-in-one's calls (no node) are left alone.
func TestReaper(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		p := newPlane(t, db)
		co := p.api.CallOrg("+14155550146")
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		var now atomic.Int64
		now.Store(time.Now().UnixNano())
		reg := coord.NewLocal(coord.Config{Now: func() time.Time { return time.Unix(0, now.Load()) }})
		defer reg.Close()
		beat := func(id string) { require.NoError(t, reg.Heartbeat(ctx, coord.Node{ID: id, Addr: "127.0.0.1:1"})) }
		client := func(node string) *cluster.Client {
			c, err := cluster.NewClient(cluster.ClientConfig{URL: p.url, Secret: secret, SpoolDir: p.spool, NodeID: node}, log)
			require.NoError(t, err)
			t.Cleanup(c.Close)
			return c
		}
		a, b := client("media-a"), client("media-b")
		beat("media-a")
		beat("media-b")
		lastA := time.Unix(0, now.Load())

		start := time.Now().Add(-40 * time.Second)
		admit := func(c *cluster.Client, at time.Time) int64 {
			adm, err := c.Admit(ctx, calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: co.Number, From: "+14155550199", At: at})
			require.NoError(t, err)
			return adm.CallID
		}
		onA := []int64{admit(a, start), admit(a, start)}
		young := admit(a, time.Now())
		onB := admit(b, start)
		mine := admit(p.client, start) // no node: serve's own
		call := func(id int64) storage.Call {
			c, err := p.api.Store.Calls.CallByID(ctx, id)
			require.NoError(t, err)
			return c
		}
		require.Equal(t, "media-a", *call(onA[0]).NodeID)
		require.Equal(t, "media-b", *call(onB).NodeID)
		require.Nil(t, call(mine).NodeID)

		r1 := cluster.NewReaper(reg, reg, p.api.Store.Calls, p.api.Srv.CallLog(), log)
		r2 := cluster.NewReaper(reg, reg, p.api.Store.Calls, p.api.Srv.CallLog(), log)
		n, err := r1.Sweep(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "both nodes are live")

		// media-a stops; media-b beats on. Past the registry's TTL, a is
		// gone.
		now.Add(int64(coord.DefaultNodeTTL + time.Second))
		beat("media-b")
		var wg sync.WaitGroup
		for _, r := range []*cluster.Reaper{r1, r2} {
			wg.Go(func() {
				_, err := r.Sweep(ctx)
				require.NoError(t, err)
			})
		}
		wg.Wait()
		count := func(q string, args ...any) int {
			var n int
			require.NoError(t, db.QueryRowContext(ctx, q, args...).Scan(&n))
			return n
		}
		completes := func(id int64) int {
			return count(`SELECT count(*) FROM webhook_events WHERE type = 'telephony.complete' AND data LIKE $1`, fmt.Sprintf(`%%"call_id":%d,%%`, id))
		}
		for _, id := range onA {
			c := call(id)
			require.Equal(t, storage.CallCompleted, c.Status, "call %d", id)
			require.Equal(t, calllog.EndReasonNodeLost, *c.EndReason)
			require.Contains(t, c.EndDetail, "media-a")
			require.WithinDuration(t, lastA, *c.EndTime, time.Second, "ended at a's last heartbeat")
			require.InDelta(t, lastA.Sub(start).Seconds(), float64(*c.DurationSeconds), 1)
			require.NotNil(t, c.BilledAt)
			require.Positive(t, *c.BillingTotalCents)
			require.Equal(t, 1, count(`SELECT count(*) FROM billing_transactions WHERE reference = $1`, fmt.Sprintf("call:%d", id)), "billed once")
			require.Equal(t, 1, completes(id), "one telephony.complete")
		}
		require.Equal(t, storage.CallInProgress, call(young).Status, "a call younger than the TTL waits")
		require.Equal(t, storage.CallInProgress, call(onB).Status, "a live node's call goes on")
		require.Equal(t, storage.CallInProgress, call(mine).Status, "the all-in-one's calls are never reaped")

		// The node comes back and finishes its call late: nothing changes.
		dur := *call(onA[0]).DurationSeconds
		require.NoError(t, a.Finish(ctx, onA[0], calllog.CallEnd{Status: "completed", Reason: "caller_hangup", At: time.Now()}))
		c := call(onA[0])
		require.Equal(t, calllog.EndReasonNodeLost, *c.EndReason)
		require.Equal(t, dur, *c.DurationSeconds)
		require.Equal(t, 1, completes(onA[0]))
		require.Equal(t, 1, count(`SELECT count(*) FROM billing_transactions WHERE reference = $1`, fmt.Sprintf("call:%d", onA[0])))

		// The young call, once old enough, goes the same way.
		r1.Grace = 0
		n, err = r1.Sweep(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, calllog.EndReasonNodeLost, *call(young).EndReason)
		require.Zero(t, *call(young).DurationSeconds, "billed up to a's last heartbeat, before it started: nothing")

		// Outbound and browser calls the control plane places are recorded
		// as the node's too; a realtime token claimed by a node, likewise.
		require.NoError(t, p.api.Srv.CallLog().AssignNode(ctx, mine, "media-c"))
		require.Equal(t, "media-c", *call(mine).NodeID)
		require.NoError(t, p.api.Srv.CallLog().AssignNode(ctx, onA[1], "media-c"))
		require.Equal(t, "media-a", *call(onA[1]).NodeID, "an ended call keeps its node")

		// A realtime session created on control and claimed by a node, and
		// an inline session a node admits, are the node's.
		p.api.Srv.Realtime().PlaceOn(func(context.Context) (string, error) { return "ws://127.0.0.1:1", nil })
		r := p.api.Do("POST", "/v1/realtime/sessions", co.OwnerK, map[string]any{"agent_id": co.AgentID})
		require.Equal(t, 201, r.Status, string(r.Body))
		sess := r.Obj(t)
		require.Nil(t, call(int64(sess["call_id"].(float64))).NodeID, "not claimed yet")
		g, err := client("media-r").ClaimRealtimeToken(ctx, sess["token"].(string))
		require.NoError(t, err)
		require.Equal(t, "media-r", *call(g.CallID).NodeID)
		inl, err := client("media-r").AdmitInline(ctx, co.Org.ID, json.RawMessage(`{"prompt":"p"}`), "")
		require.NoError(t, err)
		require.Equal(t, "media-r", *call(inl.CallID).NodeID)

		// Heartbeats of nodes long gone with no call left are forgotten.
		gone, err := p.api.Store.Calls.ForgetNodes(ctx, time.Now().Add(time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 1, gone, "media-a goes; media-b still holds a call")
	})
}

// TestNodeRestart: a node that comes back under the same id before the
// registry noticed its death says so at start (node-start): the calls it
// held before end with node_lost, its new ones go on.
func TestNodeRestart(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		p := newPlane(t, db)
		co := p.api.CallOrg("+14155550148")
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		reg := coord.NewLocal(coord.Config{})
		defer reg.Close()
		reaper := cluster.NewReaper(reg, reg, p.api.Store.Calls, p.api.Srv.CallLog(), log)
		h := cluster.NewServer(cluster.ServerConfig{Secret: secret, BlobDir: p.blobs}, cluster.Backend{Calls: p.local.Calls, Restarts: reaper}, log)
		front := httptest.NewServer(h)
		defer front.Close()
		client := func(node string) *cluster.Client {
			c, err := cluster.NewClient(cluster.ClientConfig{URL: front.URL, Secret: secret, SpoolDir: p.spool, NodeID: node}, log)
			require.NoError(t, err)
			t.Cleanup(c.Close)
			return c
		}
		admit := func(c *cluster.Client) int64 {
			adm, err := c.Admit(ctx, calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: co.Number, From: "+14155550199", At: time.Now().Add(-30 * time.Second)})
			require.NoError(t, err)
			return adm.CallID
		}
		status := func(id int64) (string, string) {
			c, err := p.api.Store.Calls.CallByID(ctx, id)
			require.NoError(t, err)
			reason := ""
			if c.EndReason != nil {
				reason = *c.EndReason
			}
			return c.Status, reason
		}
		require.NoError(t, reg.Heartbeat(ctx, coord.Node{ID: "media-z", Addr: "127.0.0.1:1"}))
		require.NoError(t, reg.Heartbeat(ctx, coord.Node{ID: "media-y", Addr: "127.0.0.1:2"}))
		before, other := admit(client("media-z")), admit(client("media-y"))
		_, err := reaper.Sweep(ctx) // records media-z's heartbeat
		require.NoError(t, err)

		// media-z crashes and restarts at once: still live in the registry.
		again := client("media-z")
		require.NoError(t, again.Started(ctx))
		st, reason := status(before)
		require.Equal(t, storage.CallCompleted, st)
		require.Equal(t, calllog.EndReasonNodeLost, reason)
		// It announces itself before taking calls: the new ones go on.
		after := admit(again)
		_, err = reaper.Sweep(ctx)
		require.NoError(t, err)
		st, _ = status(after)
		require.Equal(t, storage.CallInProgress, st)
		st, _ = status(other)
		require.Equal(t, storage.CallInProgress, st, "another node's call goes on")

		// A node must say who it is; a control plane without a reaper
		// takes the word and does nothing.
		anon, err := cluster.NewClient(cluster.ClientConfig{URL: front.URL, Secret: secret}, log)
		require.NoError(t, err)
		defer anon.Close()
		require.Error(t, anon.Started(ctx))
		plain, err := cluster.NewClient(cluster.ClientConfig{URL: p.url, Secret: secret, NodeID: "media-y"}, log)
		require.NoError(t, err)
		defer plain.Close()
		require.NoError(t, plain.Started(ctx))
		st, _ = status(other)
		require.Equal(t, storage.CallInProgress, st)
	})
}

// TestReaperLock: of two replicas running the reaper, one holds the lock
// and sweeps; when it stops, the other takes over within the lock's TTL
// and ends the calls of a node lost meanwhile.
func TestReaperLock(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		p := newPlane(t, db)
		co := p.api.CallOrg("+14155550147")
		logs := [2]*syncLog{{}, {}}
		reg := coord.NewLocal(coord.Config{NodeTTL: 300 * time.Millisecond})
		defer reg.Close()
		var reapers [2]*cluster.Reaper
		var stops [2]context.CancelFunc
		var done [2]chan struct{}
		for i := range reapers {
			reapers[i] = cluster.NewReaper(reg, reg, p.api.Store.Calls, p.api.Srv.CallLog(), slog.New(slog.NewTextHandler(logs[i], nil)))
			reapers[i].Every, reapers[i].LockTTL, reapers[i].Grace = 50*time.Millisecond, 300*time.Millisecond, 0
			var rctx context.Context
			rctx, stops[i] = context.WithCancel(ctx)
			done[i] = make(chan struct{})
			go func() { defer close(done[i]); reapers[i].Run(rctx) }()
		}
		defer func() {
			for i := range stops {
				stops[i]()
				<-done[i]
			}
		}()
		require.Eventually(t, func() bool {
			return logs[0].has("this replica reaps") || logs[1].has("this replica reaps")
		}, 5*time.Second, 10*time.Millisecond)
		holder := 0
		if logs[1].has("this replica reaps") {
			holder = 1
		}
		require.False(t, logs[1-holder].has("this replica reaps"), "one replica at a time")

		c, err := cluster.NewClient(cluster.ClientConfig{URL: p.url, Secret: secret, SpoolDir: p.spool, NodeID: "media-x"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.NoError(t, err)
		defer c.Close()
		// media-x beats every 50 ms until it dies.
		beating, dead := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(dead)
			for {
				_ = reg.Heartbeat(ctx, coord.Node{ID: "media-x", Addr: "127.0.0.1:1"})
				select {
				case <-beating:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
		adm, err := c.Admit(ctx, calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: co.Number, From: "+14155550199", At: time.Now().Add(-20 * time.Second)})
		require.NoError(t, err)
		time.Sleep(200 * time.Millisecond) // the holder records media-x's heartbeats
		cl, err := p.api.Store.Calls.CallByID(ctx, adm.CallID)
		require.NoError(t, err)
		require.Equal(t, storage.CallInProgress, cl.Status, "a live node's call goes on")

		// The holder stops (Run lets the lock go; a dead replica's would
		// lapse) and the node dies: the other replica ends the call.
		stops[holder]()
		<-done[holder]
		close(beating)
		<-dead
		require.Eventually(t, func() bool { return logs[1-holder].has("this replica reaps") }, 5*time.Second, 10*time.Millisecond)
		require.Eventually(t, func() bool {
			cl, err := p.api.Store.Calls.CallByID(ctx, adm.CallID)
			require.NoError(t, err)
			return cl.Status == storage.CallCompleted && cl.BilledAt != nil
		}, 5*time.Second, 20*time.Millisecond)
		cl, _ = p.api.Store.Calls.CallByID(ctx, adm.CallID)
		require.Equal(t, calllog.EndReasonNodeLost, *cl.EndReason)
		require.InDelta(t, 20, float64(*cl.DurationSeconds), 2, "billed up to the heartbeat the first holder recorded")
	})
}

// syncLog is a log sink tests read while it is written.
type syncLog struct {
	mu  sync.Mutex
	buf []byte
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	return len(p), nil
}

func (l *syncLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(string(l.buf), s)
}

// TestReaperOutbound: outbound calls (POST /v1/call) the control plane
// placed on a media node that is then lost. The node reported one call's
// answer through the internal API (Client.Answered, as the live call
// does when the callee answers): it ends completed with node_lost,
// billed from its answer (not from when it was placed) up to the node's
// last heartbeat. The other was still ringing: it ends failed with
// node_lost, at no charge. Each gets one telephony.complete.
func TestReaperOutbound(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		reg := coord.NewLocal(coord.Config{})
		defer reg.Close()
		d := cluster.NewDialer(reg, reg, secret)
		p := newPlane(t, db, control.WithDialer(d))
		d.SetOwners(p.api.Srv.CallLog())
		co := p.api.CallOrg("+14155550149")
		node, err := cluster.NewClient(cluster.ClientConfig{URL: p.url, Secret: secret, SpoolDir: p.spool, NodeID: "media-o"}, log)
		require.NoError(t, err)
		defer node.Close()
		require.NoError(t, reg.Heartbeat(ctx, coord.Node{ID: "media-o", Addr: "127.0.0.1:1"}))
		dials := make(chan int64, 2)
		require.NoError(t, cluster.FollowDials(ctx, reg, "media-o", secret, func(_ context.Context, o control.OutboundCall) error {
			dials <- o.CallID
			return nil
		}, node, log))
		call := func(id int64) storage.Call {
			c, err := p.api.Store.Calls.CallByID(ctx, id)
			require.NoError(t, err)
			return c
		}
		// Two calls placed on media-o 60 s ago (they have rung since).
		var ids []int64
		for range 2 {
			r := p.api.Do("POST", "/v1/call", co.OwnerK, map[string]any{"agent_id": co.AgentID, "from_number": co.Number, "to_number": "+14155550123"})
			require.Equal(t, 201, r.Status, string(r.Body))
			select {
			case id := <-dials:
				ids = append(ids, id)
			case <-time.After(10 * time.Second):
				t.Fatal("the node got no dial command")
			}
			_, err := db.ExecContext(ctx, `UPDATE calls SET start_time = start_time - 60000 WHERE id = $1`, ids[len(ids)-1])
			require.NoError(t, err)
		}
		answered, ringing := ids[0], ids[1]
		require.Equal(t, "media-o", *call(answered).NodeID)

		// The callee of the first answered 20 s ago; the node says so.
		answerAt := time.Now().Add(-20 * time.Second).Truncate(time.Millisecond)
		require.NoError(t, node.Answered(ctx, answered, answerAt))
		require.True(t, answerAt.Equal(*call(answered).AnsweredAt))
		require.Nil(t, call(ringing).AnsweredAt)
		// An inbound call has no callee to answer: refused through the API
		// as in process.
		adm, err := node.Admit(ctx, calllog.AdmitRequest{Direction: calllog.DirectionInbound, To: co.Number, From: "+14155550199", At: time.Now().Add(-30 * time.Second)})
		require.NoError(t, err)
		require.ErrorIs(t, node.Answered(ctx, adm.CallID, time.Now()), calllog.ErrBadEvent)

		// media-o's last heartbeat is recorded, then it dies.
		r := cluster.NewReaper(reg, reg, p.api.Store.Calls, p.api.Srv.CallLog(), log)
		_, err = r.Sweep(ctx)
		require.NoError(t, err)
		nodes, err := p.api.Store.Calls.CallNodes(ctx)
		require.NoError(t, err)
		require.Len(t, nodes, 1)
		last := *nodes[0].LastSeen
		require.NoError(t, reg.Leave(ctx, "media-o"))
		n, err := r.Sweep(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, n)

		count := func(q string, args ...any) int {
			var n int
			require.NoError(t, db.QueryRowContext(ctx, q, args...).Scan(&n))
			return n
		}
		for _, id := range []int64{answered, ringing} {
			require.Equal(t, 1, count(`SELECT count(*) FROM webhook_events WHERE type = 'telephony.complete' AND data LIKE $1`, fmt.Sprintf(`%%"call_id":%d,%%`, id)),
				"call %d: one telephony.complete", id)
			require.NotNil(t, call(id).BilledAt)
		}
		c := call(answered)
		require.Equal(t, storage.CallCompleted, c.Status)
		require.Equal(t, calllog.EndReasonNodeLost, *c.EndReason)
		require.InDelta(t, last.Sub(answerAt).Seconds(), float64(*c.DurationSeconds), 1, "from the answer to the last heartbeat")
		require.InDelta(t, 20, float64(*c.DurationSeconds), 2)
		require.Equal(t, 0.25, *c.BillableMinutes, "20 s, not the 60 s since it was placed")
		require.Positive(t, *c.BillingTotalCents)
		require.Equal(t, 1, count(`SELECT count(*) FROM billing_transactions WHERE reference = $1`, fmt.Sprintf("call:%d", answered)))

		c = call(ringing)
		require.Equal(t, storage.CallFailed, c.Status, "never answered")
		require.Equal(t, calllog.EndReasonNodeLost, *c.EndReason)
		require.Contains(t, c.EndDetail, "before the callee answered")
		require.Zero(t, *c.BillingTotalCents)
		require.Zero(t, *c.BillableMinutes)
		require.Zero(t, count(`SELECT count(*) FROM billing_transactions WHERE reference = $1`, fmt.Sprintf("call:%d", ringing)), "nothing debited")

		// The inbound call of the same node: billed from its start, as before.
		c = call(adm.CallID)
		require.Equal(t, storage.CallCompleted, c.Status)
		require.InDelta(t, last.Sub(c.StartTime).Seconds(), float64(*c.DurationSeconds), 1)
	})
}
