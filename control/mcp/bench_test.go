package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/coord"
	"github.com/voiced/voiced/storage/sqltest"
)

// BenchmarkGetCall measures /v1/mcp tools/call get_call over loopback
// HTTP with keep-alive clients in parallel: the whole path, credential
// lookup, JSON-RPC, the store read and the view. calls/s is the figure
// of issue 28 (goal: at least 2,000). cpu_us/call is the process's CPU
// time (user+system, the client's included) per call: on a shared
// machine it varies far less than calls/s, and 2 cores / cpu_us/call is
// what two dedicated cores would serve.
func BenchmarkGetCall(b *testing.B) {
	for _, d := range sqltest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			store, err := storage.NewStore(sqltest.New(b, d), storage.StoreConfig{SecretKey: bytes.Repeat([]byte{7}, 32)})
			if err != nil {
				b.Fatal(err)
			}
			lim := coord.NewLocal(coord.Config{})
			defer lim.Close()
			srv, err := control.New(control.Config{PublicURL: "http://127.0.0.1"}, nil, store, lim)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			u, err := store.Orgs.CreateUser(ctx, "bench@example.com", "B", "Ench")
			if err != nil {
				b.Fatal(err)
			}
			org, err := store.Orgs.CreateOrg(ctx, u.ID, "Bench")
			if err != nil {
				b.Fatal(err)
			}
			_, key, err := store.Keys.CreateAPIKey(ctx, org.ID, u.ID, "bench")
			if err != nil {
				b.Fatal(err)
			}
			c, err := store.Calls.CreateCall(ctx, storage.Call{OrgID: org.ID, Direction: storage.DirectionOutbound, FromNumber: "+14155550100",
				ToNumber: "+14155550123", Status: storage.CallCompleted})
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go srv.App().Listener(ln, fiber.ListenConfig{DisableStartupMessage: true})
			defer srv.App().ShutdownWithTimeout(5 * time.Second)

			url := "http://" + ln.Addr().String() + "/v1/mcp"
			body := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_call","arguments":{"call_id":%d}}}`, c.ID))
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.SetParallelism(4)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					out, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode != 200 || !bytes.Contains(out, []byte(`"call_id"`)) {
						b.Errorf("status %d: %s", res.StatusCode, out)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu_us/call")
			client.CloseIdleConnections()
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
