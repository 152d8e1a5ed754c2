import jsonpointer from 'jsonpointer';

/**
 * The tracking slice of the configuration (docs/api.md §8): `UPSTREAM_TRACKING` /
 * `UPSTREAM_TRACKING_FILE` says where the upstream's request-tracking service is and how to read
 * its answer. Unset: off. It sits in the config layer (scripts/check-imports.ts): problems name
 * the variable and the field, never a value of the answer.
 */

/** A value of the answer a list may name: the JSON scalars a status can be. */
export type AnswerValue = string | number | boolean;

export interface TrackingConfig {
  /** The path under UPSTREAM_BASE_URL, `{trackId}` in it when `trackIdAt` is `path`. */
  path: string;
  method: 'POST' | 'GET';
  trackIdAt: 'body' | 'query' | 'path';
  charged: { pointer: string; yes: AnswerValue[]; no: AnswerValue[] };
  /** What a 404 means: never received (not charged), or nothing learned (ask again). */
  notFound: 'no' | 'unknown';
  /** An unknown inquiry is asked about once it is this old (clamped to AFTER_SECONDS). */
  afterSeconds: number;
  /** Questions a minute across all replicas (clamped to PER_MINUTE). */
  perMinute: number;
}

/** Bounds of the numbers an operator sets: outside them, the nearest bound is used. */
export const AFTER_SECONDS = { min: 1, max: 3_600, default: 120 } as const;
export const PER_MINUTE = { min: 1, max: 6_000, default: 60 } as const;
/** Values one list may name. */
const MAX_VALUES = 50;

/** §7's upstreamPath, once `{trackId}` stands for a segment. */
const UPSTREAM_PATH = /^\/api\/v5\/[A-Za-z0-9_/-]+$/;
const TRACK_ID_SLOT = '{trackId}';
const FIELDS = ['path', 'method', 'trackIdAt', 'charged', 'notFound', 'afterSeconds', 'perMinute'];
const WHERE = 'UPSTREAM_TRACKING';

/** Reads UPSTREAM_TRACKING (its `_FILE` form already resolved); undefined when unset or invalid. */
export function trackingConfigFrom(
  env: Record<string, string | undefined>,
  problems: string[],
): TrackingConfig | undefined {
  const raw = env.UPSTREAM_TRACKING;
  if (raw === undefined || raw.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push(`${WHERE}: is not valid JSON`);
    return undefined;
  }
  if (!isObject(parsed)) {
    problems.push(
      `${WHERE}: must be an object {path, method, trackIdAt, charged, notFound?, afterSeconds?, perMinute?}`,
    );
    return undefined;
  }
  const before = problems.length;
  const unknown = Object.keys(parsed).filter((field) => !FIELDS.includes(field));
  if (unknown.length > 0) problems.push(`${WHERE}: unknown field ${unknown[0]} (only ${FIELDS.join(', ')})`);
  const { path, method, trackIdAt, charged, notFound = 'unknown' } = parsed;
  const shape = methodAndPlace(method, trackIdAt, problems);
  checkPath(path, trackIdAt, problems);
  const answer = chargedOf(charged, problems);
  if (notFound !== 'no' && notFound !== 'unknown') problems.push(`${WHERE}.notFound: must be "no" or "unknown"`);
  const afterSeconds = clamped(parsed.afterSeconds, 'afterSeconds', AFTER_SECONDS, problems);
  const perMinute = clamped(parsed.perMinute, 'perMinute', PER_MINUTE, problems);
  if (problems.length > before || !shape || !answer) return undefined;
  return {
    path: path as string,
    ...shape,
    charged: answer,
    notFound: notFound as TrackingConfig['notFound'],
    afterSeconds,
    perMinute,
  };
}

/** `POST` with the trackId in the body; `GET` with it in the query or the path (docs/api.md §8). */
function methodAndPlace(
  method: unknown,
  trackIdAt: unknown,
  problems: string[],
): Pick<TrackingConfig, 'method' | 'trackIdAt'> | undefined {
  if (method === 'POST' && trackIdAt === 'body') return { method, trackIdAt };
  if (method === 'GET' && (trackIdAt === 'query' || trackIdAt === 'path')) return { method, trackIdAt };
  if (method !== 'POST' && method !== 'GET') problems.push(`${WHERE}.method: must be "POST" or "GET"`);
  else
    problems.push(
      `${WHERE}.trackIdAt: must be "body" with POST, "query" or "path" with GET (${String(method)} was given)`,
    );
  return undefined;
}

function checkPath(path: unknown, trackIdAt: unknown, problems: string[]): void {
  const where = `${WHERE}.path`;
  if (typeof path !== 'string') {
    problems.push(`${where}: must be a string such as /api/v5/Report/RequestStatus`);
    return;
  }
  const slots = path.split(TRACK_ID_SLOT).length - 1;
  if (trackIdAt === 'path' && slots !== 1) problems.push(`${where}: must hold {trackId} once when trackIdAt is "path"`);
  if (trackIdAt !== 'path' && slots > 0) problems.push(`${where}: holds {trackId} only when trackIdAt is "path"`);
  const concrete = path.replaceAll(TRACK_ID_SLOT, 'trackId');
  if (!UPSTREAM_PATH.test(concrete) || concrete.includes('//') || concrete.includes('..')) {
    problems.push(`${where}: must match ^/api/v5/[A-Za-z0-9_/-]+$ (plus {trackId}), without // or ..`);
  }
}

function chargedOf(charged: unknown, problems: string[]): TrackingConfig['charged'] | undefined {
  const where = `${WHERE}.charged`;
  if (!isObject(charged)) {
    problems.push(`${where}: must be an object {pointer, yes, no}`);
    return undefined;
  }
  const before = problems.length;
  const extra = Object.keys(charged).filter((field) => !['pointer', 'yes', 'no'].includes(field));
  if (extra.length > 0) problems.push(`${where}: unknown field ${extra[0]} (only pointer, yes, no)`);
  const { pointer } = charged;
  if (typeof pointer !== 'string' || !isPointer(pointer)) {
    problems.push(`${where}.pointer: must be an RFC 6901 JSON pointer such as /data/status`);
  }
  const yes = valuesOf(charged.yes, `${where}.yes`, problems);
  const no = valuesOf(charged.no, `${where}.no`, problems);
  if (yes && no && yes.some((value) => no.includes(value))) {
    problems.push(`${where}: a value is listed in both yes and no`);
  }
  if (problems.length > before || !yes || !no) return undefined;
  return { pointer: pointer as string, yes, no };
}

/** RFC 6901 §3: empty (the whole answer) or `/`-led segments whose `~` is only `~0` or `~1`. */
function isPointer(pointer: string): boolean {
  try {
    jsonpointer.compile(pointer);
  } catch {
    return false;
  }
  return !/~(?![01])/.test(pointer);
}

function valuesOf(list: unknown, where: string, problems: string[]): AnswerValue[] | undefined {
  const scalar = (value: unknown) => ['string', 'number', 'boolean'].includes(typeof value);
  if (!Array.isArray(list) || list.length < 1 || list.length > MAX_VALUES || !list.every(scalar)) {
    problems.push(`${where}: must be a list of 1 to ${MAX_VALUES} strings, numbers or booleans`);
    return undefined;
  }
  return list as AnswerValue[];
}

/** A whole number, brought within its bounds: an outside number never sets a timer unchecked. */
function clamped(
  value: unknown,
  field: string,
  bounds: { min: number; max: number; default: number },
  problems: string[],
): number {
  if (value === undefined) return bounds.default;
  if (!Number.isInteger(value)) {
    problems.push(`${WHERE}.${field}: must be a whole number (${bounds.min} to ${bounds.max})`);
    return bounds.default;
  }
  return Math.min(bounds.max, Math.max(bounds.min, value as number));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
