package control

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/voiced/voiced/control/agents"
	"github.com/voiced/voiced/control/api"
)

// agentSchema is AgentConfig as control/agents sees it (agents.Schema):
// the mapping itself (fields, defaults, decoding) is agentconfig.go's, the
// rules are agentvalidate.go's.
type agentSchema struct {
	r *resources
	// refs find what the ids an agent names are; zero only where nothing
	// is saved (views).
	refs refStores
}

var _ agents.Schema[AgentConfig] = agentSchema{}

func (a agentSchema) Default() AgentConfig { return a.r.defaultAgentConfig() }

func (a agentSchema) Decode(raw []byte) (AgentConfig, error) { return a.r.decodeConfig(raw) }

func (agentSchema) Names() []string { return configFieldNames() }

func (agentSchema) Set(c *AgentConfig, name string, raw json.RawMessage) string {
	for _, f := range configFields {
		if f.name == name {
			return setField(c, f, raw)
		}
	}
	return "Unknown field."
}

func (a agentSchema) Validate(c *AgentConfig, f api.Fields, prefix string) {
	a.r.validateConfig(c, fields(f), prefix)
}

func (a agentSchema) CheckRefs(ctx context.Context, orgID int64, c, prev *AgentConfig, f api.Fields, prefix string) error {
	return checkRefs(ctx, a.refs, orgID, c, prev, fields(f), prefix)
}

func (agentSchema) Diff(x, y AgentConfig) []string { return diffConfig(x, y) }

func (agentSchema) Values(c AgentConfig) map[string]any {
	v := make(map[string]any, len(configFields)+2)
	cv := reflect.ValueOf(c)
	for _, f := range configFields {
		v[f.name] = cv.Field(f.index).Interface()
	}
	return v
}
