package coord

import "context"

// Command types understood by media nodes. The payload of each is defined by the node
// and the control plane together; coord carries it opaquely.
const (
	CommandHangup   = "hangup"
	CommandWhisper  = "whisper"
	CommandListen   = "listen"
	CommandTransfer = "transfer"
)

// Command is an instruction for a live call held by one media node.
type Command struct {
	// ID identifies the command; Send fills a random one when empty. Nodes may use it
	// to drop a command they already applied.
	ID string
	// CallID is the call the command applies to.
	CallID string
	// Type is one of the Command* constants.
	Type string
	// Data is the type-specific payload. Send copies it; receivers own what they get.
	Data []byte
}

// Commander carries commands from the control plane to the node holding a call.
type Commander interface {
	// Send queues cmd for the node nodeID. It returns [ErrUnknownNode] when the node is
	// not live. It returns once the command is stored, not when it is applied.
	Send(ctx context.Context, nodeID string, cmd Command) (id string, err error)
	// Commands opens a subscription to the commands sent to nodeID from now on, in the
	// order they were sent. The subscription lives until ctx is done or it is closed.
	Commands(ctx context.Context, nodeID string) (Subscription, error)
}

// Subscription delivers the commands addressed to one node. It owns a goroutine that
// Close stops and waits for.
type Subscription interface {
	// C returns the channel of commands. It is closed when the subscription ends.
	C() <-chan Command
	// Close ends the subscription and waits for its goroutine. It is idempotent.
	Close() error
}
