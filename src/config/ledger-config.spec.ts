import { describe, expect, it } from '@jest/globals';
import { resolve } from 'node:path';
import { ledgerConfigFrom } from './ledger-config.js';

describe('the ledger configuration', () => {
  it('defaults to the embedded database and five years of entries, 90 days of results', () => {
    const problems: string[] = [];
    expect(ledgerConfigFrom({}, problems)).toEqual({
      databaseUrl: undefined,
      retentionDays: 1826,
      resultRetentionDays: 90,
      drain: true,
      dataDir: resolve('.data/ledger'),
      refusalFlushSeconds: 5,
    });
    expect(problems).toEqual([]);
  });

  it('LEDGER_REFUSAL_FLUSH_SECONDS: whole seconds from 1 to 60', () => {
    const problems: string[] = [];
    expect(ledgerConfigFrom({ LEDGER_REFUSAL_FLUSH_SECONDS: '1' }, problems).refusalFlushSeconds).toBe(1);
    expect(ledgerConfigFrom({ LEDGER_REFUSAL_FLUSH_SECONDS: '60' }, problems).refusalFlushSeconds).toBe(60);
    expect(problems).toEqual([]);
    for (const raw of ['0', '61', '1.5', 'soon']) ledgerConfigFrom({ LEDGER_REFUSAL_FLUSH_SECONDS: raw }, problems);
    expect(problems).toEqual(
      Array(4).fill('LEDGER_REFUSAL_FLUSH_SECONDS: must be a whole number of seconds from 1 to 60'),
    );
  });

  it('LEDGER_DATA_DIR: a path from the working directory or memory://, unused with a database URL', () => {
    const problems: string[] = [];
    expect(ledgerConfigFrom({ LEDGER_DATA_DIR: '/var/lib/vgw/ledger' }, problems).dataDir).toBe('/var/lib/vgw/ledger');
    expect(ledgerConfigFrom({ LEDGER_DATA_DIR: 'ledger' }, problems).dataDir).toBe(resolve('ledger'));
    expect(ledgerConfigFrom({ LEDGER_DATA_DIR: 'memory://' }, problems).dataDir).toBe('memory://');
    expect(
      ledgerConfigFrom({ LEDGER_DATABASE_URL: 'postgres://db/ledger', LEDGER_DATA_DIR: 'idb://x' }, problems).dataDir,
    ).toBe('memory://');
    expect(problems).toEqual([]);
    ledgerConfigFrom({ LEDGER_DATA_DIR: 'idb://ledger' }, problems);
    ledgerConfigFrom({ LEDGER_DATA_DIR: `/${'d'.repeat(90)}` }, problems);
    expect(problems).toEqual([
      'LEDGER_DATA_DIR: must be a directory path or memory://',
      'LEDGER_DATA_DIR: the absolute path must be at most 90 bytes (its lock is a unix socket inside it)',
    ]);
  });

  it('LEDGER_DRAIN=false needs a shared queue and database: another process writes the entries', () => {
    const shared = { LEDGER_DATABASE_URL: 'postgres://db/ledger', REDIS_URL: 'redis://r:6379', LEDGER_DRAIN: 'false' };
    const problems: string[] = [];
    expect(ledgerConfigFrom(shared, problems).drain).toBe(false);
    expect(ledgerConfigFrom({ ...shared, LEDGER_DRAIN: 'true' }, problems).drain).toBe(true);
    expect(problems).toEqual([]);
    ledgerConfigFrom({ LEDGER_DRAIN: 'false' }, problems);
    ledgerConfigFrom({ ...shared, LEDGER_DRAIN: 'no' }, problems);
    expect(problems).toEqual([
      'LEDGER_DRAIN: false needs LEDGER_DATABASE_URL (an embedded ledger is written by its own process only)',
      'LEDGER_DRAIN: must be true or false',
    ]);
  });

  it('keeps the URL as a secret and names bad variables without their values', () => {
    const problems: string[] = [];
    const config = ledgerConfigFrom({ LEDGER_DATABASE_URL: 'postgres://u:hunter2@db:5432/ledger' }, problems);
    expect(config.databaseUrl?.reveal()).toBe('postgres://u:hunter2@db:5432/ledger');
    expect(JSON.stringify(config)).not.toContain('hunter2');
    ledgerConfigFrom(
      { LEDGER_DATABASE_URL: 'mysql://u:hunter2@db', LEDGER_RETENTION_DAYS: '0', LEDGER_RESULT_RETENTION_DAYS: 'x' },
      problems,
    );
    expect(problems).toEqual([
      'LEDGER_DATABASE_URL: must be a postgres:// or postgresql:// URL',
      'LEDGER_RETENTION_DAYS: must be a whole number of days from 1 to 36500',
      'LEDGER_RESULT_RETENTION_DAYS: must be a whole number of days from 1 to 36500',
    ]);
  });

  it('refuses a result retention longer than the entries', () => {
    const problems: string[] = [];
    ledgerConfigFrom({ LEDGER_RETENTION_DAYS: '30', LEDGER_RESULT_RETENTION_DAYS: '90' }, problems);
    expect(problems).toEqual(['LEDGER_RESULT_RETENTION_DAYS: cannot exceed LEDGER_RETENTION_DAYS']);
  });
});
