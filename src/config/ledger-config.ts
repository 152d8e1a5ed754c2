import { resolve } from 'node:path';
import { Secret } from './secret.js';

type Env = Record<string, string | undefined>;

/** The ledger's slice of the configuration (docs/api.md §7, docs/operations.md "Ledger"). */
export interface LedgerConfig {
  /** `postgres://` URL (a secret: it may hold a password); undefined: embedded PGlite, one replica. */
  databaseUrl?: Secret;
  /** How long entries are kept: whole monthly partitions dropped after it (FATF R.11: five years). */
  retentionDays: number;
  /** How long the sealed upstream `data` is kept (its own monthly partitions). */
  resultRetentionDays: number;
  /**
   * LEDGER_DRAIN: this process writes the queue's entries to PostgreSQL (default). `false` on
   * inquiry replicas when a drainer Deployment does it (the chart's `ledger.drainer.replicas`):
   * the drain's CPU, about 40 µs per entry inside a loaded gateway against 16 µs alone, leaves
   * the inquiry path (docs/performance.md, "Ledger").
   */
  drain: boolean;
  /**
   * LEDGER_DATA_DIR: where the embedded ledger keeps its files (an absolute path), or `memory://`
   * (lost with the process). Unused with a database URL.
   */
  dataDir: string;
  /** LEDGER_REFUSAL_FLUSH_SECONDS (1-60, default 5): how often refusal counts are added to the ledger. */
  refusalFlushSeconds: number;
}

/** LEDGER_DATA_DIR's value for a ledger kept in memory only. */
export const IN_MEMORY = 'memory://';
/**
 * The directory's lock is a unix socket in it (ledger-database.ts), and a socket's path holds
 * at most 107 bytes on Linux: the directory's own path is kept under this.
 */
export const DATA_DIR_MAX_BYTES = 90;

function days(env: Env, name: string, fallback: number, problems: string[]): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 36_500) {
    problems.push(`${name}: must be a whole number of days from 1 to 36500`);
    return fallback;
  }
  return value;
}

/** Reads LEDGER_* (LEDGER_DATABASE_URL_FILE already resolved); problems by name, never by value. */
export function ledgerConfigFrom(env: Env, problems: string[]): LedgerConfig {
  const url = env.LEDGER_DATABASE_URL?.trim() || undefined;
  if (url !== undefined && !/^postgres(ql)?:\/\//.test(url)) {
    problems.push('LEDGER_DATABASE_URL: must be a postgres:// or postgresql:// URL');
  }
  const retentionDays = days(env, 'LEDGER_RETENTION_DAYS', 1826, problems);
  const resultRetentionDays = days(env, 'LEDGER_RESULT_RETENTION_DAYS', 90, problems);
  if (resultRetentionDays > retentionDays) {
    problems.push('LEDGER_RESULT_RETENTION_DAYS: cannot exceed LEDGER_RETENTION_DAYS');
  }
  const drain = env.LEDGER_DRAIN?.trim() || 'true';
  if (drain !== 'true' && drain !== 'false') problems.push('LEDGER_DRAIN: must be true or false');
  // Another process must drain what this one queues: only a shared database (and a shared queue:
  // checked beside the store's mode, config/load-config.ts) allow it.
  if (drain === 'false' && url === undefined) {
    problems.push(
      'LEDGER_DRAIN: false needs LEDGER_DATABASE_URL (an embedded ledger is written by its own process only)',
    );
  }
  return {
    databaseUrl: url === undefined ? undefined : new Secret(url),
    retentionDays,
    resultRetentionDays,
    drain: drain !== 'false',
    dataDir: url === undefined ? dataDir(env, problems) : IN_MEMORY,
    refusalFlushSeconds: refusalFlushSeconds(env, problems),
  };
}

/** LEDGER_REFUSAL_FLUSH_SECONDS: a whole number of seconds from 1 to 60 (a replica killed loses at most that). */
function refusalFlushSeconds(env: Env, problems: string[]): number {
  const raw = env.LEDGER_REFUSAL_FLUSH_SECONDS?.trim();
  if (raw === undefined || raw === '') return 5;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 60) {
    problems.push('LEDGER_REFUSAL_FLUSH_SECONDS: must be a whole number of seconds from 1 to 60');
    return 5;
  }
  return value;
}

/** LEDGER_DATA_DIR, relative to the working directory (default `.data/ledger`), or `memory://`. */
function dataDir(env: Env, problems: string[]): string {
  const raw = env.LEDGER_DATA_DIR?.trim() || '.data/ledger';
  if (raw === IN_MEMORY) return IN_MEMORY;
  // PGlite reads other schemes (idb://, a misspelt memory:/) as its own or as a relative path.
  if (/^[a-z][a-z0-9+.-]*:/i.test(raw) || raw.includes('\0')) {
    problems.push('LEDGER_DATA_DIR: must be a directory path or memory://');
    return IN_MEMORY;
  }
  const path = resolve(raw);
  if (Buffer.byteLength(path) > DATA_DIR_MAX_BYTES) {
    problems.push(
      `LEDGER_DATA_DIR: the absolute path must be at most ${DATA_DIR_MAX_BYTES} bytes (its lock is a unix socket inside it)`,
    );
  }
  return path;
}
