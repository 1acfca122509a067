package storage_test

import (
	"context"
	"testing"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// BenchmarkDebit measures ledger debits per second (the conditional UPDATE
// plus its ledger row, one transaction each) on each database: serial on
// one org, and parallel over distinct orgs (debits of one org serialize on
// its account row by design).
func BenchmarkDebit(b *testing.B) {
	for _, d := range sqltest.Dialects {
		b.Run(string(d)+"/serial", func(b *testing.B) {
			ctx := context.Background()
			s, org := benchOrg(b, sqltest.New(b, d))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if _, err := s.Billing.Post(ctx, org, storage.TxCallUsage, -1, "call", ""); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "debits/s")
		})
		b.Run(string(d)+"/parallel", func(b *testing.B) {
			ctx := context.Background()
			db := sqltest.New(b, d)
			s, _ := benchOrg(b, db)
			orgs := make(chan int64, 64)
			for range cap(orgs) {
				_, org := benchOrg(b, db)
				orgs <- org
			}
			b.SetParallelism(4)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				org := <-orgs
				for pb.Next() {
					if _, err := s.Billing.Post(ctx, org, storage.TxCallUsage, -1, "call", ""); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "debits/s")
		})
	}
}

func benchOrg(b *testing.B, db *storage.DB) (*storage.Store, int64) {
	b.Helper()
	ctx := context.Background()
	s, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32)})
	if err != nil {
		b.Fatal(err)
	}
	u, err := s.Orgs.CreateUser(ctx, "bench-"+storage.NewUUID()+"@example.com", "B", "Ench")
	if err != nil {
		b.Fatal(err)
	}
	o, err := s.Orgs.CreateOrg(ctx, u.ID, "Bench")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Billing.Post(ctx, o.ID, storage.TxAdjustment, 1<<40, "bench credit", ""); err != nil {
		b.Fatal(err)
	}
	return s, o.ID
}
