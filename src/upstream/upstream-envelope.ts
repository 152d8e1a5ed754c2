import type { UpstreamFieldError } from './upstream-error.js';

/** The response envelope of docs/upstream-api.md §2.2. */
export interface UpstreamMeta {
  trackId?: string;
  status?: string;
  isSuccess: boolean;
  code: number;
  message?: string;
  errorMessage?: string | null;
  errorType?: string | null;
  errors?: unknown[];
}

export interface UpstreamEnvelope<T = unknown> {
  meta: UpstreamMeta;
  data: T;
}

/** Token data of §2.3 (`expiresTn` is spelled so by the locked v5 contract, §9.2). */
export interface UpstreamTokenData {
  accessToken: string;
  tokenType: string;
  expiresTn: number;
  refreshToken: string;
}

/**
 * How deep and how large an envelope may be. The contract's `data` is an object (§2.2); the
 * deepest the gateway knows is IbanInquiry's `data.owners[i].lastName` (envelope depth 4), and
 * `meta.errors[i].message` is as deep. Anything far beyond is not an answer the gateway can
 * store, replay or serialise safely (deep nesting overflows recursive serialisers), so it is
 * malformed: the caller gets 502 and the record `unknown`. The byte size is bounded by the
 * transport before parsing.
 */
export const ENVELOPE_MAX_DEPTH = 12;
export const ENVELOPE_MAX_NODES = 10_000;

export function parseEnvelope(text: string): UpstreamEnvelope | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
  if (!isBoundedJson(parsed, ENVELOPE_MAX_DEPTH, ENVELOPE_MAX_NODES)) return null;
  const data = (parsed as { data?: unknown }).data;
  if (data !== undefined && data !== null && (typeof data !== 'object' || Array.isArray(data))) return null;
  const meta = (parsed as { meta?: unknown }).meta as Partial<UpstreamMeta> | undefined;
  if (typeof meta !== 'object' || meta === null) return null;
  if (typeof meta.isSuccess !== 'boolean' || typeof meta.code !== 'number') return null;
  return parsed as UpstreamEnvelope;
}

export function isTokenData(data: unknown): data is UpstreamTokenData {
  const d = data as Partial<UpstreamTokenData> | null;
  return (
    typeof d === 'object' &&
    d !== null &&
    typeof d.accessToken === 'string' &&
    d.accessToken.length > 0 &&
    typeof d.refreshToken === 'string' &&
    d.refreshToken.length > 0 &&
    typeof d.expiresTn === 'number' &&
    Number.isFinite(d.expiresTn) &&
    d.expiresTn > 0
  );
}

/** `meta.errors` elements are "not shown" (§2.2); accept `{field|name|key, message}` shapes. */
export function fieldErrors(errors: unknown[] | undefined): UpstreamFieldError[] {
  if (!Array.isArray(errors)) return [];
  return errors.flatMap((e) => {
    if (typeof e !== 'object' || e === null) return [];
    const o = e as Record<string, unknown>;
    const field = o.field ?? o.name ?? o.key ?? o.propertyName;
    const message = o.message ?? o.errorMessage;
    return typeof field === 'string' ? [{ field, message: typeof message === 'string' ? message : 'invalid' }] : [];
  });
}

/**
 * True when parsed JSON nests at most `maxDepth` containers deep and holds at most `maxNodes`
 * values. Iterative, so a hostile depth cannot overflow the stack while checking.
 */
export function isBoundedJson(value: unknown, maxDepth: number, maxNodes: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  let nodes = 0;
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (++nodes > maxNodes) return false;
    if (typeof current !== 'object' || current === null) continue;
    if (depth > maxDepth) return false;
    for (const child of Array.isArray(current) ? current : Object.values(current)) stack.push([child, depth + 1]);
  }
  return true;
}
