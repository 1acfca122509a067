package knowledge

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestVectorIndexFollowsTheStore: the in-process index of an org picks up
// documents ingested, re-ingested and deleted through the store (as by any
// replica), and honours document filters.
func TestVectorIndexFollowsTheStore(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		st, err := storage.NewStore(db, storage.StoreConfig{SecretKey: bytes.Repeat([]byte{7}, 32)})
		require.NoError(t, err)
		u, err := st.Orgs.CreateUser(ctx, "v@example.com", "V", "V")
		require.NoError(t, err)
		org, err := st.Orgs.CreateOrg(ctx, u.ID, "Vectors")
		require.NoError(t, err)
		ks := st.Knowledge
		// ingest stores a text document whose chunks have the given vectors.
		ingest := func(id string, vecs ...[]float32) string {
			if id == "" {
				d, err := ks.CreateDocuments(ctx, org.ID, 0, []storage.KnowledgeDocument{{Name: "d", SourceType: "text", MimeType: "text/plain", Content: "x"}})
				require.NoError(t, err)
				id = d[0].ID
			} else {
				_, _, err := ks.UpdateDocument(ctx, org.ID, id, storage.DocumentChange{Content: ptr("y")})
				require.NoError(t, err)
			}
			job, ok, err := ks.ClaimIngestion(ctx, "w", time.Minute)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, id, job.DocumentID)
			job.EmbedModel = "m"
			chunks := make([]storage.KnowledgeChunk, len(vecs))
			for i, v := range vecs {
				chunks[i] = storage.KnowledgeChunk{Position: i, Text: "x", Vector: v}
			}
			require.NoError(t, ks.CompleteIngestion(ctx, job, "x", chunks))
			return id
		}
		x := newVectorIndex(ks, "m")
		top := func(q []float32, allowed map[string]bool) []storage.ChunkKey {
			hits, err := x.search(ctx, org.ID, q, 2, allowed)
			require.NoError(t, err)
			var out []storage.ChunkKey
			for _, h := range hits {
				out = append(out, h.key)
			}
			return out
		}
		a := ingest("", []float32{1, 0, 0}, []float32{0, 1, 0})
		b := ingest("", []float32{0.9, 0.1, 0})
		require.Equal(t, []storage.ChunkKey{{DocumentID: a, Position: 0}, {DocumentID: b, Position: 0}}, top([]float32{2, 0, 0}, nil))
		require.Equal(t, []storage.ChunkKey{{DocumentID: a, Position: 1}, {DocumentID: b, Position: 0}}, top([]float32{0, 3, 0}, nil))
		require.Equal(t, []storage.ChunkKey{{DocumentID: b, Position: 0}}, top([]float32{1, 0, 0}, map[string]bool{b: true}))

		// a is re-ingested with other vectors: the index follows.
		ingest(a, []float32{0, 0, 1})
		require.Equal(t, []storage.ChunkKey{{DocumentID: a, Position: 0}, {DocumentID: b, Position: 0}}, top([]float32{0, 0.2, 1}, nil))
		require.Equal(t, []storage.ChunkKey{{DocumentID: b, Position: 0}, {DocumentID: a, Position: 0}}, top([]float32{0, 1, 0}, nil), "a's old second chunk is gone")

		_, err = ks.DeleteDocument(ctx, org.ID, b)
		require.NoError(t, err)
		require.Equal(t, []storage.ChunkKey{{DocumentID: a, Position: 0}}, top([]float32{1, 0, 0}, nil))
		o := x.org(org.ID)
		require.Len(t, o.docs, 1)
		require.Len(t, o.free, 2, "the removed slots are reused")
		c := ingest("", []float32{1, 1, 0})
		require.Equal(t, []storage.ChunkKey{{DocumentID: c, Position: 0}, {DocumentID: a, Position: 0}}, top([]float32{1, 1, 0.1}, nil))
		require.Len(t, o.entries, 3, "no new slot while free ones remain")
		require.Len(t, o.free, 1)
	})
}

func ptr[T any](v T) *T { return &v }
