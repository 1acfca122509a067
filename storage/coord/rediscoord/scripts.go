package rediscoord

import "github.com/redis/go-redis/v9"

// nowMS is the Lua prologue reading the server clock in milliseconds. Redis 5+
// replicates script effects, so reading TIME before writing is allowed.
const nowMS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// heartbeatScript: KEYS seen, nodes; ARGV id, json. Returns the server time.
var heartbeatScript = redis.NewScript(nowMS + `
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
return now`)

// nodesScript: KEYS seen, nodes; ARGV ttl ms. Drops dead nodes (last heartbeat at or
// before now - ttl) and returns id, seen, json triples of the live ones.
var nodesScript = redis.NewScript(nowMS + `
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
for i = 1, #dead do
  redis.call('ZREM', KEYS[1], dead[i])
  redis.call('HDEL', KEYS[2], dead[i])
end
local live = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local out = {}
for i = 1, #live, 2 do
  local data = redis.call('HGET', KEYS[2], live[i])
  if data then
    out[#out + 1] = live[i]
    out[#out + 1] = live[i + 1]
    out[#out + 1] = data
  end
end
return out`)

// sendScript: KEYS seen, cmd stream; ARGV node id, ttl ms, maxlen, stream expiry ms,
// command id, call id, type, data. Appends the command only if the node is live, in
// the same atomic step, and returns 1; 0 for an unknown or dead node.
var sendScript = redis.NewScript(nowMS + `
local seen = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not seen or tonumber(seen) <= now - tonumber(ARGV[2]) then
  return 0
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*',
  'id', ARGV[5], 'call', ARGV[6], 'type', ARGV[7], 'data', ARGV[8])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return 1`)

// incrScript: KEYS counter; ARGV delta, ttl ms (0: none). Sets the ttl only when the
// key has none, so a window is fixed by its first increment.
var incrScript = redis.NewScript(`
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 and redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return v`)

// allowScript: KEYS log; ARGV n, per ms, unique member. Sliding-window log: drops
// entries at or before now - per, allows when fewer than n remain. Returns
// {allowed, remaining, retry after ms}.
var allowScript = redis.NewScript(nowMS + `
local n = tonumber(ARGV[1])
local per = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - per)
local count = redis.call('ZCARD', KEYS[1])
if count < n then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], per)
  return {1, n - count - 1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, 0, tonumber(oldest[2]) + per - now}`)

// leaseExpiry is the Lua tail keeping a semaphore key alive as long as its longest
// lease, so an abandoned key disappears on its own.
const leaseExpiry = `
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if #last > 0 then
  redis.call('PEXPIREAT', KEYS[1], last[2])
end
`

// acquireScript: KEYS leases; ARGV size, ttl ms, token. Returns 1 or 0 when full.
var acquireScript = redis.NewScript(nowMS + `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
` + leaseExpiry + `
return 1`)

// releaseScript: KEYS leases; ARGV token. Returns 1, or 0 if the lease is not held.
var releaseScript = redis.NewScript(nowMS + `
local exp = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
if not exp or tonumber(exp) <= now then
  return 0
end
return 1`)

// extendLeaseScript: KEYS leases; ARGV token, ttl ms. Returns 1, or 0 if not held.
var extendLeaseScript = redis.NewScript(nowMS + `
local exp = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not exp or tonumber(exp) <= now then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
` + leaseExpiry + `
return 1`)

// unlockScript: KEYS lock; ARGV token. Deletes the lock only if token holds it.
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

// extendLockScript: KEYS lock; ARGV token, ttl ms. Extends only if token holds it.
var extendLockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)
