import { BUDGET_LUA } from '../budget/budget-lua.js';
import type { RedisClient } from '../store/redis-connection.js';

// The ledger queue's Lua scripts (redis-ledger.queue.ts): each is one atomic command.

/**
 * With the record's create: the duty, and with a budget the reservation first
 * (budget/redis-budget.store.ts), the duty written only when every budget admits the inquiry.
 * KEYS due, duties, then the reservation's four when a budget applies; ARGV trackId, dueAt,
 * sealed entry, then the reservation's arguments. Returns the reservation's answer ({1} without).
 */
const OWE = `${BUDGET_LUA}
local admitted = {1}
if KEYS[3] then admitted = reserve(KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[1], 4, 9) end
if admitted[1] == 1 then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
end
return admitted`;

/**
 * After the upstream answer: the entry on the stream, the duty lifted, and with a budget the
 * reservation committed or released. KEYS due, duties, entries, then reservations and deadlines
 * when a budget applies; ARGV trackId, sealed entry, then now and commit | release.
 */
const SETTLE = `${BUDGET_LUA}
redis.call('XADD', KEYS[3], '*', 't', ARGV[1], 'e', ARGV[2])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if KEYS[4] then
  sweep(KEYS[4], KEYS[5], tonumber(ARGV[3]))
  finish(KEYS[4], KEYS[5], ARGV[1], ARGV[4])
end
return 1`;

/** Refused before sending: the duty lifted, and the reservation released (KEYS due, duties, reservations, deadlines; ARGV trackId, now). */
const DISCARD = `${BUDGET_LUA}
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if KEYS[3] then
  sweep(KEYS[3], KEYS[4], tonumber(ARGV[2]))
  finish(KEYS[3], KEYS[4], ARGV[1], 'release')
end
return 1`;

/** Duties past due move to the stream as their `unknown` entries; one script, so one replica each. */
const CLAIM_OVERDUE = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  local duty = redis.call('HGET', KEYS[2], id)
  if duty and string.sub(duty, 1, 2) == 'r|' then
    redis.call('XADD', KEYS[3], '*', 't', id, 'o', string.sub(duty, 3))
  elseif duty then
    redis.call('XADD', KEYS[3], '*', 't', id, 'e', duty)
  end
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
return #ids`;

/**
 * Standalone Redis (not Cluster), where one script may touch keys of any slot: the record's
 * create and the duty in one command. The duty is the sealed record itself (`r|` marks it; the
 * drainer derives the `unknown` entry from it), so nothing is serialised or sent twice. KEYS
 * record, due, duties, then the reservation's four when a budget applies; ARGV trackId, dueAt,
 * sealed record, TTL, then the reservation's arguments. Returns {-1} when the record exists
 * (a trackId collision), else the reservation's answer; refused, nothing is written at all.
 */
const CREATE_WITH_RECORD = `${BUDGET_LUA}
if redis.call('EXISTS', KEYS[1]) == 1 then return {-1} end
local admitted = {1}
if KEYS[4] then admitted = reserve(KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[1], 5, 10) end
if admitted[1] == 1 then
  redis.call('SET', KEYS[1], ARGV[3], 'EX', ARGV[4])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
  redis.call('HSET', KEYS[3], ARGV[1], 'r|' .. ARGV[3])
end
return admitted`;

/**
 * Standalone Redis: the record's settle and the entry in one command; the entry is the sealed
 * settled record (field \`r\`). KEYS record, due, duties, entries, then reservations and
 * deadlines when a budget applies; ARGV trackId, sealed record, TTL to write a record that is
 * gone with (0: not), then now and commit | release.
 */
const SETTLE_WITH_RECORD = `${BUDGET_LUA}
if not redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL', 'XX') and tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3], 'NX')
end
redis.call('XADD', KEYS[4], '*', 't', ARGV[1], 'r', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if KEYS[5] then
  sweep(KEYS[5], KEYS[6], tonumber(ARGV[4]))
  finish(KEYS[5], KEYS[6], ARGV[1], ARGV[5])
end
return 1`;

/**
 * Forgets the group's dead consumers: every start of a replica adds one (its name is unique per
 * process) and Redis never removes them. Only one with nothing pending and silent for ten claim
 * periods, checked and removed in one script so that no entry it might take meanwhile is lost
 * with it (DELCONSUMER drops a consumer's pending entries), and never the caller itself. On
 * Redis 7.0 a read that finds nothing does not count as heard from (7.2 counts it), so a live
 * but idle replica may be forgotten too: harmless, it holds nothing and its next read that
 * finds an entry makes it again. KEYS entries; ARGV group, idle ms, the caller's name. Returns
 * how many were removed.
 */
const FORGET_DEAD_CONSUMERS = `
local removed = 0
for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local fields = {}
  for i = 1, #consumer, 2 do fields[consumer[i]] = consumer[i + 1] end
  if fields['pending'] == 0 and fields['idle'] > tonumber(ARGV[2]) and fields['name'] ~= ARGV[3] then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], fields['name'])
    removed = removed + 1
  end
end
return removed`;

/** Acknowledged entries leave the stream too: its length is the backlog (KEYS entries; ARGV group, ids…). */
const ACK = `
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
return redis.call('XDEL', KEYS[1], unpack(ARGV, 2))`;

export interface LedgerScripts {
  vgwLedgerOwe(numberOfKeys: number, ...args: Array<string | number>): Promise<Array<string | number>>;
  vgwLedgerSettle(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
  vgwLedgerDiscard(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
  vgwLedgerCreateWithRecord(numberOfKeys: number, ...args: Array<string | number>): Promise<Array<string | number>>;
  vgwLedgerSettleWithRecord(numberOfKeys: number, ...args: Array<string | number>): Promise<number>;
  vgwLedgerClaimOverdue(due: string, duties: string, entries: string, now: number, limit: number): Promise<number>;
  vgwLedgerAck(entries: string, group: string, ...ids: string[]): Promise<number>;
  vgwLedgerForgetDeadConsumers(entries: string, group: string, idleMs: number, caller: string): Promise<number>;
}

/** Defines the scripts on the client (once per client); each with or without a reservation's keys: the key count is the call's first argument. */
export function ledgerScriptsOn(client: RedisClient): LedgerScripts {
  client.defineCommand('vgwLedgerOwe', { lua: OWE });
  client.defineCommand('vgwLedgerSettle', { lua: SETTLE });
  client.defineCommand('vgwLedgerDiscard', { lua: DISCARD });
  client.defineCommand('vgwLedgerCreateWithRecord', { lua: CREATE_WITH_RECORD });
  client.defineCommand('vgwLedgerSettleWithRecord', { lua: SETTLE_WITH_RECORD });
  client.defineCommand('vgwLedgerClaimOverdue', { numberOfKeys: 3, lua: CLAIM_OVERDUE });
  client.defineCommand('vgwLedgerAck', { numberOfKeys: 1, lua: ACK });
  client.defineCommand('vgwLedgerForgetDeadConsumers', { numberOfKeys: 1, lua: FORGET_DEAD_CONSUMERS });
  return client as unknown as LedgerScripts;
}
