// Package agents serves the organization's agents (/v1/agents) and the
// product tiers they are billed at (/v1/agent-products).
//
// An agent has a deployed configuration and a draft. In a create or PATCH
// body, X sets both the deployed value and the draft, draft_X stages the
// draft only, and sending both is a 400; deploy promotes every draft_X to
// X. Every change to the deployed configuration (or the name) records a
// version whose snapshot is the agent as deployed, and a deploy whose
// drafts equal the deployed values changes nothing.
//
// What a configuration holds, its defaults and its rules belong to the
// agent configuration mapping, which this package reaches through
// Schema: it works on any configuration type by field name.
package agents
