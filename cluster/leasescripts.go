package cluster

import "github.com/redis/go-redis/v9"

// The scripts of queue owner leases (lease.go), under the same prefix and
// conventions as scripts.go. Keys under the prefix P, per queue identity
// ID:
//
//	P own:ID           the lease: "NODE TOKEN EXPIRES" (µs), with PX the lease's TTL
//	P own:ID:fence     the fencing token counter: raised by every takeover
//	P own:ID:lapse     when the last lease ran or runs out (µs); -1: released
//	                   with the queue empty (nothing to adopt until its owner
//	                   takes it again)
//	P own:ID:release   an operator asked the adopter to let the queue go
//	P owners           hash ID -> "NODE TOKEN own|adopted PATH": who holds what
//
// A lease counts as held while its key exists and its EXPIRES is after
// the caller's now: Redis's expiry and the nodes' clocks (in step, NTP)
// agree on it, and tests drive it with a fake clock.

// leaseCommon: the helpers every lease script starts with.
const leaseCommon = `
local p, id, node, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local k = p .. 'own:' .. id
local function holder()
  local v = redis.call('GET', k)
  if not v then return nil end
  local n, t, e = string.match(v, '^(%S+) (%d+) (%d+)$')
  if not n then return nil end
  return n, tonumber(t), tonumber(e)
end
local function take(ttl, tok, kind, path)
  local exp = now + ttl * 1000
  redis.call('SET', k, node .. ' ' .. tok .. ' ' .. string.format('%d', exp), 'PX', ttl)
  redis.call('SET', k .. ':lapse', string.format('%d', exp))
  redis.call('HSET', p .. 'owners', id, node .. ' ' .. tok .. ' ' .. kind .. ' ' .. path)
end
local function raise(floor)
  local tok = redis.call('INCR', k .. ':fence')
  if tok <= floor then
    tok = floor + 1
    redis.call('SET', k .. ':fence', tok)
  end
  return tok
end
`

// leaseAcquireScript: ARGV prefix, id, node, now, ttl (ms), floor, path. The
// node takes the lease of its own queue unless another node holds it;
// every take raises the token (above floor, the newest the file carries).
// Returns {1, node, token} or {0, holder, holder's token}.
var leaseAcquireScript = redis.NewScript(leaseCommon + `
local n, t, e = holder()
if n and n ~= node and e > now then return {0, n, t} end
local tok = raise(tonumber(ARGV[6]))
redis.call('DEL', k .. ':release')
take(tonumber(ARGV[5]), tok, 'own', ARGV[7])
return {1, node, tok}
`)

// leaseAdoptScript: ARGV prefix, id, node, now, ttl (ms), after (µs), path.
// Takes the lease of another node's queue if nobody holds it and the last
// one ran out at least after ago. A queue never leased starts its wait
// now; one released empty is left alone. Returns as leaseAcquireScript, with
// {0, "", 0} when not yet.
var leaseAdoptScript = redis.NewScript(leaseCommon + `
local n, t, e = holder()
if n and e > now then return {0, n, t} end
local lapse = tonumber(redis.call('GET', k .. ':lapse') or '')
if not lapse then
  redis.call('SET', k .. ':lapse', string.format('%d', now))
  return {0, '', 0}
end
if lapse < 0 or now - lapse < tonumber(ARGV[6]) then return {0, '', 0} end
local tok = raise(0)
redis.call('DEL', k .. ':release')
take(tonumber(ARGV[5]), tok, 'adopted', ARGV[7])
return {1, node, tok}
`)

// leaseRenewScript: ARGV prefix, id, node, now, ttl (ms), token, kind,
// path. Extends the lease if it is still this node's under token, or takes
// it back if it ran out and nobody took it since: the counter is not above
// token (below it, or gone, when Redis lost its keys: it is set back to
// token, so that the next takeover is still above it). Returns 1
// (renewed), 2 (renewed, and an operator asked for the queue's release) or
// 0 (lost: another took it).
var leaseRenewScript = redis.NewScript(leaseCommon + `
local tok = tonumber(ARGV[6])
local n, t = holder()
if n and (n ~= node or t ~= tok) then return 0 end
if not n then
  local f = tonumber(redis.call('GET', k .. ':fence') or '0')
  if f > tok then return 0 end
  if f < tok then redis.call('SET', k .. ':fence', tok) end
end
take(tonumber(ARGV[5]), tok, ARGV[7], ARGV[8])
if redis.call('EXISTS', k .. ':release') == 1 then return 2 end
return 1
`)

// leaseReleaseScript: ARGV prefix, id, node, now, token, empty (1 or 0).
// Ends the lease if it is still this node's under token; the queue may be
// adopted again after adopt_after, or (empty) only once its owner took it
// again. Returns 1, or 0 if the lease was no longer this node's.
var leaseReleaseScript = redis.NewScript(leaseCommon + `
local n, t = holder()
if n ~= node or t ~= tonumber(ARGV[5]) then return 0 end
redis.call('DEL', k, k .. ':release')
if ARGV[6] == '1' then
  redis.call('SET', k .. ':lapse', '-1')
else
  redis.call('SET', k .. ':lapse', string.format('%d', now))
end
redis.call('HDEL', p .. 'owners', id)
return 1
`)

// leaseAskReleaseScript: ARGV prefix, id, node (unused), now. Asks the holder
// of an adopted queue to let it go at its next renewal. Returns the
// holder, or "" if the queue is not held as adopted.
var leaseAskReleaseScript = redis.NewScript(leaseCommon + `
local n, t, e = holder()
if not n or e <= now then return '' end
local o = redis.call('HGET', p .. 'owners', id) or ''
if not string.match(o, '^%S+ %d+ adopted ') then return '' end
redis.call('SET', k .. ':release', '1')
return n
`)

// leaseRaiseScript: ARGV prefix, id, node, now, ttl (ms), token, floor,
// kind, path. Moves the lease this node holds under token to a new token
// above floor (the newest the file carries, when Redis lost the counter);
// returns it, or 0 if the lease is no longer this node's.
var leaseRaiseScript = redis.NewScript(leaseCommon + `
local n, t = holder()
if n ~= node or t ~= tonumber(ARGV[6]) then return 0 end
local tok = raise(tonumber(ARGV[7]))
take(tonumber(ARGV[5]), tok, ARGV[8], ARGV[9])
return tok
`)
