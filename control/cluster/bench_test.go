package cluster_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/voiced/voiced/control/cluster"
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
