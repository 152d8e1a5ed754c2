import { CONCLUDED_KEEP_MS, HELD_MAX_MS } from './budget.store.js';

/** The budget store's Lua (redis-budget.store.ts), and what the ledger's scripts embed. */

/**
 * What every script begins with. A window is a hash `{<prefix>:acct}:budget:w:<windowId>` with the
 * fields `s:<name>` (spent), `r:<name>` (reserved) and `x:<name>` (refused once); a reservation
 * is a field of `…:res` (JSON: units, names, its day and month keys, concluded) and a member of
 * `…:due` scored by when it is concluded. A reservation names the window keys it was counted in,
 * so a settlement after midnight still lands in the right day; those keys are not in KEYS, but
 * they carry the same hash tag, so they are in the same Cluster slot as every key the script was
 * given (docs/architecture.md, "Redis keys").
 *
 * A window's generation (its field `g`) is stamped when a reservation first counts in it: the
 * reservation's `now` and the start of its trackId, unique whoever makes it, so a window Redis lost (restarted
 * empty, evicted, a failover behind) and that new reservations made again has another. A
 * reservation keeps the generations of the windows it counted in (`gd`, `gm`), and its held
 * marker keeps them too: units go back, or move, only in a window of the same generation, never
 * in one that never counted the inquiry (test/budget-generations.integration.spec.ts). A
 * reservation or marker without them (made before generations) trusts the window as before.
 *
 * `sweep` concludes up to 100 overdue reservations as spent (their inquiry's process died:
 * its record reads `unknown`, possibly charged) and keeps them a day as concluded, so that a
 * late release still gives the units back (until a reconciliation resolves it); then forgets
 * them. A reservation concluded, or settled `unknown`, is marked held (`…:held:<trackId>`, also
 * derived, same tag) for the reconciliation's moves (budget.store.ts, BudgetStore).
 */
export const COMMON_LUA = `
-- Whether the window at \`key\` is the one a reservation counted in: it exists and, when the
-- reservation knows its generation, has that one (not a window made again after a loss).
local function counted(key, gen)
  if gen == nil or gen == '' then return redis.call('EXISTS', key) == 1 end
  return redis.call('HGET', key, 'g') == gen
end
-- The held marker of an inquiry a reconciliation may still move (\`…:budget:held:<trackId>\`,
-- beside \`…:budget:res\`): "<units its windows count for it>:<last revision applied>:<day
-- generation>:<month generation>". It lives as long as the month window (a window that is gone
-- has forgotten the units: no marker).
local function held(res, id) return string.sub(res, 1, -4) .. 'held:' .. id end
local function mark(res, id, r, units)
  local ttl = redis.call('PTTL', r.m)
  if ttl == -2 then return end
  if ttl < 0 or ttl > ${HELD_MAX_MS} then ttl = ${HELD_MAX_MS} end
  redis.call('SET', held(res, id), units .. ':0:' .. (r.gd or '') .. ':' .. (r.gm or ''), 'PX', ttl)
end
-- action: commit, release, or unknown (committed, possibly charged: marked for a reconciliation).
local function finish(res, due, id, action)
  local raw = redis.call('HGET', res, id)
  if not raw then return false end
  local r = cjson.decode(raw)
  -- A window that has expired is not brought back (it would have no expiry), and one made
  -- again since (another generation) never counted these units.
  for i, key in ipairs({r.d, r.m}) do
    if counted(key, i == 1 and r.gd or r.gm) then
      for _, name in ipairs(r.n) do
        if r.c == 1 then
          if action == 'release' then redis.call('HINCRBY', key, 's:' .. name, -r.u) end
        else
          redis.call('HINCRBY', key, 'r:' .. name, -r.u)
          if action ~= 'release' then redis.call('HINCRBY', key, 's:' .. name, r.u) end
        end
      end
    end
  end
  if r.c == 1 and action == 'release' then
    local marker = redis.call('GET', held(res, id))
    local at = marker and string.find(marker, ':', 1, true)
    if at then redis.call('SET', held(res, id), '0' .. string.sub(marker, at), 'KEEPTTL') end
  elseif r.c ~= 1 and action == 'unknown' then
    mark(res, id, r, r.u)
  end
  redis.call('HDEL', res, id)
  redis.call('ZREM', due, id)
  return r
end
local function sweep(res, due, now)
  local ids = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, 100)
  for _, id in ipairs(ids) do
    local r = finish(res, due, id, 'unknown')
    if r and r.c ~= 1 then
      r.c = 1
      redis.call('HSET', res, id, cjson.encode(r))
      redis.call('ZADD', due, now + ${CONCLUDED_KEEP_MS}, id)
    end
  end
end
`;

/**
 * The reservation, as a function so that the ledger's duty script can run it too
 * (ledger/redis-ledger.scripts.ts: one command before the upstream call). Keys: day window, month
 * window, reservations, deadlines; `a` the ARGV index of the first of (now, units, concludeAt,
 * day expiry, month expiry) and `from` of the (name, daily limit, monthly limit) triples, one
 * per budget, -1 for an unbudgeted window. Monthly limits are checked first: when both are
 * exhausted, the refusal names the window that resets last. Returns {1} or {0, window, name,
 * remaining, first}.
 */
const RESERVE_FUNCTION = `
local function reserve(day, month, res, due, id, a, from)
  local now, units = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  sweep(res, due, now)
  -- Once per trackId: a script run again (ioredis re-sends a command whose reply was lost to a
  -- reconnect) finds its reservation and reserves nothing more.
  if redis.call('HEXISTS', res, id) == 1 then return {1} end
  for pass = 1, 2 do
    local key = pass == 1 and month or day
    local window = pass == 1 and 'monthly' or 'daily'
    for i = from, #ARGV, 3 do
      local name = ARGV[i]
      local limit = tonumber(pass == 1 and ARGV[i + 2] or ARGV[i + 1])
      if limit >= 0 then
        local counts = redis.call('HMGET', key, 's:' .. name, 'r:' .. name)
        local used = (tonumber(counts[1]) or 0) + (tonumber(counts[2]) or 0)
        if used + units > limit then
          local first = redis.call('HSETNX', key, 'x:' .. name, 1)
          redis.call('PEXPIREAT', key, pass == 1 and ARGV[a + 4] or ARGV[a + 3])
          return {0, window, name, limit - used, first}
        end
      end
    end
  end
  local names = {}
  for i = from, #ARGV, 3 do
    names[#names + 1] = ARGV[i]
    redis.call('HINCRBY', day, 'r:' .. ARGV[i], units)
    redis.call('HINCRBY', month, 'r:' .. ARGV[i], units)
  end
  -- The windows' generations: this reservation's own stamp where a window has none yet (its
  -- time and the start of its trackId: two windows made in one ms by the same 8 hex, never).
  local stamp = ARGV[a] .. '-' .. string.gsub(string.sub(id, 1, 8), ':', '')
  local gd = redis.call('HSETNX', day, 'g', stamp) == 1 and stamp or redis.call('HGET', day, 'g')
  local gm = redis.call('HSETNX', month, 'g', stamp) == 1 and stamp or redis.call('HGET', month, 'g')
  redis.call('PEXPIREAT', day, ARGV[a + 3])
  redis.call('PEXPIREAT', month, ARGV[a + 4])
  redis.call('HSET', res, id, cjson.encode({u = units, n = names, d = day, m = month, c = 0, gd = gd, gm = gm}))
  redis.call('ZADD', due, ARGV[a + 2], id)
  return {1}
end
`;

/** What the ledger's scripts embed: the shared functions and the reservation. */
export const BUDGET_LUA = `${COMMON_LUA}${RESERVE_FUNCTION}`;
