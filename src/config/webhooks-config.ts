import { Secret } from './secret.js';

/**
 * The webhooks slice of the configuration (docs/api.md §9, "Events to the company's services"):
 * `WEBHOOKS` / `WEBHOOKS_FILE` (the endpoints) and `WEBHOOKS_ALLOW_HTTP`. It sits in the config
 * layer (scripts/check-imports.ts): problems name the variable and the entry's id or position and
 * the field, never a value (a secret or a URL with credentials in it).
 */

type Env = Record<string, string | undefined>;

/** The events an endpoint may subscribe to (docs/api.md §9). */
export const WEBHOOK_EVENTS = ['inquiry.settled', 'inquiry.resolved', 'budget.threshold', 'ledger.parked'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

/** The client id whose endpoint receives every client's events (operators). */
export const EVERY_CLIENT = '*';

/** Standard Webhooks 1.0: a secret is `whsec_` and the base64 of its key. */
const SECRET_PREFIX = 'whsec_';
/** The Standard's bounds for a key: 24 to 64 bytes. */
const KEY_BYTES = { min: 24, max: 64 };
/** Endpoints: a file listing more is a mistake, and each holds a worker's lanes. */
export const MAX_ENDPOINTS = 50;
/** An endpoint's id is a metric label and a path of the admin answer: short and plain. */
const ENDPOINT_ID = /^[a-z0-9][a-z0-9_-]{0,39}$/;

export interface WebhookEndpoint {
  id: string;
  /** A client id, or `*` for every client's events. */
  clientId: string;
  /** The URL, held as a Secret: a receiver's token may sit in its path or query (webhooks-config.spec.ts). */
  url: Secret;
  /** The keys it signs with (several while a secret rotates: one signature each). */
  keys: Secret[];
  events: WebhookEventType[];
}

export interface WebhooksConfig {
  /** WEBHOOKS or WEBHOOKS_FILE set: only then does this replica run deliveries or mirror endpoints. */
  configured: boolean;
  endpoints: WebhookEndpoint[];
  /** `WEBHOOKS_FILE`, re-read while running; absent when given inline or not at all. */
  file?: string;
  /** `WEBHOOKS_ALLOW_HTTP=true`: `http` URLs accepted (the sandbox, tests). */
  allowHttp: boolean;
  /**
   * `WEBHOOKS_DELIVER` (default true): this replica sends deliveries. `false` on the gateway's pods
   * beside a drainer Deployment, which then delivers: an inquiry replica pays nothing for webhooks
   * but the trigger's insert in PostgreSQL (docs/performance.md, "Webhooks").
   */
  deliver: boolean;
  delivery: DeliverySettings;
}

/** How deliveries are paced; each bounded (TIMING), so that no outside number makes a timer run wild. */
export interface DeliverySettings {
  /** WEBHOOKS_MAX_IN_FLIGHT: deliveries at once per endpoint per replica (a slow receiver delays only its own). */
  maxInFlight: number;
  /** WEBHOOKS_FIRST_RETRY_MS: the first retry's delay; doubled each attempt, jittered, at most an hour. */
  firstRetryMs: number;
  /** WEBHOOKS_RETRY_FOR_SECONDS: how long a failing delivery is retried before it is dead (24 h). */
  retryForMs: number;
  /** WEBHOOKS_POLL_MS: how often each replica looks for due deliveries. */
  pollMs: number;
  /** WEBHOOKS_RETENTION_HOURS: how long delivered rows are kept (then pruned). */
  deliveredRetentionMs: number;
}

/** Each setting's variable, bounds, default and unit factor to milliseconds (or 1). */
const TIMING = {
  maxInFlight: { name: 'WEBHOOKS_MAX_IN_FLIGHT', min: 1, max: 32, fallback: 4, unit: 1 },
  firstRetryMs: { name: 'WEBHOOKS_FIRST_RETRY_MS', min: 100, max: 600_000, fallback: 5_000, unit: 1 },
  retryForMs: { name: 'WEBHOOKS_RETRY_FOR_SECONDS', min: 1, max: 7 * 86_400, fallback: 86_400, unit: 1000 },
  pollMs: { name: 'WEBHOOKS_POLL_MS', min: 50, max: 10_000, fallback: 1_000, unit: 1 },
  deliveredRetentionMs: { name: 'WEBHOOKS_RETENTION_HOURS', min: 1, max: 24 * 90, fallback: 72, unit: 3_600_000 },
} as const;

function deliveryFrom(env: Env, problems: string[]): DeliverySettings {
  const settings = {} as Record<keyof DeliverySettings, number>;
  for (const [field, { name, min, max, fallback, unit }] of Object.entries(TIMING)) {
    const raw = env[name];
    const value = raw === undefined ? fallback : Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name}: must be an integer from ${min} to ${max}`);
    }
    settings[field as keyof DeliverySettings] =
      (Number.isInteger(value) ? Math.min(max, Math.max(min, value)) : fallback) * unit;
  }
  return settings;
}

/** The key of a `whsec_<base64>` secret, or a problem (never quoting the value). */
function keyOf(raw: unknown): Buffer | string {
  if (typeof raw !== 'string' || !raw.startsWith(SECRET_PREFIX)) return `must be "${SECRET_PREFIX}<base64>"`;
  const encoded = raw.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return `must be "${SECRET_PREFIX}<base64>"`;
  const key = Buffer.from(encoded, 'base64');
  if (key.length < KEY_BYTES.min || key.length > KEY_BYTES.max) {
    return `must hold ${KEY_BYTES.min} to ${KEY_BYTES.max} bytes of key (Standard Webhooks)`;
  }
  return key;
}

function urlOf(raw: unknown, allowHttp: boolean): URL | string {
  let url: URL;
  try {
    url = new URL(typeof raw === 'string' ? raw : '');
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) {
    return allowHttp ? 'must be https or http' : 'must be https (http only with WEBHOOKS_ALLOW_HTTP=true)';
  }
  if (url.username || url.password) return 'must not hold credentials (the signature authenticates)';
  if (url.hash) return 'must not have a fragment';
  return url;
}

function endpointOf(value: unknown, where: string, allowHttp: boolean, problems: string[]): WebhookEndpoint | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(`${where}: must be {"id","clientId","url","secret","events"}`);
    return null;
  }
  const entry = value as Record<string, unknown>;
  const before = problems.length;
  for (const field of Object.keys(entry)) {
    if (!['id', 'clientId', 'url', 'secret', 'events'].includes(field)) problems.push(`${where}: unknown field`);
  }
  if (typeof entry.clientId !== 'string' || entry.clientId === '') {
    problems.push(`${where}.clientId: must be a client id or "*"`);
  }
  const url = urlOf(entry.url, allowHttp);
  if (typeof url === 'string') problems.push(`${where}.url: ${url}`);
  const secrets = Array.isArray(entry.secret) ? entry.secret : [entry.secret];
  if (secrets.length === 0 || secrets.length > 3) problems.push(`${where}.secret: one secret, or 2-3 while rotating`);
  const keys: Buffer[] = [];
  for (const secret of secrets) {
    const key = keyOf(secret);
    if (typeof key === 'string') problems.push(`${where}.secret: ${key}`);
    else keys.push(key);
  }
  const events = entry.events;
  if (
    !Array.isArray(events) ||
    events.length === 0 ||
    !events.every((e) => (WEBHOOK_EVENTS as readonly unknown[]).includes(e))
  ) {
    problems.push(`${where}.events: must list some of ${WEBHOOK_EVENTS.join(', ')}`);
  }
  if (problems.length > before || typeof url === 'string') return null;
  return {
    id: entry.id as string,
    clientId: entry.clientId as string,
    url: new Secret(url.href),
    keys: keys.map((key) => new Secret(key.toString('base64'))),
    events: [...new Set(events as WebhookEventType[])],
  };
}

/**
 * `WEBHOOKS`' JSON, checked whole; also what a changed `WEBHOOKS_FILE` goes through (a problem
 * there keeps the previous endpoints). Problems name `variable`, the entry and the field.
 */
export function parseWebhooks(
  raw: string | undefined,
  allowHttp: boolean,
  problems: string[],
  variable = 'WEBHOOKS',
): WebhookEndpoint[] {
  if (raw === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push(`${variable}: is not valid JSON`);
    return [];
  }
  if (!Array.isArray(parsed) || parsed.length > MAX_ENDPOINTS) {
    problems.push(`${variable}: must be an array of at most ${MAX_ENDPOINTS} endpoints`);
    return [];
  }
  const endpoints: WebhookEndpoint[] = [];
  const ids = new Set<string>();
  parsed.forEach((value: unknown, index) => {
    const id = (value as { id?: unknown } | null)?.id;
    const named = typeof id === 'string' && ENDPOINT_ID.test(id);
    const where = `${variable}[${named ? id : index}]`;
    const unique = named && !ids.has(id);
    if (!named) problems.push(`${where}.id: must match ${ENDPOINT_ID.source}`);
    else if (!unique) problems.push(`${where}.id: is used twice`);
    else ids.add(id);
    const endpoint = endpointOf(value, where, allowHttp, problems);
    if (endpoint && unique) endpoints.push(endpoint);
  });
  return endpoints;
}

/** The slice from the resolved environment (`WEBHOOKS_FILE`'s content already read into `WEBHOOKS`). */
export function webhooksConfigFrom(env: Env, problems: string[]): WebhooksConfig {
  const flag = env.WEBHOOKS_ALLOW_HTTP;
  if (flag !== undefined && flag !== 'true' && flag !== 'false')
    problems.push('WEBHOOKS_ALLOW_HTTP: must be true or false');
  const allowHttp = flag === 'true';
  const deliver = env.WEBHOOKS_DELIVER?.trim() || 'true';
  if (deliver !== 'true' && deliver !== 'false') problems.push('WEBHOOKS_DELIVER: must be true or false');
  const variable = env.WEBHOOKS_FILE === undefined ? 'WEBHOOKS' : 'WEBHOOKS_FILE';
  return {
    configured: env.WEBHOOKS !== undefined,
    endpoints: parseWebhooks(env.WEBHOOKS, allowHttp, problems, variable),
    file: env.WEBHOOKS_FILE,
    allowHttp,
    deliver: deliver !== 'false',
    delivery: deliveryFrom(env, problems),
  };
}
