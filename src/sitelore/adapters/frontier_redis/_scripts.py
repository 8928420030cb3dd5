"""The Lua source of the shared frontier: every state change is one atomic script.

Every script takes the crawl's key prefix ``P`` (``<namespace>:{<crawl id>}``) as
``KEYS[1]`` and the namespace's origin prefix ``O`` (``<namespace>:origin``) as
``KEYS[2]``, and reads the time from Redis (``TIME``), never from a worker, so worker
clocks do not matter. All keys of a crawl share the hash tag ``{<crawl id>}``.

Origins belong to the namespace, not to a crawl: every crawl of one origin in the
namespace shares its robots.txt rules, its one request in flight and its spacing
(keys under ``O``, below). A crawl's ``hosts`` ZSET says when *that crawl* may next
use an origin; LEASE also asks the origin (busy? next allowed time?) and moves a
crawl's host later when another crawl holds or just used it.

Keys under ``P`` (the layout of research/distributed.md section 3.2, adapted):

=================  ======  ===========================================================
``meta``           HASH    state (running|finished), seed, options, timings, budget:
                           ``pages_left`` page slots, ``queued`` items, ``buckets``
``stats``          HASH    counters (leased, enqueued, duplicates, reclaimed, ...)
``q:<host>:<b>``   LIST    ready items of one origin, band ``b`` = min(depth, 7);
                           item = ``<attempt>|<depth>[r<hops>]|<path?query>``
``hosts``          ZSET    origin -> next-allowed time (ms). Invariant: an origin is
                           here exactly when it has ready items and no lease
``h:<host>``       HASH    ``next`` (ms), ``delay`` (ms), ``inflight`` (0|1)
``hostset``        SET     every origin ever queued (for clean-up and status)
``seen:<b>``       SET     int64 URL fingerprints (intset encoding), ``b = bucket``
``leases``         ZSET    lease id -> deadline (ms)
``inflight``       HASH    lease id -> ``<host>\\t<item>``
``wl:<worker>``    SET     lease ids a worker holds
``workers``        ZSET    worker id -> last heartbeat (ms)
``errors``         LIST    the last 100 page errors (``url\\tkind\\tmessage``)
``warnings``       LIST    the crawl's first warnings, each once (``RedisFrontier.warn``)
``changes``        LIST    an incremental crawl's pages (``kind\\turl``), for its report
``twins``          HASH    claimed documents of twin URLs (``core.twins.claim_key`` ->
                           the URL that holds it)
``dead``           LIST    URLs given up after ``max_attempts`` reclaims
``O:<host>``       HASH    ``next`` (ms): the origin's next-allowed time, all crawls
``O:busy:<host>``  STRING  the lease id holding the origin (expires with the lease)
``O:robots:<host>`` STRING the origin's robots rules (JSON), with a TTL
=================  ======  ===========================================================

Only Lua text lives here: ``_client`` registers it (EVALSHA) and packs the arguments.
"""

from __future__ import annotations

__all__ = ["ADD", "COMPLETE", "CREATE", "HEARTBEAT", "LEASE", "REAP"]

_PRELUDE = """
local P = KEYS[1]
local O = KEYS[2]
-- Priority bands per origin: band = min(depth, NBANDS - 1); lower bands lease first.
local NBANDS = 8
local ORIGIN_KEEP_MS = 86400000
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function qkey(host, band) return P .. ':q:' .. host .. ':' .. band end
local function band_of(depth)
  if depth > NBANDS - 1 then return NBANDS - 1 end
  return depth
end
local function parse_item(item)
  local attempt, depth, flag, rest = string.match(item, '^(%d+)|(%d+)([^|]*)|(.*)$')
  return tonumber(attempt), tonumber(depth), flag, rest
end
local function has_items(host)
  for b = 0, NBANDS - 1 do
    if redis.call('LLEN', qkey(host, b)) > 0 then return true end
  end
  return false
end
local function host_delay(host)
  local d = redis.call('HGET', P .. ':h:' .. host, 'delay')
  if d then return tonumber(d) end
  return tonumber(redis.call('HGET', P .. ':meta', 'delay_ms') or '0')
end
-- Offer host back to the ready set at its next-allowed time (if it has work).
local function release_host(host, now)
  local h = P .. ':h:' .. host
  redis.call('HSET', h, 'inflight', 0)
  if has_items(host) then
    local nxt = tonumber(redis.call('HGET', h, 'next') or '0')
    if nxt < now then nxt = now end
    redis.call('ZADD', P .. ':hosts', nxt, host)
  end
end
-- The origin, across crawls: free (no lease of any crawl holds it) and due?
-- Returns 0 when it may be leased now, else the ms to wait.
local function origin_wait(host, now, poll)
  if redis.call('EXISTS', O .. ':busy:' .. host) == 1 then return poll end
  local nxt = tonumber(redis.call('HGET', O .. ':' .. host, 'next') or '0')
  if nxt > now then return nxt - now end
  return 0
end
-- A request of lease ``id`` ends at ``now``: the origin is free, next at ``at`` or later.
local function origin_release(host, id, at)
  local busy = O .. ':busy:' .. host
  if redis.call('GET', busy) == id then redis.call('DEL', busy) end
  local key = O .. ':' .. host
  if at > tonumber(redis.call('HGET', key, 'next') or '0') then
    redis.call('HSET', key, 'next', at)
  end
  redis.call('PEXPIRE', key, ORIGIN_KEEP_MS)
end
-- ARGV[i] counts the (name, value) pairs after it: run ``cmd key name value`` for each.
-- Returns the index after them.
local function each_pair(i, cmd, key)
  local n = tonumber(ARGV[i])
  for j = i + 1, i + 2 * n, 2 do redis.call(cmd, key, ARGV[j], ARGV[j + 1]) end
  return i + 1 + 2 * n
end
-- Put an item back at the head of its band (a reclaim or a retry).
local function requeue(host, item, bump)
  local attempt, depth, flag, rest = parse_item(item)
  redis.call('LPUSH', qkey(host, band_of(depth)),
             (attempt + bump) .. '|' .. depth .. flag .. '|' .. rest)
  redis.call('HINCRBY', P .. ':meta', 'queued', 1)
  redis.call('HINCRBY', P .. ':meta', 'pages_left', 1)
end
-- Add new URLs: ARGV[i..] holds count groups of (fingerprint, bucket, host, item).
local function enqueue(now, i, count)
  local added = 0
  for _ = 1, count do
    local fp, bucket, host, item = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
    i = i + 4
    if redis.call('SADD', P .. ':seen:' .. bucket, fp) == 1 then
      local _, depth, flag = parse_item(item)
      if flag ~= '' then
        -- A redirect target goes on with its page: first in its band, on the page's slot.
        redis.call('LPUSH', qkey(host, band_of(depth)), item)
        redis.call('HINCRBY', P .. ':meta', 'pages_left', 1)
      else
        redis.call('RPUSH', qkey(host, band_of(depth)), item)
      end
      redis.call('SADD', P .. ':hostset', host)
      added = added + 1
      local state = redis.call('HMGET', P .. ':h:' .. host, 'inflight', 'next')
      if state[1] ~= '1' then
        local nxt = tonumber(state[2] or '0')
        if nxt < now then nxt = now end
        redis.call('ZADD', P .. ':hosts', 'NX', nxt, host)
      end
    end
  end
  if added > 0 then
    redis.call('HINCRBY', P .. ':meta', 'queued', added)
    redis.call('HINCRBY', P .. ':stats', 'enqueued', added)
  end
  if count > added then
    redis.call('HINCRBY', P .. ':stats', 'skipped_duplicate', count - added)
  end
  return added
end
-- End the crawl: record why, then delete the frontier (meta, stats, errors and dead stay).
local function finish(now, reason)
  local meta = P .. ':meta'
  local queued = tonumber(redis.call('HGET', meta, 'queued') or '0')
  redis.call('HSET', meta, 'state', 'finished', 'finished_ms', now,
             'truncated_reason', reason, 'unfetched', queued)
  local held = redis.call('HGETALL', P .. ':inflight')
  for j = 1, #held, 2 do
    local rec = held[j + 1]
    origin_release(string.sub(rec, 1, string.find(rec, '\t', 1, true) - 1), held[j], 0)
  end
  for _, host in ipairs(redis.call('SMEMBERS', P .. ':hostset')) do
    for b = 0, NBANDS - 1 do redis.call('DEL', qkey(host, b)) end
    redis.call('DEL', P .. ':h:' .. host)
  end
  local buckets = tonumber(redis.call('HGET', meta, 'buckets') or '0')
  for b = 0, buckets - 1 do redis.call('DEL', P .. ':seen:' .. b) end
  for _, w in ipairs(redis.call('ZRANGE', P .. ':workers', 0, -1)) do
    redis.call('DEL', P .. ':wl:' .. w)
  end
  redis.call('DEL', P .. ':hostset', P .. ':hosts', P .. ':leases', P .. ':inflight',
             P .. ':workers', P .. ':seq', P .. ':twins')
  local keep = tonumber(redis.call('HGET', meta, 'keep_ms') or '604800000')
  for _, key in ipairs({meta, P .. ':stats', P .. ':errors', P .. ':dead', P .. ':changes',
                        P .. ':warnings'}) do
    redis.call('PEXPIRE', key, keep)
  end
end
"""

#: ARGV: deadline_seconds, robots_json ('' = none), robots_ttl_ms, seed host, seed delay_ms,
#: nfields, (field, value)* for meta, then one enqueue group (the seed).
#: Returns {created_ms, deadline_ms} or an error if the crawl exists.
CREATE = (
    _PRELUDE
    + """
if redis.call('EXISTS', P .. ':meta') == 1 then
  return redis.error_reply('crawl exists')
end
local now = now_ms()
local deadline = now + math.floor(tonumber(ARGV[1]) * 1000)
local i = each_pair(6, 'HSET', P .. ':meta')
redis.call('HSET', P .. ':meta', 'state', 'running', 'created_ms', now,
           'deadline_ms', deadline, 'queued', 0)
local host = ARGV[4]
redis.call('HSET', P .. ':h:' .. host, 'delay', ARGV[5], 'inflight', 0)
if ARGV[2] ~= '' then
  -- The enqueuer read robots.txt just now (fetched: a request to the seed's origin).
  redis.call('SET', O .. ':robots:' .. host, ARGV[2], 'PX', ARGV[3])
  redis.call('HSET', P .. ':h:' .. host, 'next', now + tonumber(ARGV[5]))
  origin_release(host, '', now + tonumber(ARGV[5]))
  redis.call('HINCRBY', P .. ':stats', 'robots_fetched', 1)
end
enqueue(now, i, 1)
return {now, deadline}
"""
)

#: ARGV: worker, lease_ttl_ms, poll_ms. Returns one of
#: {'lease', id, host, item, now, deadline} | {'wait', ms} | {'finished', reason}.
LEASE = (
    _PRELUDE
    + """
local worker, ttl, poll = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local meta = P .. ':meta'
local m = redis.call('HMGET', meta, 'state', 'deadline_ms', 'pages_left', 'queued')
if not m[1] then
  return {'finished', 'missing'}  -- never created, expired, or lost with a Redis restart
end
if m[1] ~= 'running' then
  return {'finished', redis.call('HGET', meta, 'truncated_reason') or ''}
end
local now = now_ms()
redis.call('ZADD', P .. ':workers', now, worker)
if now >= tonumber(m[2]) then
  finish(now, 'deadline')
  return {'finished', 'deadline'}
end
if tonumber(m[3]) <= 0 then
  if redis.call('ZCARD', P .. ':leases') == 0 then
    local reason = ''
    if tonumber(m[4]) > 0 then reason = 'max_pages' end
    finish(now, reason)
    return {'finished', reason}
  end
  return {'wait', poll}  -- a lease in flight may hand its page slot back
end
local due = redis.call('ZRANGEBYSCORE', P .. ':hosts', '-inf', now, 'LIMIT', 0, 1)
if #due == 0 then
  if redis.call('ZCARD', P .. ':hosts') == 0 then
    if redis.call('ZCARD', P .. ':leases') == 0 then
      finish(now, '')
      return {'finished', ''}
    end
    return {'wait', poll}
  end
  local first = redis.call('ZRANGE', P .. ':hosts', 0, 0, 'WITHSCORES')
  return {'wait', tonumber(first[2]) - now}
end
local host = nil
for _, candidate in ipairs(redis.call('ZRANGEBYSCORE', P .. ':hosts', '-inf', now,
                                      'LIMIT', 0, 16)) do
  local wait = origin_wait(candidate, now, poll)
  if wait == 0 then
    host = candidate
    break
  end
  redis.call('ZADD', P .. ':hosts', now + wait, candidate)  -- another crawl has it
end
if not host then
  local first = redis.call('ZRANGE', P .. ':hosts', 0, 0, 'WITHSCORES')
  return {'wait', math.max(1, tonumber(first[2]) - now)}
end
local cmd = {'LMPOP', NBANDS}
for b = 0, NBANDS - 1 do cmd[#cmd + 1] = qkey(host, b) end
cmd[#cmd + 1] = 'LEFT'
local popped = redis.call(unpack(cmd))
redis.call('ZREM', P .. ':hosts', host)
if not popped then
  return {'wait', 0}  -- cannot happen while the invariant holds; the host is dropped
end
local item = popped[2][1]
redis.call('HSET', P .. ':h:' .. host, 'inflight', 1)
local id = worker .. ':' .. redis.call('INCR', P .. ':seq')
redis.call('SET', O .. ':busy:' .. host, id, 'PX', ttl)
redis.call('ZADD', P .. ':leases', now + ttl, id)
redis.call('HSET', P .. ':inflight', id, host .. '\\t' .. item)
redis.call('SADD', P .. ':wl:' .. worker, id)
redis.call('HINCRBY', meta, 'pages_left', -1)
redis.call('HINCRBY', meta, 'queued', -1)
redis.call('HINCRBY', P .. ':stats', 'leased', 1)
return {'lease', id, host, item, now, tonumber(m[2])}
"""
)

#: ARGV: worker, lease id, outcome (done|retry|requeue|skip), delay_ms (-1: keep),
#: backoff_ms, error ('' = none), change ('' = none; ``kind\turl`` of an incremental
#: crawl's page), nstats, (name, increment)*, nlinks, (fp, bucket, host, item)*.
#: ``done``: a request was made. ``retry``: it failed, try again (attempt + 1; given up
#: into ``dead`` once ``max_attempts`` is reached).
#: ``requeue``: robots.txt was fetched instead; the URL goes back untouched.
#: ``skip``: no request was made (robots, guard); the page slot comes back.
#: Returns {acked (1|0), links added}.
COMPLETE = (
    _PRELUDE
    + """
local worker, id, outcome = ARGV[1], ARGV[2], ARGV[3]
local delay_ms, backoff = tonumber(ARGV[4]), tonumber(ARGV[5])
local now = now_ms()
local running = redis.call('HGET', P .. ':meta', 'state') == 'running'
if ARGV[7] ~= '' then redis.call('RPUSH', P .. ':changes', ARGV[7]) end
local i = each_pair(8, 'HINCRBY', P .. ':stats')
local nlinks = tonumber(ARGV[i])
i = i + 1
if ARGV[6] ~= '' then
  redis.call('LPUSH', P .. ':errors', ARGV[6])
  redis.call('LTRIM', P .. ':errors', 0, 99)
end
local rec = redis.call('HGET', P .. ':inflight', id)
if not rec then
  -- Reclaimed meanwhile (or the crawl ended): the item is already back in its queue.
  redis.call('HINCRBY', P .. ':stats', 'stale_acks', 1)
  local added = 0
  if running then added = enqueue(now, i, nlinks) end
  return {0, added}
end
local tab = string.find(rec, '\\t', 1, true)
local host, item = string.sub(rec, 1, tab - 1), string.sub(rec, tab + 1)
redis.call('HDEL', P .. ':inflight', id)
redis.call('ZREM', P .. ':leases', id)
redis.call('SREM', P .. ':wl:' .. worker, id)
local h = P .. ':h:' .. host
if delay_ms >= 0 then redis.call('HSET', h, 'delay', delay_ms) end
if outcome ~= 'skip' then
  local wait = host_delay(host)
  if backoff > wait then wait = backoff end
  redis.call('HSET', h, 'next', now + wait)
  origin_release(host, id, now + wait)
else
  origin_release(host, id, 0)
end
if outcome == 'retry' then
  local attempt = parse_item(item)
  local most = tonumber(redis.call('HGET', P .. ':meta', 'max_attempts') or '0')
  if most > 0 and attempt + 1 >= most then
    redis.call('RPUSH', P .. ':dead', host .. string.match(item, '^[^|]*|[^|]*|(.*)$'))
    redis.call('HINCRBY', P .. ':stats', 'dead', 1)
  else
    requeue(host, item, 1)
  end
elseif outcome == 'requeue' then
  requeue(host, item, 0)
elseif outcome == 'skip' then
  redis.call('HINCRBY', P .. ':meta', 'pages_left', 1)
end
local added = 0
if running then added = enqueue(now, i, nlinks) end
release_host(host, now)
return {1, added}
"""
)

#: ARGV: nstats, (name, increment)*, nlinks, (fp, bucket, host, item)*. Queues URLs
#: found without a lease (a seed's sitemaps); returns how many were added.
ADD = (
    _PRELUDE
    + """
if redis.call('HGET', P .. ':meta', 'state') ~= 'running' then return 0 end
local i = each_pair(1, 'HINCRBY', P .. ':stats')
return enqueue(now_ms(), i + 1, tonumber(ARGV[i]))
"""
)

#: ARGV: worker, lease_ttl_ms. Returns how many leases were extended.
HEARTBEAT = (
    _PRELUDE
    + """
local worker, ttl = ARGV[1], tonumber(ARGV[2])
if redis.call('HGET', P .. ':meta', 'state') ~= 'running' then return -1 end
local now = now_ms()
redis.call('ZADD', P .. ':workers', now, worker)
local n = 0
for _, id in ipairs(redis.call('SMEMBERS', P .. ':wl:' .. worker)) do
  if redis.call('ZSCORE', P .. ':leases', id) then
    redis.call('ZADD', P .. ':leases', now + ttl, id)
    local rec = redis.call('HGET', P .. ':inflight', id)
    if rec then
      local busy = O .. ':busy:' .. string.sub(rec, 1, string.find(rec, '\t', 1, true) - 1)
      if redis.call('GET', busy) == id then redis.call('PEXPIRE', busy, ttl) end
    end
    n = n + 1
  end
end
return n
"""
)

#: ARGV: heartbeat_timeout_ms, max_attempts. Requeues the leases of silent workers and
#: expired leases at the head of their band (attempt + 1), or gives them up.
#: Returns {reclaimed, given up}.
REAP = (
    _PRELUDE
    + """
if redis.call('HGET', P .. ':meta', 'state') ~= 'running' then return {0, 0} end
local hb_timeout, max_attempts = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms()
local ids = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. ':leases', '-inf', now)) do
  ids[id] = true
end
for _, w in ipairs(redis.call('ZRANGEBYSCORE', P .. ':workers', '-inf', now - hb_timeout)) do
  for _, id in ipairs(redis.call('SMEMBERS', P .. ':wl:' .. w)) do ids[id] = true end
  redis.call('DEL', P .. ':wl:' .. w)
  redis.call('ZREM', P .. ':workers', w)
end
local reclaimed, dead = 0, 0
for id, _ in pairs(ids) do
  local rec = redis.call('HGET', P .. ':inflight', id)
  redis.call('ZREM', P .. ':leases', id)
  if rec then
    redis.call('HDEL', P .. ':inflight', id)
    local owner = string.match(id, '^(.*):%d+$')
    if owner then redis.call('SREM', P .. ':wl:' .. owner, id) end
    local tab = string.find(rec, '\\t', 1, true)
    local host, item = string.sub(rec, 1, tab - 1), string.sub(rec, tab + 1)
    local attempt, _, _, rest = parse_item(item)
    if attempt + 1 >= max_attempts then
      redis.call('RPUSH', P .. ':dead', host .. rest)
      dead = dead + 1
    else
      requeue(host, item, 1)
      reclaimed = reclaimed + 1
    end
    -- Its request may have reached the server just now: wait a full delay from here.
    local h = P .. ':h:' .. host
    local nxt = now + host_delay(host)
    if nxt > tonumber(redis.call('HGET', h, 'next') or '0') then
      redis.call('HSET', h, 'next', nxt)
    end
    origin_release(host, id, nxt)
    release_host(host, now)
  end
end
if reclaimed > 0 then redis.call('HINCRBY', P .. ':stats', 'reclaimed', reclaimed) end
if dead > 0 then redis.call('HINCRBY', P .. ':stats', 'dead', dead) end
return {reclaimed, dead}
"""
)
