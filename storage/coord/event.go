package coord

import (
	"context"
	"time"
)

// Event is one entry of a durable event stream from media nodes to the control plane.
type Event struct {
	// ID is unique per event and identical on every redelivery: consumers deduplicate
	// on it. Publish fills a random one when empty; publishers that may retry a publish
	// set it themselves (for example "call.ended:<call id>") so the retry is a duplicate
	// the consumer drops rather than a second event.
	ID string
	// Type names the event ("call.started", "call.ended", ...).
	Type string
	// Data is the payload. Publish copies it; each delivery carries its own copy.
	Data []byte
}

// Delivery is an event handed to one consumer of a group.
type Delivery struct {
	Event
	// Receipt identifies this entry for [EventStream.Ack]. It is opaque.
	Receipt string
	// Deliveries counts how many times the entry was handed out in this group,
	// this one included: 1 on first delivery, more after redeliveries.
	Deliveries int
}

// ReadArgs selects what [EventStream.Read] reads.
type ReadArgs struct {
	// Stream names the event stream.
	Stream string
	// Group names the consumer group; it is created on first read and then sees every
	// event still retained in the stream, including those published before.
	Group string
	// Consumer names the reader within the group (for example node or replica id).
	Consumer string
	// Max is the largest batch returned; zero or less means 1.
	Max int
	// Wait is how long Read blocks when nothing is ready; zero returns at once. It is
	// capped by ctx's deadline.
	Wait time.Duration
}

// EventStream is a durable, at-least-once event stream with consumer groups. Every event
// is delivered to one consumer of each group; an event not acknowledged within
// [Config.Visibility] of its delivery is redelivered to whichever consumer of the group
// reads next, with the same [Event.ID].
type EventStream interface {
	// Publish appends ev to stream and returns its id.
	Publish(ctx context.Context, stream string, ev Event) (id string, err error)
	// Read returns up to a.Max deliveries for a.Consumer: first events of the group
	// whose visibility timeout has passed, then events never delivered to the group,
	// oldest first. It returns an empty batch when a.Wait passes with nothing ready.
	Read(ctx context.Context, a ReadArgs) ([]Delivery, error)
	// Ack marks the deliveries with these receipts as processed by the group, so they
	// are never redelivered. Unknown or already acknowledged receipts are ignored;
	// any consumer of the group may acknowledge.
	Ack(ctx context.Context, stream, group string, receipts ...string) error
}
