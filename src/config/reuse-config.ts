import { Secret } from './secret.js';

/**
 * The reuse slice of the configuration (docs/api.md §2, "Reusing answers"): `INQUIRY_REUSE` /
 * `INQUIRY_REUSE_FILE` (per operation, how old a reused answer may be and whose answers are
 * shared) and `REUSE_HMAC_KEY` / `REUSE_HMAC_KEY_FILE` (the key of the questions' keyed hash).
 * It sits in the config layer (scripts/check-imports.ts): problems name the variable, the
 * operation and the field, never a value.
 */

/** Whose answers a caller may reuse: its own (client and end user), its client's, or any caller's. */
export const REUSE_SHARES = ['subject', 'client', 'company'] as const;
export type ReuseShare = (typeof REUSE_SHARES)[number];

/** What the operator allows for one operation. */
export interface ReusePolicy {
  /** At most this old (store clock); also the stored answers' TTL. Always > 0 here. */
  maxAgeSeconds: number;
  share: ReuseShare;
}

export interface ReuseConfig {
  /** Operations whose answers may be reused; an operation absent (or configured with 0) never is. */
  operations: Partial<Record<string, ReusePolicy>>;
  /** Keys the questions (reuse-key.ts); present whenever an operation is reusable. */
  hmacKey?: Secret;
}

/** A year: far beyond any sensible reuse, and a TTL Redis takes. */
export const MAX_REUSE_AGE_SECONDS = 31_536_000;
/** An HMAC-SHA256 key shorter than its output weakens it (RFC 2104 §3). */
export const MIN_HMAC_KEY_BYTES = 32;

const SHAPE = 'must be {"<operation>":{"maxAgeSeconds":n,"share":"subject|client|company"}}';

function parsePolicies(
  raw: string | undefined,
  names: readonly string[],
  problems: string[],
): ReuseConfig['operations'] {
  if (raw === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push('INQUIRY_REUSE: is not valid JSON');
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    problems.push(`INQUIRY_REUSE: ${SHAPE}`);
    return {};
  }
  const operations: ReuseConfig['operations'] = {};
  for (const [operation, value] of Object.entries(parsed as Record<string, unknown>)) {
    const where = `INQUIRY_REUSE.${operation}`;
    if (!names.includes(operation)) {
      problems.push(`INQUIRY_REUSE: unknown operation (only ${names.join(', ')})`);
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push(`${where}: must be an object {maxAgeSeconds, share?}`);
      continue;
    }
    const before = problems.length;
    const policy = value as Record<string, unknown>;
    if (Object.keys(policy).some((field) => field !== 'maxAgeSeconds' && field !== 'share')) {
      problems.push(`${where}: unknown field (only maxAgeSeconds, share)`);
    }
    const { maxAgeSeconds, share = 'subject' } = policy;
    if (!Number.isInteger(maxAgeSeconds) || (maxAgeSeconds as number) < 0) {
      problems.push(`${where}.maxAgeSeconds: must be a whole number of seconds, 0 or more`);
    } else if ((maxAgeSeconds as number) > MAX_REUSE_AGE_SECONDS) {
      problems.push(`${where}.maxAgeSeconds: must be at most ${MAX_REUSE_AGE_SECONDS} (a year)`);
    }
    if (!(REUSE_SHARES as readonly unknown[]).includes(share)) {
      problems.push(`${where}.share: must be one of ${REUSE_SHARES.join(', ')}`);
    }
    // 0: never reused, as if absent (docs/api.md §2).
    if (problems.length > before || maxAgeSeconds === 0) continue;
    operations[operation] = { maxAgeSeconds: maxAgeSeconds as number, share: share as ReuseShare };
  }
  return operations;
}

/**
 * Reads INQUIRY_REUSE and REUSE_HMAC_KEY (their `_FILE` forms already resolved), keyed by the
 * names of the catalog's operations.
 */
export function reuseConfigFrom(
  env: Record<string, string | undefined>,
  operationNames: readonly string[],
  problems: string[],
): ReuseConfig {
  const operations = parsePolicies(env.INQUIRY_REUSE, operationNames, problems);
  const raw = env.REUSE_HMAC_KEY;
  if (raw !== undefined && Buffer.byteLength(raw, 'utf8') < MIN_HMAC_KEY_BYTES) {
    problems.push(`REUSE_HMAC_KEY: must be at least ${MIN_HMAC_KEY_BYTES} bytes (openssl rand -base64 32)`);
    return { operations };
  }
  if (raw === undefined && Object.keys(operations).length > 0) {
    problems.push('REUSE_HMAC_KEY: is not set (required when INQUIRY_REUSE allows an operation)');
  }
  return { operations, ...(raw !== undefined ? { hmacKey: new Secret(raw) } : {}) };
}
