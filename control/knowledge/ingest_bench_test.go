package knowledge

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// benchMarkdown is size bytes of Markdown: sections under headings, each
// a few paragraphs of words.
func benchMarkdown(size int) []byte {
	r := rand.New(rand.NewPCG(7, 8))
	words := strings.Fields("kettle toaster refund parcel courier warranty descale filter voltage plug handle lid spout base cable order invoice customer support return exchange colour steel glass boil water temperature")
	var b bytes.Buffer
	for sec := 0; b.Len() < size; sec++ {
		fmt.Fprintf(&b, "## Section %d\n\n", sec)
		for range 3 + r.IntN(4) {
			for range 40 + r.IntN(80) {
				b.WriteString(words[r.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteString("\n\n")
		}
	}
	return b.Bytes()[:size]
}

// BenchmarkIngest measures ingestion throughput, in MB/s of text, of the
// whole worker path: read the original from the blob directory, extract
// (Markdown, parsed with goldmark), chunk, and store and index the chunks
// in one transaction. Each op ingests one 1 MiB document.
func BenchmarkIngest(b *testing.B) {
	for _, d := range sqltest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			store, err := storage.NewStore(sqltest.New(b, d), storage.StoreConfig{SecretKey: make([]byte, 32)})
			if err != nil {
				b.Fatal(err)
			}
			u, _ := store.Orgs.CreateUser(ctx, "bench-"+storage.NewUUID()+"@example.com", "B", "Ench")
			org, err := store.Orgs.CreateOrg(ctx, u.ID, "Bench")
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			svc, err := New(Config{BlobDir: dir, SigningKey: []byte("k")}, nil, store.Knowledge)
			if err != nil {
				b.Fatal(err)
			}
			doc := benchMarkdown(1 << 20)
			b.SetBytes(int64(len(doc)))
			chunks := 0
			for b.Loop() {
				b.StopTimer()
				key := fmt.Sprintf("knowledge/%d/%s.md", org.ID, storage.NewUUID())
				os.MkdirAll(filepath.Join(dir, filepath.Dir(key)), 0o700)
				if err := os.WriteFile(filepath.Join(dir, key), doc, 0o600); err != nil {
					b.Fatal(err)
				}
				if _, err := store.Knowledge.CreateDocuments(ctx, org.ID, 0, []storage.KnowledgeDocument{{Name: "m", SourceType: "file", MimeType: mimeMarkdown, OriginalKey: key}}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				did, err := svc.worker.RunOnce(ctx)
				if err != nil || !did {
					b.Fatalf("ingest: %v %v", did, err)
				}
			}
			b.StopTimer()
			ds, _ := store.Knowledge.Documents(ctx, org.ID, storage.DocumentFilter{Status: storage.DocReady})
			if len(ds) == 0 {
				b.Fatal("nothing ingested")
			}
			chunks = int(ds[0].ChunkCount)
			b.ReportMetric(float64(chunks), "chunks/doc")
		})
	}
}
