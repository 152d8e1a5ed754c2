import { Secret } from '../config/secret.js';

type Env = Record<string, string | undefined>;

/** The ledger's slice of the configuration (docs/api.md §7, docs/operations.md "Ledger"). */
export interface LedgerConfig {
  /** `postgres://` URL (a secret: it may hold a password); undefined: embedded PGlite, one replica. */
  databaseUrl?: Secret;
  /** How long entries are kept: whole monthly partitions dropped after it (FATF R.11: five years). */
  retentionDays: number;
  /** How long the sealed upstream `data` is kept (its own monthly partitions). */
  resultRetentionDays: number;
}

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
  return { databaseUrl: url === undefined ? undefined : new Secret(url), retentionDays, resultRetentionDays };
}
