package knowledge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/voiced/voiced/control/knowledge"
	"github.com/voiced/voiced/storage"
	"github.com/voiced/voiced/storage/sqltest"
)

// TestCallSearchUnion: a live call searches the union of its agent's
// bases and documents, ranked as one corpus, and nothing outside it.
func TestCallSearchUnion(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, db *storage.DB) {
		a := newAPI(t, db)
		ctx := context.Background()
		inBase := a.text("Kettles", "The kettle warranty lasts two years from the date of purchase.")
		listed := a.text("Toasters", "The toaster warranty lasts one year; keep the receipt.")
		both := a.text("Blenders", "Blenders have a warranty of three years, a warranty you can extend.")
		a.text("Fridges", "The fridge warranty warranty warranty lasts five years.")
		kb := a.do("POST", "/v1/knowledge-bases", a.adminK, map[string]any{"name": "KB"}).obj(t)["id"].(string)
		r := a.do("POST", "/v1/knowledge-bases/"+kb+"/documents", a.adminK, map[string]any{"document_ids": []string{inBase, both}})
		require.Less(t, r.status, 300, string(r.body))

		names := func(ps []knowledge.Passage) []string {
			var out []string
			for _, p := range ps {
				out = append(out, p.DocumentName)
			}
			return out
		}
		s := a.srv.CallKnowledge()
		org := a.org.ID

		// The base and the list together: all three, best first, one
		// passage each, and never the document in neither.
		ps, err := s.SearchKnowledge(ctx, org, []string{kb}, []string{listed, both}, "warranty", 10)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"Kettles", "Toasters", "Blenders"}, names(ps))
		require.Equal(t, "Blenders", ps[0].DocumentName, "the chunk that says warranty twice ranks first across both lists")

		// Either list alone.
		ps, err = s.SearchKnowledge(ctx, org, []string{kb}, nil, "warranty", 10)
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"Kettles", "Blenders"}, names(ps))
		ps, err = s.SearchKnowledge(ctx, org, nil, []string{listed}, "warranty", 10)
		require.NoError(t, err)
		require.Equal(t, []string{"Toasters"}, names(ps))

		// Neither: nothing, not the whole org.
		ps, err = s.SearchKnowledge(ctx, org, nil, nil, "warranty", 10)
		require.NoError(t, err)
		require.Empty(t, ps)

		// The limit applies to the union.
		ps, err = s.SearchKnowledge(ctx, org, []string{kb}, []string{listed}, "warranty", 2)
		require.NoError(t, err)
		require.Len(t, ps, 2)

		// Another org's base finds nothing.
		ps, err = s.SearchKnowledge(ctx, org+1000, []string{kb}, []string{listed}, "warranty", 10)
		require.NoError(t, err)
		require.Empty(t, ps)
	})
}
