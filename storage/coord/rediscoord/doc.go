// Package rediscoord implements the coord contract on Redis for the scale-out shape,
// where control-plane replicas and media nodes share one Redis. It needs Redis 7.0 or
// later: XAUTOCLAIM there drops pending entries whose event was trimmed.
//
// Every key starts with Config.Prefix, so deployments (and tests) can share a Redis.
// Keys of the node registry and the per-node command streams carry the hash tag {reg}
// so the scripts that touch several of them work on Redis Cluster; other keys are
// single-key. All expiry decisions use the Redis server clock (TIME inside scripts) so
// replicas with skewed clocks agree on which node is dead or which lock expired.
//
// Commands go through a per-node stream rather than pub/sub: a subscriber resumes
// after the last id it saw, so a media node whose connection drops receives the
// commands sent meanwhile. Events are Redis Streams with consumer groups; XAUTOCLAIM
// hands entries idle for Visibility to the next reader.
//
// Layout, after the prefix:
//
//	{reg}:seen        sorted set  node id → last heartbeat (server ms)
//	{reg}:nodes       hash        node id → JSON of the node's load
//	{reg}:cmd:<node>  stream      commands for one node (MAXLEN ~CommandMaxLen)
//	ev:<stream>       stream      events, with one consumer group per group name
//	ctr:<key>         string      counter
//	lim:<key>         sorted set  sliding-window log: unique member → allowed at (ms)
//	sem:<key>         sorted set  lease token → expiry (ms)
//	lock:<key>        string      holder token, with PX expiry
package rediscoord
