package knowledge

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/migrations"
	"github.com/voiced/voiced/storage/sqltest"
)

// benchText returns a generator of prose-like text: words drawn with
// Zipf frequencies from a vocabulary of 20,000 made-up words behind
// English's commonest words (so stop words are as frequent as in prose,
// and each document has the long tail of distinct terms real text has).
func benchText(seed uint64) func(words int) string {
	r := rand.New(rand.NewPCG(seed, 8))
	vocab := strings.Fields("the of and to a in is it you that he was for on are with as his they be at one have this from or had by word but what some we can out other were all there when up use your how said an each she which do their time if will way about many then them write would like so these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first who may down side been now find")
	letters := "aeioukltnmrsdpgbvz"
	for len(vocab) < 20000 {
		var w strings.Builder
		for range 3 + r.IntN(7) {
			w.WriteByte(letters[r.IntN(len(letters))])
		}
		vocab = append(vocab, w.String())
	}
	z := rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1))
	return func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[z.Uint64()])
		}
		return b.String()
	}
}

// benchMarkdown is size bytes of Markdown: sections under headings, each
// a few paragraphs of benchText.
func benchMarkdown(size int) []byte {
	r := rand.New(rand.NewPCG(7, 8))
	text := benchText(9)
	var b bytes.Buffer
	for sec := 0; b.Len() < size; sec++ {
		fmt.Fprintf(&b, "## Section %d %s\n\n", sec, text(2))
		for range 3 + r.IntN(4) {
			b.WriteString(text(40 + r.IntN(80)))
			b.WriteString("\n\n")
		}
	}
	return b.Bytes()[:size]
}

// benchPDF is a PDF of pages pages of 45 lines of 11 words of benchText.
func benchPDF(pages int) []byte {
	text := benchText(10)
	ps := make([][]string, pages)
	for i := range ps {
		for range 45 {
			ps[i] = append(ps[i], text(11))
		}
	}
	return PDFDoc(false, ps...)
}

// BenchmarkIngest measures ingestion throughput of the whole worker
// path: read the original from the blob directory, extract, chunk, and
// store and index the chunks in one transaction. markdown ingests a 1 MiB
// Markdown document per op (MB/s of text); pdf a 50-page PDF (pages/s,
// and MB/s of the file).
func BenchmarkIngest(b *testing.B) {
	md, pdf := benchMarkdown(1<<20), benchPDF(50)
	for _, d := range sqltest.Dialects {
		b.Run(string(d)+"/markdown", func(b *testing.B) { benchIngest(b, d, mimeMarkdown, ".md", md, 0) })
		b.Run(string(d)+"/pdf", func(b *testing.B) { benchIngest(b, d, mimePDF, ".pdf", pdf, 50) })
	}
}

func benchIngest(b *testing.B, d migrations.Dialect, mime, ext string, doc []byte, pages int) {
	ctx := context.Background()
	db := sqltest.New(b, d)
	store, err := storage.NewStore(db, storage.StoreConfig{SecretKey: make([]byte, 32)})
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
	b.SetBytes(int64(len(doc)))
	// Sustained throughput: b.N documents queued at once, timed from the
	// first claim until the last is ready and, on SQLite, its write-ahead
	// log is copied into the file (the checkpointer does that beside the
	// next job; the last one's is paid here).
	for range b.N {
		key := fmt.Sprintf("knowledge/%d/%s%s", org.ID, storage.NewUUID(), ext)
		os.MkdirAll(filepath.Join(dir, filepath.Dir(key)), 0o700)
		if err := os.WriteFile(filepath.Join(dir, key), doc, 0o600); err != nil {
			b.Fatal(err)
		}
		if _, err := store.Knowledge.CreateDocuments(ctx, org.ID, 0, []storage.KnowledgeDocument{{Name: "m", SourceType: "file", MimeType: mime, OriginalKey: key}}); err != nil {
			b.Fatal(err)
		}
	}
	c0 := benchCPU(ctx, db)
	b.ResetTimer()
	t0 := time.Now()
	// As Worker.Run works: ingestAtOnce runners claiming jobs.
	var g errgroup.Group
	var done atomic.Int64
	for range ingestAtOnce {
		g.Go(func() error {
			for {
				did, err := svc.worker.RunOnce(ctx)
				if err != nil || !did {
					return err
				}
				done.Add(1)
			}
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("ingest: %v", err)
	}
	if n := done.Load(); n != int64(b.N) {
		b.Fatalf("ingested %d of %d", n, b.N)
	}
	if d == migrations.SQLite {
		if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(t0)
	b.StopTimer()
	cpu, cpuOK := benchCPU(ctx, db).since(c0)
	ds, _ := store.Knowledge.Documents(ctx, org.ID, storage.DocumentFilter{Status: storage.DocReady})
	if len(ds) == 0 {
		b.Fatal("nothing ingested")
	}
	b.ReportMetric(float64(ds[0].ChunkCount), "chunks/doc")
	if cpuOK {
		// CPU time is steadier than wall time on a shared machine.
		b.ReportMetric(cpu.Seconds()*1e3/(float64(len(doc)*b.N)/1e6), "cpu-ms/MB")
	}
	if pages > 0 {
		b.ReportMetric(float64(pages*len(ds))/took.Seconds(), "pages/s")
	}
}

// cpuSample is the CPU time used so far by this process and, on
// PostgreSQL, by each server process serving the bench's database (read
// from /proc, so only when the server runs on this machine).
type cpuSample struct {
	self    time.Duration
	servers map[int]time.Duration
	ok      bool
}

func benchCPU(ctx context.Context, db *storage.DB) cpuSample {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuSample{}
	}
	c := cpuSample{self: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), servers: map[int]time.Duration{}, ok: true}
	if db.Dialect != migrations.Postgres {
		return c
	}
	rows, err := db.QueryContext(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return cpuSample{}
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return cpuSample{}
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return cpuSample{}
		}
		// Fields after the command's closing parenthesis: utime and stime
		// are the 12th and 13th, in clock ticks (100 a second on Linux).
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 13 {
			return cpuSample{}
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		c.servers[pid] = time.Duration(ut+st) * 10 * time.Millisecond
	}
	c.ok = rows.Err() == nil
	return c
}

// since is the CPU used between s0 and c (a server process that started
// in between counts whole; one that ended is lost, so pools must keep
// their connections).
func (c cpuSample) since(s0 cpuSample) (time.Duration, bool) {
	d := c.self - s0.self
	for pid, t := range c.servers {
		d += t - s0.servers[pid]
	}
	return d, c.ok && s0.ok
}
