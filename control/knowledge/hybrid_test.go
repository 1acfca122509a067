package knowledge_test

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control"
	"github.com/voiced/voiced/control/knowledge"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// embedDims is the fake provider's vector length.
const embedDims = 32

// synonyms puts words that mean the same on one axis of the fake
// provider's vectors, as a real embedding model places them close; any
// other word lands on an axis by its hash.
var synonyms = map[string]int{
	"refund": 0, "refunds": 0, "refunded": 0, "reimburse": 0, "reimbursed": 0, "reimbursement": 0,
	"kettle": 1, "kettles": 1,
	"descaling": 2, "limescale": 2, "descale": 2,
}

// fakeVector is the fake provider's deterministic embedding of text: a
// count of its words per axis.
func fakeVector(text string) []float32 {
	v := make([]float32, embedDims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if ax, ok := synonyms[w]; ok {
			v[ax]++
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[3+int(h.Sum32()%(embedDims-3))] += 0.5
	}
	return v
}

// embedServer is a scripted OpenAI-compatible embeddings provider.
type embedServer struct {
	*httptest.Server
	mu       sync.Mutex
	down     bool
	requests int
	inputs   int
}

func newEmbedServer(t *testing.T) *embedServer {
	e := &embedServer{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.requests++
		down := e.down
		e.mu.Unlock()
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer ek-test" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		if down {
			w.Header().Set("retry-after-ms", "1")
			http.Error(w, `{"error":{"message":"model is loading"}}`, http.StatusServiceUnavailable)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "fake-embed" {
			http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
			return
		}
		e.mu.Lock()
		e.inputs += len(req.Input)
		e.mu.Unlock()
		data := make([]map[string]any, len(req.Input))
		for i, in := range req.Input {
			data[i] = map[string]any{"object": "embedding", "index": i, "embedding": fakeVector(in)}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": data})
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *embedServer) setDown(down bool) {
	e.mu.Lock()
	e.down = down
	e.mu.Unlock()
}

func (e *embedServer) counts() (requests, inputs int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests, e.inputs
}

func (e *embedServer) config(c *control.Config) {
	c.Embed = knowledge.EmbedConfig{BaseURL: e.URL + "/v1", APIKey: "ek-test", Model: "fake-embed"}
}

func (a *api) search(path string, body map[string]any) (mode string, results []map[string]any) {
	a.t.Helper()
	r := a.do("POST", path, a.membK, body)
	require.Equal(a.t, 200, r.status, string(r.body))
	var out struct {
		Mode    string           `json:"mode"`
		Results []map[string]any `json:"results"`
	}
	require.NoError(a.t, json.Unmarshal(r.body, &out))
	return out.Mode, out.Results
}

func (a *api) text(name, content string) string {
	a.t.Helper()
	r := a.do("POST", "/v1/knowledge/documents", a.adminK, map[string]any{"name": name, "content": content})
	require.Equal(a.t, 201, r.status, string(r.body))
	id := docs(a.t, r)[0]["id"].(string)
	require.Equal(a.t, "ready", a.await(id)["status"])
	return id
}

// TestHybridSearchFindsSynonyms: a passage that shares no word with the
// query is missed by BM25 and found by hybrid search; deleting its
// document takes it out of the in-process vector index.
func TestHybridSearchFindsSynonyms(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		e := newEmbedServer(t)
		a := newAPI(t, db, e.config)
		refunds := a.text("Returns", "Damaged parcels are refunded in full within fourteen days.")
		a.text("Shipping", "We ship worldwide with tracked couriers.")
		a.text("Hours", "The shop opens at nine and closes at five.")
		_, inputs := e.counts()
		require.Equal(t, 3, inputs, "every chunk was embedded")
		for _, id := range []string{refunds} {
			m, err := a.store.Knowledge.EmbedModel(context.Background(), id)
			require.NoError(t, err)
			require.Equal(t, "fake-embed", m)
		}

		const q = "How do I get reimbursed?"
		lexical, err := a.store.Knowledge.Search(context.Background(), a.org.ID, storage.KnowledgeQuery{Text: q, Limit: 5})
		require.NoError(t, err)
		require.Empty(t, lexical, "BM25 alone misses the passage")

		mode, res := a.search("/v1/knowledge/search", map[string]any{"query": q, "limit": 1})
		require.Equal(t, "hybrid", mode)
		require.Len(t, res, 1)
		require.Equal(t, refunds, res[0]["document_id"])
		require.Equal(t, "Returns", res[0]["document_name"])
		require.Contains(t, res[0]["text"], "refunded in full")

		// Filters hold for the vector side too.
		_, res = a.search("/v1/knowledge/search", map[string]any{"query": q, "document_ids": []string{refunds}})
		require.Len(t, res, 1)
		require.Equal(t, refunds, res[0]["document_id"])
		r := a.do("POST", "/v1/knowledge-bases", a.adminK, map[string]any{"name": "Empty"})
		require.Equal(t, 201, r.status, string(r.body))
		_, res = a.search("/v1/knowledge-bases/"+r.obj(t)["id"].(string)+"/search", map[string]any{"query": q})
		require.Empty(t, res, "an empty base finds nothing")

		require.Equal(t, 204, a.do("DELETE", "/v1/knowledge/documents/"+refunds, a.adminK, nil).status)
		_, res = a.search("/v1/knowledge/search", map[string]any{"query": q, "limit": 5})
		for _, h := range res {
			require.NotEqual(t, refunds, h["document_id"], "a deleted document leaves the vector index")
		}
	})
}

// TestHybridSearchRRF: the hybrid ranking is the reciprocal rank fusion
// (k = 60) of the BM25 ranking and the cosine ranking of the provider's
// vectors, both computed here independently.
func TestHybridSearchRRF(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		e := newEmbedServer(t)
		a := newAPI(t, db, e.config)
		texts := map[string]string{
			"A": "Kettle descaling: descale the kettle monthly with vinegar.",
			"B": "Limescale builds up in hard water areas; descale often.",
			"C": "Our kettle range: steel kettles, glass kettles and travel kettles for every kitchen counter and budget.",
			"D": "Descaling tablets are sold in packs of ten.",
			"E": "Kettles keep water hot; limescale shortens their life.",
			"F": "Opening hours are nine to five on weekdays.",
		}
		ids := map[string]string{}
		names := make([]string, 0, len(texts))
		for n := range texts {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ids[a.text(n, texts[n])] = n
		}
		const q = "kettle descaling"
		lexical, err := a.store.Knowledge.Search(context.Background(), a.org.ID, storage.KnowledgeQuery{Text: q, Limit: 20})
		require.NoError(t, err)
		score := map[string]float64{}
		for i, h := range lexical {
			score[ids[h.DocumentID]] += 1 / float64(60+i+1)
		}
		qv := fakeVector(q)
		cos := map[string]float64{}
		for n, txt := range texts {
			cos[n] = cosine(qv, fakeVector(txt))
		}
		byCos := append([]string(nil), names...)
		sort.SliceStable(byCos, func(i, j int) bool { return cos[byCos[i]] > cos[byCos[j]] })
		for i, n := range byCos {
			score[n] += 1 / float64(60+i+1)
		}
		want := append([]string(nil), names...)
		sort.SliceStable(want, func(i, j int) bool { return score[want[i]] > score[want[j]] })
		require.NotEqual(t, byCos[:3], want[:3], "the fusion differs from the vector ranking alone")

		mode, res := a.search("/v1/knowledge/search", map[string]any{"query": q, "limit": 6})
		require.Equal(t, "hybrid", mode)
		var got []string
		for i, h := range res {
			got = append(got, ids[h["document_id"].(string)])
			require.InDelta(t, score[got[i]], h["score"], 1e-9)
		}
		require.Equal(t, want, got)
	})
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// TestEmbeddingProviderDown: while the provider fails, an upload is kept
// and its ingestion retried with backoff; once the provider answers the
// document is ready with vectors. Search meanwhile answers by BM25 alone.
func TestEmbeddingProviderDown(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		e := newEmbedServer(t)
		e.setDown(true)
		a := newAPI(t, db, e.config)
		r := a.do("POST", "/v1/knowledge/documents", a.adminK, map[string]any{"name": "Returns", "content": "Damaged parcels are refunded in full."})
		require.Equal(t, 201, r.status, string(r.body))
		id := docs(t, r)[0]["id"].(string)
		deadline := time.Now().Add(10 * time.Second)
		for {
			reqs, _ := e.counts()
			d, err := a.store.Knowledge.Document(context.Background(), a.org.ID, id)
			require.NoError(t, err)
			if reqs > 0 && d.Status == storage.DocPending {
				break // failed once, queued again
			}
			require.True(t, time.Now().Before(deadline), "no failed attempt seen (status %s)", d.Status)
			time.Sleep(20 * time.Millisecond)
		}
		mode, _ := a.search("/v1/knowledge/search", map[string]any{"query": "refund"})
		require.Equal(t, "bm25", mode, "a query the provider cannot embed is answered by BM25")
		e.setDown(false)
		got := a.await(id) // the retry comes after the 5 s backoff
		require.Equal(t, "ready", got["status"])
		require.Equal(t, "Damaged parcels are refunded in full.", got["content"])
		m, err := a.store.Knowledge.EmbedModel(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, "fake-embed", m)
		mode, res := a.search("/v1/knowledge/search", map[string]any{"query": "reimbursed"})
		require.Equal(t, "hybrid", mode)
		require.Len(t, res, 1)
		require.Equal(t, id, res[0]["document_id"])
	})
}

// TestEmbeddingBackfill: documents ingested before the provider was
// configured are embedded when a server with one starts.
func TestEmbeddingBackfill(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		plain := newAPI(t, db)
		id := plain.text("Returns", "Damaged parcels are refunded in full.")
		mode, _ := plain.search("/v1/knowledge/search", map[string]any{"query": "refund"})
		require.Equal(t, "bm25", mode, "without a provider search says it is BM25 alone")
		plain.srv.Close()

		e := newEmbedServer(t)
		a := newAPI(t, db, e.config)
		deadline := time.Now().Add(20 * time.Second)
		for {
			m, err := a.store.Knowledge.EmbedModel(context.Background(), id)
			require.NoError(t, err)
			if m == "fake-embed" {
				break
			}
			require.True(t, time.Now().Before(deadline), "the old document was not embedded")
			time.Sleep(20 * time.Millisecond)
		}
		d, err := a.store.Knowledge.Document(context.Background(), plain.org.ID, id)
		require.NoError(t, err)
		require.Equal(t, storage.DocReady, d.Status)
		var found bool
		for range 50 {
			r := a.do("POST", "/v1/knowledge/search", plain.adminK, map[string]any{"query": "reimbursed"})
			require.Equal(t, 200, r.status, string(r.body))
			if res := r.obj(t)["results"].([]any); len(res) == 1 && res[0].(map[string]any)["document_id"] == id {
				found = true
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		require.True(t, found, "the backfilled document is found by meaning")
	})
}

// TestEmbeddingGivesUp: when the provider still fails on the last
// attempt, the document is kept ready without vectors (BM25 finds it)
// rather than failed, and a restart with the provider up embeds it.
func TestEmbeddingGivesUp(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		e := newEmbedServer(t)
		e.setDown(true)
		a := newAPI(t, db) // the org and the store; its own worker has no provider
		cfg := knowledge.Config{BlobDir: t.TempDir(), SigningKey: []byte("k"), MaxAttempts: 1,
			Embed: knowledge.EmbedConfig{BaseURL: e.URL + "/v1", APIKey: "ek-test", Model: "fake-embed"}}
		svc, err := knowledge.New(cfg, nil, a.store.Knowledge)
		require.NoError(t, err)
		a.srv.Close() // stop the API's worker so svc's claims the job
		created, err := a.store.Knowledge.CreateDocuments(ctx, a.org.ID, 0, []storage.KnowledgeDocument{{Name: "Returns", SourceType: "text", MimeType: "text/plain", Content: "Damaged parcels are refunded in full."}})
		require.NoError(t, err)
		id := created[0].ID
		did, err := svc.Worker().RunOnce(ctx)
		require.NoError(t, err)
		require.True(t, did)
		reqs, _ := e.counts()
		require.Positive(t, reqs, "the provider was asked")
		d, err := a.store.Knowledge.Document(ctx, a.org.ID, id)
		require.NoError(t, err)
		require.Equal(t, storage.DocReady, d.Status)
		require.EqualValues(t, 1, d.ChunkCount)
		m, err := a.store.Knowledge.EmbedModel(ctx, id)
		require.NoError(t, err)
		require.Empty(t, m, "stored without vectors")
		hits, mode, err := svc.Search(ctx, a.org.ID, storage.KnowledgeQuery{Text: "refunded", Limit: 5})
		require.NoError(t, err)
		require.Equal(t, knowledge.ModeBM25, mode, "the provider is still down for the query")
		require.Len(t, hits, 1)

		e.setDown(false)
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- svc.Run(rctx) }()
		deadline := time.Now().Add(20 * time.Second)
		for m != "fake-embed" {
			require.True(t, time.Now().Before(deadline), "not embedded after the restart")
			time.Sleep(20 * time.Millisecond)
			m, err = a.store.Knowledge.EmbedModel(ctx, id)
			require.NoError(t, err)
		}
		cancel()
		<-done
		hits, mode, err = svc.Search(ctx, a.org.ID, storage.KnowledgeQuery{Text: "reimbursed", Limit: 5})
		require.NoError(t, err)
		require.Equal(t, knowledge.ModeHybrid, mode)
		require.Len(t, hits, 1)
		require.Equal(t, id, hits[0].DocumentID)
	})
}
