import type { RedisClient } from '../store/redis-connection.js';
import type { RedisKeys } from '../store/redis-keys.js';
import { storeCall } from '../store/store-unavailable.error.js';
import type { BudgetWindows } from './budget-windows.js';
import {
  BudgetStore,
  CONCLUDED_KEEP_MS,
  type BudgetMove,
  WINDOW_GRACE_MS,
  type BudgetUsage,
  type ReserveRequest,
  type ReserveResult,
} from './budget.store.js';

/**
 * What every script begins with. A window is a hash `{<prefix>:acct}:budget:w:<windowId>` with the
 * fields `s:<name>` (spent), `r:<name>` (reserved) and `x:<name>` (refused once); a reservation
 * is a field of `…:res` (JSON: units, names, its day and month keys, concluded) and a member of
 * `…:due` scored by when it is concluded. A reservation names the window keys it was counted in,
 * so a settlement after midnight still lands in the right day; those keys are not in KEYS, but
 * they carry the same hash tag, so they are in the same Cluster slot as every key the script was
 * given (docs/architecture.md, "Redis keys").
 *
 * `sweep` concludes up to 100 overdue reservations as spent (their inquiry's process died:
 * its record reads `unknown`, possibly charged) and keeps them a day as concluded, so that a
 * late release still gives the units back; then forgets them.
 */
const COMMON = `
local function incr(key, field, units)
  if redis.call('EXISTS', key) == 1 then redis.call('HINCRBY', key, field, units) end
end
local function finish(res, due, id, action)
  local raw = redis.call('HGET', res, id)
  if not raw then return false end
  local r = cjson.decode(raw)
  -- A window that has expired is not brought back (it would have no expiry).
  for _, key in ipairs({r.d, r.m}) do
    if redis.call('EXISTS', key) == 1 then
      for _, name in ipairs(r.n) do
        if r.c == 1 then
          if action == 'release' then redis.call('HINCRBY', key, 's:' .. name, -r.u) end
        else
          redis.call('HINCRBY', key, 'r:' .. name, -r.u)
          if action == 'commit' then redis.call('HINCRBY', key, 's:' .. name, r.u) end
        end
      end
    end
  end
  redis.call('HDEL', res, id)
  redis.call('ZREM', due, id)
  return r
end
local function sweep(res, due, now)
  local ids = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, 100)
  for _, id in ipairs(ids) do
    local r = finish(res, due, id, 'commit')
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
  redis.call('PEXPIREAT', day, ARGV[a + 3])
  redis.call('PEXPIREAT', month, ARGV[a + 4])
  redis.call('HSET', res, id, cjson.encode({u = units, n = names, d = day, m = month, c = 0}))
  redis.call('ZADD', due, ARGV[a + 2], id)
  return {1}
end
`;

/** What the ledger's scripts embed: the shared functions and the reservation. */
export const BUDGET_LUA = `${COMMON}${RESERVE_FUNCTION}`;

/** KEYS: day window, month window, reservations, deadlines. ARGV: trackId, then reserveArgs(). */
const RESERVE = `${BUDGET_LUA}
return reserve(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], 2, 7)`;

/** The four keys a reservation touches, for KEYS. */
export function reserveKeys(keys: RedisKeys, request: ReserveRequest): string[] {
  return [
    keys.budgetWindow(request.windows.daily.id),
    keys.budgetWindow(request.windows.monthly.id),
    keys.budgetReservations(),
    keys.budgetDeadlines(),
  ];
}

/** A reservation's arguments for `reserve(…, a, from)` with from = a + 5. */
export function reserveArgs(request: ReserveRequest): Array<string | number> {
  return [
    request.now,
    request.units,
    request.concludeAt,
    request.windows.daily.resetsAt + WINDOW_GRACE_MS,
    request.windows.monthly.resetsAt + WINDOW_GRACE_MS,
    ...request.budgets.flatMap((b) => [b.name, b.daily, b.monthly]),
  ];
}

/** The script's reply as a result. */
export function reserveResult(reply: Array<string | number>): ReserveResult {
  if (Number(reply[0]) === 1) return { admitted: true };
  return {
    admitted: false,
    window: reply[1] === 'monthly' ? 'monthly' : 'daily',
    budget: String(reply[2]),
    remaining: Number(reply[3]),
    first: Number(reply[4]) === 1,
  };
}

/** KEYS: reservations, deadlines. ARGV: now, trackId, commit | release. */
const SETTLE = `${COMMON}
sweep(KEYS[1], KEYS[2], tonumber(ARGV[1]))
return finish(KEYS[1], KEYS[2], ARGV[2], ARGV[3]) and 1 or 0`;

/**
 * KEYS: reservations, deadlines, move marker, day window, month window. ARGV: now, trackId,
 * revision, yes | no, units (signed), budget names. Once per (trackId, revision): the marker
 * lives as long as the month's window (a move after it changes nothing). A first resolution
 * settles the reservation still held; otherwise the units go to spent in both windows, each
 * only while it exists (an ended window is not brought back without its expiry).
 */
const RESOLVE = `${COMMON}
sweep(KEYS[1], KEYS[2], tonumber(ARGV[1]))
local ttl = redis.call('PTTL', KEYS[5])
if not redis.call('SET', KEYS[3], 1, 'NX', 'PX', math.max(ttl, 60000)) then return 0 end
if ARGV[3] == '1' and finish(KEYS[1], KEYS[2], ARGV[2], ARGV[4] == 'yes' and 'commit' or 'release') then return 1 end
local units = tonumber(ARGV[5])
if units ~= 0 then
  for i = 6, #ARGV do
    incr(KEYS[4], 's:' .. ARGV[i], units)
    incr(KEYS[5], 's:' .. ARGV[i], units)
  end
end
return 1`;

/** KEYS: reservations, deadlines, day window, month window. ARGV: now, names. Spent and reserved, day then month. */
const READ = `${COMMON}
sweep(KEYS[1], KEYS[2], tonumber(ARGV[1]))
local out = {}
for w = 3, 4 do
  for i = 2, #ARGV do
    local counts = redis.call('HMGET', KEYS[w], 's:' .. ARGV[i], 'r:' .. ARGV[i])
    out[#out + 1] = tonumber(counts[1]) or 0
    out[#out + 1] = tonumber(counts[2]) or 0
  end
end
return out`;

interface BudgetScripts {
  vgwBudgetReserve(...args: Array<string | number>): Promise<Array<string | number>>;
  vgwBudgetSettle(...args: Array<string | number>): Promise<number>;
  vgwBudgetResolve(...args: Array<string | number>): Promise<number>;
  vgwBudgetRead(...args: Array<string | number>): Promise<number[]>;
}

/** Budgets in Redis: one script per operation (EVALSHA through ioredis's defineCommand). */
export class RedisBudgetStore extends BudgetStore {
  private readonly scripts: BudgetScripts;

  constructor(
    client: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    super();
    client.defineCommand('vgwBudgetReserve', { numberOfKeys: 4, lua: RESERVE });
    client.defineCommand('vgwBudgetSettle', { numberOfKeys: 2, lua: SETTLE });
    client.defineCommand('vgwBudgetResolve', { numberOfKeys: 5, lua: RESOLVE });
    client.defineCommand('vgwBudgetRead', { numberOfKeys: 4, lua: READ });
    this.scripts = client as unknown as BudgetScripts;
  }

  reserve(request: ReserveRequest): Promise<ReserveResult> {
    return storeCall('budget reserve', async () => {
      const reply = await this.scripts.vgwBudgetReserve(
        ...reserveKeys(this.keys, request),
        request.trackId,
        ...reserveArgs(request),
      );
      return reserveResult(reply);
    });
  }

  settle(trackId: string, action: 'commit' | 'release', now: number): Promise<void> {
    return storeCall('budget settle', async () => {
      await this.scripts.vgwBudgetSettle(
        this.keys.budgetReservations(),
        this.keys.budgetDeadlines(),
        now,
        trackId,
        action,
      );
    });
  }

  resolve(move: BudgetMove, now: number): Promise<void> {
    return storeCall('budget resolve', async () => {
      await this.scripts.vgwBudgetResolve(
        this.keys.budgetReservations(),
        this.keys.budgetDeadlines(),
        this.keys.budgetResolved(move.trackId, move.revision),
        this.keys.budgetWindow(move.daily),
        this.keys.budgetWindow(move.monthly),
        now,
        move.trackId,
        move.revision,
        move.charged ? 'yes' : 'no',
        move.units,
        ...move.budgets,
      );
    });
  }

  read(windows: BudgetWindows, names: string[], now: number): Promise<Map<string, BudgetUsage>> {
    return storeCall('budget read', async () => {
      const reply = await this.scripts.vgwBudgetRead(
        this.keys.budgetReservations(),
        this.keys.budgetDeadlines(),
        this.keys.budgetWindow(windows.daily.id),
        this.keys.budgetWindow(windows.monthly.id),
        now,
        ...names,
      );
      const usage = new Map<string, BudgetUsage>();
      names.forEach((name, index) => {
        usage.set(`${name}|daily`, { spent: Number(reply[2 * index]), reserved: Number(reply[2 * index + 1]) });
        const at = 2 * (names.length + index);
        usage.set(`${name}|monthly`, { spent: Number(reply[at]), reserved: Number(reply[at + 1]) });
      });
      return usage;
    });
  }
}
