package cluster_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/voiced/voiced/control/cluster"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// BenchmarkPing is the internal API's own cost per call a media node
// makes: one authenticated JSON round trip on a kept-alive loopback
// connection, client and server in one process (what a control-plane
// method adds on top of its own work).
func BenchmarkPing(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(cluster.NewServer(cluster.ServerConfig{Secret: secret}, cluster.Backend{}, log))
	defer srv.Close()
	c, err := cluster.NewClient(cluster.ClientConfig{URL: srv.URL, Secret: secret}, log)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Ping(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSweep is what the reaper costs the control plane every second
// while no node is lost: one registry read, one heartbeat upsert and one
// read of the nodes that hold calls, with 2,000 calls in progress on 20
// live nodes (PostgreSQL).
func BenchmarkSweep(b *testing.B) {
	ctx := context.Background()
	db := sqltest.New(b, migrations.Postgres)
	s, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32)})
	if err != nil {
		b.Fatal(err)
	}
	u, err := s.Orgs.CreateUser(ctx, "bench@example.com", "B", "S")
	if err != nil {
		b.Fatal(err)
	}
	org, err := s.Orgs.CreateOrg(ctx, u.ID, "Bench")
	if err != nil {
		b.Fatal(err)
	}
	reg := coord.NewLocal(coord.Config{NodeTTL: time.Hour})
	defer reg.Close()
	for n := range 20 {
		id := "media-" + strconv.Itoa(n)
		if err := reg.Heartbeat(ctx, coord.Node{ID: id, Addr: "127.0.0.1:1"}); err != nil {
			b.Fatal(err)
		}
		for range 100 {
			if _, err := s.Calls.CreateCall(ctx, storage.Call{OrgID: org.ID, Direction: storage.DirectionWeb, Status: storage.CallInProgress, NodeID: &id}); err != nil {
				b.Fatal(err)
			}
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := cluster.NewReaper(reg, reg, s.Calls, nil, log)
	b.ReportAllocs()
	for b.Loop() {
		if n, err := r.Sweep(ctx); err != nil || n != 0 {
			b.Fatal(n, err)
		}
	}
}
