// Package coord is the coordination contract between voiced control-plane replicas and
// media nodes: a node registry, placement of new sessions, commands to the node holding a
// live call, a durable event stream with consumer groups, org-scoped counters and rate
// limits, concurrency leases and short locks.
//
// Two implementations satisfy the same contract and run the same suite
// (package coordtest): [Local], in-process, for the all-in-one shape, and package
// rediscoord, for scale-out. Callers depend on the small interfaces declared here
// ([Registry], [Placer], [Commander], [EventStream], [Counter], [Limiter], [Semaphore],
// [Locker]); [Coordinator] embeds them all for wiring in cmd/voiced.
//
// # Node registry and placement
//
// Each media node calls [Registry.Heartbeat] every second with its load. A node whose last
// heartbeat is older than [Config.NodeTTL] (4 s by default) is dead: it is no longer
// listed, picked or sent commands. A draining node is listed but never picked.
// [Placer.Pick] uses power-of-two-choices ([Choose]): two distinct live, non-draining
// nodes are drawn at random and the less loaded one wins, which keeps the worst node's
// load close to the average without a global view or herd effects on the least loaded
// node.
//
// # Commands
//
// [Commander.Send] delivers a [Command] to the subscribers of one node. Commands are
// ordered per node and delivered only to subscriptions opened on that node id before the
// command was sent; a subscription survives short backend outages without losing
// commands (rediscoord keeps them in a per-node stream and resumes from the last id
// seen).
//
// # Events
//
// [EventStream] is at-least-once: an event read by a consumer of a group and not
// acknowledged within [Config.Visibility] is handed to the next consumer of the group
// that reads. Every event carries an id that is unique per event and identical on every
// redelivery, so consumers make their effects idempotent on [Event.ID] (for example a
// unique key on the id in the table they write).
//
// # Counters, limits, leases and locks
//
// Keys are chosen by the caller; [OrgKey] builds org-scoped keys. Each primitive has its
// own key space: the same key used with [Counter.Incr] and [Limiter.Allow] names two
// different things. Expiry decisions are made on one clock (the process clock for
// [Local], the Redis server clock for rediscoord), so replicas with skewed clocks agree.
package coord
