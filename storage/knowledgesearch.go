package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode"

	"github.com/voiced/voiced/storage/migrations"
)

// KnowledgeQuery is a BM25 search over an org's chunks.
type KnowledgeQuery struct {
	Text  string
	Limit int
	// BaseIDs and DocumentIDs, when not empty, restrict the search to
	// documents in any of those bases / to those documents.
	BaseIDs, DocumentIDs []string
}

// KnowledgeHit is one chunk found by a search.
type KnowledgeHit struct {
	ChunkID                  int64
	DocumentID, DocumentName string
	Position                 int
	Context, Text            string
	// Score is higher for better matches: -bm25() on SQLite, ts_rank_cd
	// (normalized by log length) on PostgreSQL. Compare scores within one
	// response, not across databases.
	Score float64
}

// maxQueryTerms bounds the OR query a search runs.
const maxQueryTerms = 32

// QueryTerms splits a free-text query into the lowercase words a search
// matches (letters and digits; everything else separates), at most
// maxQueryTerms, without repeats.
func QueryTerms(q string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	seen := map[string]bool{}
	var out []string
	for _, w := range words {
		if !seen[w] && !stopWords[w] && len(out) < maxQueryTerms {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// stopWords are dropped from queries on both databases, so SQLite (whose
// FTS5 index keeps them) ranks as PostgreSQL's english configuration,
// which ignores them. It is PostgreSQL's english stop list.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
		her hers herself it its itself they them their theirs themselves what which who whom this that these those am is are was were
		be been being have has had having do does did doing a an the and but if or because as until while of at by for with about
		against between into through during before after above below to from up down in out on off over under again further then once
		here there when where why how all any both each few more most other some such no nor not only own same so than too very s t
		can will just don should now`) {
		m[w] = true
	}
	return m
}()

// TextHash is the hex SHA-256 of text with line endings and surrounding
// space normalized: two uploads of the same text hash alike.
func TextHash(text string) string {
	t := strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n"))
	if t == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(t))
	return hex.EncodeToString(sum[:])
}

// searchSQLiteTop ranks the whole index inside FTS5 and joins only its top
// $3 rows, which the outer query then filters by org, documents and bases.
// The survivors, in order, are exactly the best matches that pass the
// filters whenever at least limit of them survive, or the inner query
// returned every match (any better passing row would have been among the
// top rows too); otherwise Search falls back to searchSQLite, which joins
// every match before ranking. Joining every match was half the time of a
// selective query.
const searchSQLiteTop = `SELECT c.id, c.document_id, d.name, c.position, c.context, c.text, f.score
	FROM (SELECT rowid, -bm25(knowledge_fts) AS score FROM knowledge_fts WHERE knowledge_fts MATCH $1
		ORDER BY bm25(knowledge_fts) LIMIT $3) f
	JOIN knowledge_chunks c ON c.id = f.rowid JOIN knowledge_documents d ON d.id = c.document_id
	WHERE c.org_id = $2
	AND ($4 = 0 OR c.document_id IN (SELECT value FROM json_each($5)))
	AND ($6 = 0 OR c.document_id IN (SELECT m.document_id FROM knowledge_base_documents m WHERE m.base_id IN (SELECT value FROM json_each($7))))
	ORDER BY f.score DESC`

// topFetch is how many top rows searchSQLiteTop ranks per result asked.
const topFetch = 8

const searchSQLite = `SELECT c.id, c.document_id, d.name, c.position, c.context, c.text, -bm25(knowledge_fts) AS score
	FROM knowledge_fts JOIN knowledge_chunks c ON c.id = knowledge_fts.rowid JOIN knowledge_documents d ON d.id = c.document_id
	WHERE knowledge_fts MATCH $1 AND c.org_id = $2
	AND ($4 = 0 OR c.document_id IN (SELECT value FROM json_each($5)))
	AND ($6 = 0 OR c.document_id IN (SELECT m.document_id FROM knowledge_base_documents m WHERE m.base_id IN (SELECT value FROM json_each($7))))
	ORDER BY bm25(knowledge_fts) LIMIT $3`

const searchPostgres = `SELECT c.id, c.document_id, d.name, c.position, c.context, c.text, ts_rank_cd(c.tsv, q.q, 1) AS score
	FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id, to_tsquery('english', $1) AS q(q)
	WHERE c.tsv @@ q.q AND c.org_id = $2
	AND ($4 = 0 OR c.document_id IN (SELECT jsonb_array_elements_text($5::jsonb)))
	AND ($6 = 0 OR c.document_id IN (SELECT m.document_id FROM knowledge_base_documents m WHERE m.base_id IN (SELECT jsonb_array_elements_text($7::jsonb))))
	ORDER BY score DESC, c.id LIMIT $3`

// Search ranks the org's chunks against q by BM25 (any query word may
// match; rarer words and shorter chunks weigh more), best first. A query
// with no words finds nothing.
func (s *KnowledgeStore) Search(ctx context.Context, orgID int64, q KnowledgeQuery) ([]KnowledgeHit, error) {
	terms := QueryTerms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	query, match := searchPostgres, strings.Join(terms, " | ")
	if s.db.Dialect == migrations.SQLite {
		quoted := make([]string, len(terms))
		for i, t := range terms {
			quoted[i] = `"` + t + `"`
		}
		query, match = searchSQLite, strings.Join(quoted, " OR ")
	}
	docs, _ := json.Marshal(nonNil(q.DocumentIDs))
	bases, _ := json.Marshal(nonNil(q.BaseIDs))
	args := []any{match, orgID, q.Limit, len(q.DocumentIDs), string(docs), len(q.BaseIDs), string(bases)}
	if query == searchSQLite {
		top := args
		top[2] = q.Limit * topFetch
		hits, err := s.searchRows(ctx, searchSQLiteTop, top...)
		if err != nil {
			return nil, err
		}
		// Exact when enough survived the filters; see searchSQLiteTop.
		if len(hits) >= q.Limit {
			return hits[:q.Limit], nil
		}
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT rowid FROM knowledge_fts WHERE knowledge_fts MATCH $1 LIMIT $2)`,
			match, q.Limit*topFetch).Scan(&n); err != nil {
			return nil, translate(err)
		}
		if n < q.Limit*topFetch {
			return hits, nil // the top rows were every match
		}
		args[2] = q.Limit
	}
	return s.searchRows(ctx, query, args...)
}

func (s *KnowledgeStore) searchRows(ctx context.Context, query string, args ...any) ([]KnowledgeHit, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []KnowledgeHit
	for rows.Next() {
		var h KnowledgeHit
		if err := rows.Scan(&h.ChunkID, &h.DocumentID, &h.DocumentName, &h.Position, &h.Context, &h.Text, &h.Score); err != nil {
			return nil, translate(err)
		}
		out = append(out, h)
	}
	return out, translate(rows.Err())
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
