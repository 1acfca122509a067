package scenarios

import (
	"context"
	"strings"

	"github.com/voiced/voiced/storage"
)

// IssueStore finds the scenarios promoted from issue reports.
type IssueStore interface {
	ScenariosFromIssues(ctx context.Context, orgID int64, traceIDs []string) ([]storage.Scenario, error)
}

// IssueLinks returns, for the issue reports traceIDs of org orgID, the
// test cases promoted from each (spec 2.10 linked_test_cases: id,
// agent_id, title, source, latest_verdict, created_at) and whether each
// report is regression-guarded: it has linked cases and all of them pass.
// Reports without cases are absent from both maps. It is
// issues.TestCaseLinks.
func IssueLinks(store IssueStore) func(ctx context.Context, orgID int64, traceIDs []string) (map[string][]map[string]any, map[string]bool, error) {
	return func(ctx context.Context, orgID int64, traceIDs []string) (map[string][]map[string]any, map[string]bool, error) {
		ss, err := store.ScenariosFromIssues(ctx, orgID, traceIDs)
		if err != nil {
			return nil, nil, err
		}
		// Keys are the callers' own spellings of the trace ids.
		key := make(map[string]string, len(traceIDs))
		for _, t := range traceIDs {
			key[strings.ToLower(t)] = t
		}
		links, guarded := map[string][]map[string]any{}, map[string]bool{}
		for _, s := range ss {
			if s.SourceIssueTraceID == nil {
				continue
			}
			t, ok := key[strings.ToLower(*s.SourceIssueTraceID)]
			if !ok {
				continue
			}
			if _, seen := guarded[t]; !seen {
				guarded[t] = true
			}
			guarded[t] = guarded[t] && s.LatestVerdict == "pass"
			links[t] = append(links[t], map[string]any{"id": s.ID, "agent_id": s.AgentID, "title": s.Title, "source": s.Source,
				"latest_verdict": s.LatestVerdict, "created_at": s.CreatedAt})
		}
		return links, guarded, nil
	}
}
