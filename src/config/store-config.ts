import { readFileSync } from 'node:fs';
import type { HostPort, RedisAuth, RedisTls, StoreConfig } from './app-config.js';
import type { EnvironmentVariables } from './environment.js';
import { Secret } from './secret.js';

/**
 * The store's slice: which Redis (standalone, Sentinel, Cluster) or none (in memory), its
 * credentials as Secrets and its TLS files read now. Problems are pushed by variable name.
 */
export function storeConfig(vars: EnvironmentVariables, problems: string[]): StoreConfig {
  const keyPrefix = vars.REDIS_KEY_PREFIX;
  const chosen = [
    vars.REDIS_URL && 'REDIS_URL',
    vars.REDIS_SENTINELS && 'REDIS_SENTINELS',
    vars.REDIS_CLUSTER_NODES && 'REDIS_CLUSTER_NODES',
  ].filter(Boolean);
  if (chosen.length > 1) {
    problems.push(`${chosen[0]}: set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES`);
    return { mode: 'memory', keyPrefix };
  }
  if (chosen.length === 0) {
    for (const name of REDIS_ONLY_VARIABLES) {
      if (vars[name] !== undefined)
        problems.push(`${name}: only used with a Redis (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES)`);
    }
    return { mode: 'memory', keyPrefix };
  }
  let auth: RedisAuth = { username: vars.REDIS_USERNAME, password: secret(vars.REDIS_PASSWORD) };
  let tlsWanted = vars.REDIS_TLS === 'true';
  if (vars.REDIS_SENTINELS) {
    if (!vars.REDIS_SENTINEL_NAME) problems.push('REDIS_SENTINEL_NAME: required with REDIS_SENTINELS');
    return {
      mode: 'sentinel',
      keyPrefix,
      sentinels: hostPorts(vars.REDIS_SENTINELS),
      name: vars.REDIS_SENTINEL_NAME ?? '',
      auth,
      sentinelAuth: { username: vars.REDIS_SENTINEL_USERNAME, password: secret(vars.REDIS_SENTINEL_PASSWORD) },
      tls: redisTls(tlsWanted, vars, problems),
    };
  }
  if (vars.REDIS_SENTINEL_USERNAME || vars.REDIS_SENTINEL_PASSWORD) {
    problems.push('REDIS_SENTINEL_PASSWORD: only used with REDIS_SENTINELS');
  }
  if (vars.REDIS_CLUSTER_NODES) {
    return {
      mode: 'cluster',
      keyPrefix,
      nodes: hostPorts(vars.REDIS_CLUSTER_NODES),
      auth,
      tls: redisTls(tlsWanted, vars, problems),
    };
  }
  // Standalone: credentials in the URL are taken out of it, so that only the Secret holds them.
  let url: URL;
  try {
    url = new URL(vars.REDIS_URL as string);
  } catch {
    if (!problems.some((p) => p.startsWith('REDIS_URL'))) problems.push('REDIS_URL: is not a valid URL');
    return { mode: 'memory', keyPrefix };
  }
  if (url.username || url.password) {
    if (vars.REDIS_USERNAME || vars.REDIS_PASSWORD) {
      problems.push(
        'REDIS_PASSWORD: set the credentials either in REDIS_URL or in REDIS_USERNAME/REDIS_PASSWORD, not both',
      );
    }
    auth = {
      username: url.username ? decodeURIComponent(url.username) : undefined,
      password: secret(url.password ? decodeURIComponent(url.password) : undefined),
    };
    url.username = '';
    url.password = '';
  }
  if (url.protocol === 'rediss:') {
    if (vars.REDIS_TLS === 'false') problems.push('REDIS_TLS: false contradicts a rediss:// REDIS_URL');
    tlsWanted = true;
  }
  return { mode: 'standalone', keyPrefix, url: url.toString(), auth, tls: redisTls(tlsWanted, vars, problems) };
}

/** Settings that mean nothing without Redis: set alone, they are a mistake worth stopping for. */
const REDIS_ONLY_VARIABLES = [
  'REDIS_USERNAME',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_USERNAME',
  'REDIS_SENTINEL_PASSWORD',
  'REDIS_TLS',
  'REDIS_TLS_CA_FILE',
  'REDIS_TLS_CERT_FILE',
  'REDIS_TLS_KEY_FILE',
] as const;

function secret(value: string | undefined): Secret | undefined {
  return value === undefined ? undefined : new Secret(value);
}

/** TLS settings, with the PEM files read now: an unreadable file stops startup, naming the variable. */
function redisTls(wanted: boolean, vars: EnvironmentVariables, problems: string[]): RedisTls | undefined {
  const files = ['REDIS_TLS_CA_FILE', 'REDIS_TLS_CERT_FILE', 'REDIS_TLS_KEY_FILE'] as const;
  if (!wanted) {
    for (const name of files) {
      if (vars[name]) problems.push(`${name}: needs TLS (a rediss:// REDIS_URL, or REDIS_TLS=true)`);
    }
    return undefined;
  }
  if (Boolean(vars.REDIS_TLS_CERT_FILE) !== Boolean(vars.REDIS_TLS_KEY_FILE)) {
    problems.push(
      'REDIS_TLS_CERT_FILE: a client certificate needs its key (REDIS_TLS_KEY_FILE), and the other way round',
    );
  }
  const read = (name: (typeof files)[number]): string | undefined => {
    const path = vars[name];
    if (!path) return undefined;
    try {
      return readFileSync(path, 'utf8');
    } catch {
      problems.push(`${name}: cannot read the file it names`);
      return undefined;
    }
  };
  return { ca: read('REDIS_TLS_CA_FILE'), cert: read('REDIS_TLS_CERT_FILE'), key: secret(read('REDIS_TLS_KEY_FILE')) };
}

function hostPorts(list: string): HostPort[] {
  return list.split(',').map((item) => {
    const at = item.lastIndexOf(':');
    return { host: item.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(item.slice(at + 1)) };
  });
}
