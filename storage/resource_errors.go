package storage

import "errors"

// Rule violations of agents, numbers and calls, checked inside the
// transaction that would break them.
var (
	// ErrAgentNotInOrg means an agent id given for an assignment is not an
	// agent of the number's organization.
	ErrAgentNotInOrg = errors.New("storage: agent is not in the organization")
	// ErrAgentRequired means a publishable key in agent mode was moved or
	// copied to another organization without naming one of its agents.
	ErrAgentRequired = errors.New("storage: a key in agent mode needs an agent of the target organization")
	// ErrNoneAvailable means every candidate (such as a demo number) was
	// already taken.
	ErrNoneAvailable = errors.New("storage: none available")
	// ErrInUse means the row is still referenced (a VoIP connection with
	// numbers on it).
	ErrInUse = errors.New("storage: still in use")
	// ErrSameOrg means a transfer names the organization the row is in.
	ErrSameOrg = errors.New("storage: already in that organization")
	// ErrVoIPNumber means the operation applies to demo numbers only.
	ErrVoIPNumber = errors.New("storage: not allowed on a VoIP number")
	// ErrNoAgent means the organization has no agent.
	ErrNoAgent = errors.New("storage: the organization has no agent")
)
