package control

import (
	"context"
	"errors"

	"github.com/voiced/voiced/control/agents"
	"github.com/voiced/voiced/control/api"
	"github.com/voiced/voiced/storage"
)

// agentRefs is agentSchema with the check of the ids an agent names
// against its organization (agents.RefChecker).
type agentRefs struct {
	agentSchema
	knowledge *storage.KnowledgeStore
}

var _ agents.RefChecker[AgentConfig] = agentRefs{}

// CheckRefs implements agents.RefChecker: every knowledge base or
// document id of field must be one of the organization's.
func (a agentRefs) CheckRefs(ctx context.Context, orgID int64, c *AgentConfig, field string, f api.Fields, prefix string) error {
	var ids []string
	var find func(id string) error
	var what string
	switch field {
	case "knowledge_base_ids":
		ids, what = c.KnowledgeBaseIDs, "knowledge base"
		find = func(id string) error { _, err := a.knowledge.Base(ctx, orgID, id); return err }
	case "knowledge_document_ids":
		ids, what = c.KnowledgeDocumentIDs, "knowledge document"
		find = func(id string) error { _, err := a.knowledge.Document(ctx, orgID, id); return err }
	default:
		return nil
	}
	for _, id := range ids {
		err := find(id)
		if errors.Is(err, storage.ErrNotFound) {
			f.Add(prefix+field, `"`+id+`" is not a `+what+` of this organization.`)
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}
