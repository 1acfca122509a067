package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/voiced/voiced/control/calllog"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
)

// ReaperStore is what the reaper reads and writes of the call log's
// storage (storage.CallStore): the nodes' last heartbeats and the calls
// each node holds.
type ReaperStore interface {
	NodesSeen(ctx context.Context, seen map[string]time.Time) error
	CallNodes(ctx context.Context) ([]storage.CallNode, error)
	NodeCalls(ctx context.Context, node string, limit int) ([]storage.Call, error)
	ForgetNodes(ctx context.Context, before time.Time) (int64, error)
}

// Reaper ends the calls of lost media nodes (docs/decisions.md, "Loss of
// a media node"). Each Sweep records the last heartbeat of every live
// node and ends each call in progress on a node that is no longer in the
// registry (its heartbeats stopped for the registry's TTL) as completed,
// end reason node_lost, at the node's last heartbeat, through the call
// log's Finish (an outbound call from its callee's answer; one never
// answered as failed, at no charge): billed once and reported with one
// *.complete webhook, whoever else finishes it (a second reaper, the node
// itself coming back).
//
// Run sweeps every second on the control replica that holds the reaper's
// lock; the others stand by and take over within the lock's TTL.
type Reaper struct {
	reg   coord.Registry
	lock  coord.Locker
	store ReaperStore
	fin   Finisher
	log   *slog.Logger
	// Every is the time between sweeps (1 s); LockTTL how long the lock
	// outlives its holder (4 s); Grace how old a call must be before its
	// node's absence counts (the registry's TTL: a node admits its first
	// calls just before its first heartbeat).
	Every, LockTTL, Grace time.Duration
}

// ReaperLock is the coord lock key of the replica that reaps.
const ReaperLock = "cluster:reaper"

// reapBatch bounds the calls of one lost node ended in one sweep.
const reapBatch = 500

// NewReaper returns the reaper of the nodes in reg, locking with lock,
// reading store and ending calls with fin (calllog.Log).
func NewReaper(reg coord.Registry, lock coord.Locker, store ReaperStore, fin Finisher, log *slog.Logger) *Reaper {
	return &Reaper{reg: reg, lock: lock, store: store, fin: fin, log: log, Every: time.Second, LockTTL: 4 * time.Second, Grace: coord.DefaultNodeTTL}
}

// Run sweeps every r.Every while this replica holds the reaper's lock,
// until ctx ends; then it lets the lock go.
func (r *Reaper) Run(ctx context.Context) {
	t := time.NewTicker(r.Every)
	defer t.Stop()
	token := ""
	for i := 0; ; i++ {
		token = r.hold(ctx, token)
		if token != "" {
			if _, err := r.Sweep(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("node reaper sweep", "err", err)
			}
			// Heartbeats of nodes long gone with no call left: once a
			// minute.
			if i%60 == 0 {
				if _, err := r.store.ForgetNodes(ctx, time.Now().Add(-10*time.Minute)); err != nil && ctx.Err() == nil {
					r.log.Warn("node reaper: forget old nodes", "err", err)
				}
			}
		}
		select {
		case <-ctx.Done():
			if token != "" {
				uctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = r.lock.Unlock(uctx, ReaperLock, token)
				cancel()
			}
			return
		case <-t.C:
		}
	}
}

// hold keeps or takes the reaper's lock and returns its token ("" when
// another replica holds it).
func (r *Reaper) hold(ctx context.Context, token string) string {
	if token != "" {
		err := r.lock.ExtendLock(ctx, ReaperLock, token, r.LockTTL)
		if err == nil {
			return token
		}
		if ctx.Err() == nil {
			r.log.Warn("node reaper: lock lost", "err", err)
		}
	}
	tok, err := r.lock.Lock(ctx, ReaperLock, r.LockTTL)
	switch {
	case err == nil:
		r.log.Info("node reaper: this replica reaps lost media nodes")
		return tok
	case !errors.Is(err, coord.ErrLocked) && ctx.Err() == nil:
		r.log.Warn("node reaper: lock", "err", err)
	}
	return ""
}

// Sweep records the live nodes' heartbeats and ends the calls of the
// nodes that are gone; it reports how many calls it ended. Safe to run
// on several replicas at once: each call ends once.
func (r *Reaper) Sweep(ctx context.Context) (int, error) {
	nodes, err := r.reg.Nodes(ctx)
	if err != nil {
		return 0, err
	}
	seen := make(map[string]time.Time, len(nodes))
	for _, n := range nodes {
		seen[n.ID] = n.Seen
	}
	if err := r.store.NodesSeen(ctx, seen); err != nil {
		return 0, fmt.Errorf("record heartbeats: %w", err)
	}
	owners, err := r.store.CallNodes(ctx)
	if err != nil {
		return 0, err
	}
	ended := 0
	for _, o := range owners {
		if _, live := seen[o.ID]; live {
			continue
		}
		n, err := r.reap(ctx, o, r.Grace)
		ended += n
		if err != nil {
			return ended, err
		}
	}
	return ended, nil
}

// Restarted ends every call in progress on node, which has just
// started afresh (Client.Started): it holds none of them any more. They
// are billed up to its last heartbeat, as if it had been lost: the one
// the registry still lists (its earlier life's, the new one has not
// beaten yet), else the last recorded.
func (r *Reaper) Restarted(ctx context.Context, node string) (int, error) {
	owners, err := r.store.CallNodes(ctx)
	if err != nil {
		return 0, err
	}
	live, err := r.reg.Nodes(ctx)
	if err != nil {
		return 0, err
	}
	ended := 0
	for _, o := range owners {
		if o.ID != node {
			continue
		}
		for _, n := range live {
			if n.ID == node && (o.LastSeen == nil || n.Seen.After(*o.LastSeen)) {
				seen := n.Seen
				o.LastSeen = &seen
			}
		}
		for {
			n, err := r.reap(ctx, o, 0)
			ended += n
			if err != nil || n < reapBatch {
				return ended, err
			}
		}
	}
	return ended, nil
}

// reap ends the calls in progress on lost node o that are at least grace
// old.
func (r *Reaper) reap(ctx context.Context, o storage.CallNode, grace time.Duration) (int, error) {
	calls, err := r.store.NodeCalls(ctx, o.ID, reapBatch)
	if err != nil {
		return 0, err
	}
	now, ended := time.Now(), 0
	for _, c := range calls {
		if now.Sub(c.StartTime) < grace {
			continue
		}
		// Billed up to the node's last heartbeat; a node never seen (it
		// died before a sweep saw it) up to the call's last record.
		at, last := c.UpdatedAt, "never seen by the reaper"
		if o.LastSeen != nil {
			at, last = *o.LastSeen, "last at "+o.LastSeen.UTC().Format(time.RFC3339)
		}
		end := calllog.CallEnd{Status: storage.CallCompleted, Reason: calllog.EndReasonNodeLost, At: at,
			Detail: fmt.Sprintf("media node %s stopped heartbeating (%s)", o.ID, last)}
		if c.Direction == storage.DirectionOutbound && c.AnsweredAt == nil {
			// Still ringing (or its answer never reported): it ends failed,
			// at no charge. An answered one is billed from its answer
			// (Finish).
			end.Status = storage.CallFailed
			end.Detail += ", before the callee answered"
		}
		if err := r.fin.Finish(ctx, c.ID, end); err != nil {
			if ctx.Err() != nil {
				return ended, err
			}
			r.log.Error("call of a lost media node not ended", "call_id", c.ID, "node_id", o.ID, "err", err)
			continue
		}
		ended++
		r.log.Info("call ended: media node lost", "call_id", c.ID, "node_id", o.ID, "billed_to", at.UTC().Format(time.RFC3339Nano))
	}
	return ended, nil
}
