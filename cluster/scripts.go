package cluster

import "github.com/redis/go-redis/v9"

// The Lua scripts: each runs atomically in Redis, so no node ever reads a
// value and writes it back in two steps. Every script gets the key prefix
// as ARGV[1] and builds its keys under it; the prefix carries a hash tag
// so that every key lands on one slot. Times are microseconds since the
// Unix epoch (exact in Lua's doubles), durations microseconds, TTLs
// milliseconds.
//
// Keys under the prefix P:
//
//	P tat:SCOPE            a bucket's theoretical arrival time (GCRA), expires once full again;
//	                       a node's reservation of k tokens moves it on by k intervals
//	P conns:NODE           hash SCOPE -> connections NODE holds; expires LeaseTTL after NODE's last write
//	P node:NODE            NODE is alive; expires LeaseTTL after its last heartbeat
//	P nodes                set of node names that may hold connections
//	P sus:SCOPE|ACTION     hash until (µs), data (JSON): a suspension or throttle
//	P sus                  set of the SCOPE|ACTION members stored
//	P sus:version          counter bumped by every change to suspensions
//	P sup                  hash address -> JSON entry: the suppression list (suppress.go)
//	P sup:since            hash address -> the entry's Since (µs)
//	P sup:gone             hash address -> time of its last removal (µs)
//	P sup:version          counter bumped by every change to the suppression list
//	P sup:epoch            random name set by the first node to look: a new one means the list was lost

// takeScript: ARGV prefix, now, n, then n quadruples (scope, interval, k,
// tolerance). Reserves k tokens of every bucket whose k is above 0 (the
// others the node has cached), all or none. A bucket's time may be up to
// its tolerance (shaping.Tolerance) ahead of now; the reservation moves it
// on by k intervals from that time, or from now if it is past. Returns {1}
// or {0, index (1-based) of the bucket whose token comes last, the time
// it may be taken}.
var takeScript = redis.NewScript(`
local p, now, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local last, nxt = 0, 0
local tats = {}
for i = 1, n do
  local base = 4 * (i - 1) + 3
  if tonumber(ARGV[base + 3]) > 0 then
    local t = redis.call('GET', p .. 'tat:' .. ARGV[base + 1])
    if t then
      t = tonumber(t)
      tats[i] = t
      local at = t - tonumber(ARGV[base + 4])
      if at > now and at > nxt then last, nxt = i, at end
    end
  end
end
if last > 0 then return {0, last, nxt} end
for i = 1, n do
  local base = 4 * (i - 1) + 3
  local k = tonumber(ARGV[base + 3])
  if k > 0 then
    local from = now
    if tats[i] and tats[i] > now then from = tats[i] end
    local tat = from + k * tonumber(ARGV[base + 2])
    redis.call('SET', p .. 'tat:' .. ARGV[base + 1], string.format('%d', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
  end
end
return {1}
`)

// acquireScript: ARGV prefix, node, ttl, n, then n triples (scope, max,
// released). First counts released connections fewer for node in each
// scope (its releases not sent yet). Then sums every node's count of each
// scope; when all are below their max (0: no limit) counts one more for
// node in each, else returns the 1-based index of the first full one.
// Returns 0 on success.
var acquireScript = redis.NewScript(`
local p, me, ttl, n = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local mine = p .. 'conns:' .. me
for i = 1, n do
  local scope, rel = ARGV[2 + 3*i], tonumber(ARGV[4 + 3*i])
  if rel > 0 and redis.call('HINCRBY', mine, scope, -rel) <= 0 then redis.call('HDEL', mine, scope) end
end
local nodes = redis.call('SMEMBERS', p .. 'nodes')
for i = 1, n do
  local scope, max = ARGV[2 + 3*i], tonumber(ARGV[3 + 3*i])
  if max > 0 then
    local total = 0
    for _, node in ipairs(nodes) do
      local c = redis.call('HGET', p .. 'conns:' .. node, scope)
      if c then total = total + tonumber(c) end
    end
    if total >= max then
      if redis.call('EXISTS', mine) == 1 then redis.call('PEXPIRE', mine, ttl) end
      return i
    end
  end
end
for i = 1, n do redis.call('HINCRBY', mine, ARGV[2 + 3*i], 1) end
redis.call('PEXPIRE', mine, ttl)
redis.call('SADD', p .. 'nodes', me)
return 0
`)

// releaseScript: ARGV prefix, node, ttl, then pairs (scope, count).
// Counts count connections fewer for node in each scope.
var releaseScript = redis.NewScript(`
local p, me, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local mine = p .. 'conns:' .. me
for i = 4, #ARGV, 2 do
  if redis.call('HINCRBY', mine, ARGV[i], -tonumber(ARGV[i + 1])) <= 0 then redis.call('HDEL', mine, ARGV[i]) end
end
if redis.call('EXISTS', mine) == 1 then redis.call('PEXPIRE', mine, ttl) end
return 0
`)

// heartbeatScript: ARGV prefix, node, ttl, then pairs (scope, count).
// Marks node alive for ttl and replaces its connection counts with the
// given ones (the node's own, exact, counts); forgets nodes whose
// heartbeat expired. Returns the suspensions' version.
var heartbeatScript = redis.NewScript(`
local p, me, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local mine = p .. 'conns:' .. me
redis.call('DEL', mine)
for i = 4, #ARGV, 2 do redis.call('HSET', mine, ARGV[i], ARGV[i + 1]) end
if #ARGV >= 4 then redis.call('PEXPIRE', mine, ttl) end
redis.call('SET', p .. 'node:' .. me, '1', 'PX', ttl)
redis.call('SADD', p .. 'nodes', me)
for _, node in ipairs(redis.call('SMEMBERS', p .. 'nodes')) do
  if redis.call('EXISTS', p .. 'node:' .. node) == 0 then
    redis.call('SREM', p .. 'nodes', node)
    redis.call('DEL', p .. 'conns:' .. node)
  end
end
return tonumber(redis.call('GET', p .. 'sus:version') or '0')
`)

// putScript: ARGV prefix, member (SCOPE|ACTION), now, until, data,
// grace (ms). Stores the entry unless one of the member is in force at
// now, which is extended to until when that is later. Returns {created
// (1/0), the stored data, the stored until, version}.
var putScript = redis.NewScript(`
local p, m, now, untl = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local k, grace = p .. 'sus:' .. m, tonumber(ARGV[6])
local u = redis.call('HGET', k, 'until')
if u and tonumber(u) > now then
  u = tonumber(u)
  local v = tonumber(redis.call('GET', p .. 'sus:version') or '0')
  if untl > u then
    redis.call('HSET', k, 'until', ARGV[4])
    redis.call('PEXPIRE', k, math.floor((untl - now) / 1000) + grace)
    v = redis.call('INCR', p .. 'sus:version')
    u = untl
  end
  return {0, redis.call('HGET', k, 'data'), u, v}
end
redis.call('HSET', k, 'until', ARGV[4], 'data', ARGV[5])
redis.call('PEXPIRE', k, math.max(math.floor((untl - now) / 1000), 0) + grace)
redis.call('SADD', p .. 'sus', m)
return {1, ARGV[5], untl, redis.call('INCR', p .. 'sus:version')}
`)

// loadScript: ARGV prefix. Returns {version, member, until, data, ...}
// for every stored entry, dropping members whose entry expired.
var loadScript = redis.NewScript(`
local p = ARGV[1]
local out = {tonumber(redis.call('GET', p .. 'sus:version') or '0')}
for _, m in ipairs(redis.call('SMEMBERS', p .. 'sus')) do
  local e = redis.call('HMGET', p .. 'sus:' .. m, 'until', 'data')
  if e[1] and e[2] then
    table.insert(out, m); table.insert(out, tonumber(e[1])); table.insert(out, e[2])
  else
    redis.call('SREM', p .. 'sus', m)
  end
end
return out
`)

// removeScript: ARGV prefix, then members. Deletes them; returns
// {version, member, until, data, ...} for those that were stored.
var removeScript = redis.NewScript(`
local p = ARGV[1]
local out = {0}
for i = 2, #ARGV do
  local k = p .. 'sus:' .. ARGV[i]
  local e = redis.call('HMGET', k, 'until', 'data')
  if e[1] and e[2] then
    table.insert(out, ARGV[i]); table.insert(out, tonumber(e[1])); table.insert(out, e[2])
  end
  redis.call('DEL', k)
  redis.call('SREM', p .. 'sus', ARGV[i])
end
out[1] = redis.call('INCR', p .. 'sus:version')
return out
`)

// getScript: ARGV prefix, then members. Returns {member, until, data, ...}
// for those stored (Expire checks its own entries with it).
var getScript = redis.NewScript(`
local p = ARGV[1]
local out = {}
for i = 2, #ARGV do
  local e = redis.call('HMGET', p .. 'sus:' .. ARGV[i], 'until', 'data')
  if e[1] and e[2] then
    table.insert(out, ARGV[i]); table.insert(out, tonumber(e[1])); table.insert(out, e[2])
  end
end
return out
`)

// supChangeScript: ARGV prefix, then quadruples (op, address, time µs,
// JSON entry). op "+" adds the entry added at time unless the address was
// removed later or holds a later entry; "-" removes it unless its entry is
// later, and notes the removal. Returns the suppressions' new version.
var supChangeScript = redis.NewScript(`
local p = ARGV[1]
for i = 2, #ARGV, 4 do
  local op, a, t = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local gone = tonumber(redis.call('HGET', p .. 'sup:gone', a) or '-1')
  local since = tonumber(redis.call('HGET', p .. 'sup:since', a) or '-1')
  if op == '+' then
    if t > gone and t >= since then
      redis.call('HSET', p .. 'sup', a, ARGV[i + 3])
      redis.call('HSET', p .. 'sup:since', a, ARGV[i + 2])
      if gone >= 0 then redis.call('HDEL', p .. 'sup:gone', a) end
    end
  elseif t >= since then
    redis.call('HDEL', p .. 'sup', a)
    redis.call('HDEL', p .. 'sup:since', a)
    if t > gone then redis.call('HSET', p .. 'sup:gone', a, ARGV[i + 2]) end
  end
end
return redis.call('INCR', p .. 'sup:version')
`)
