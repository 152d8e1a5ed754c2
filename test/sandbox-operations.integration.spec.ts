/**
 * The sandbox's added operations (test/sandbox/sandbox-operations.ts): the names read from
 * INQUIRY_OPERATIONS or its _FILE, for the scopes of the sandbox's every-scope key.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { addedOperationNames } from './sandbox/sandbox-operations.js';

const dir = mkdtempSync(join(tmpdir(), 'vgw-sandbox-operations-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const OPERATIONS = JSON.stringify([
  { name: 'card-to-iban', upstreamPath: '/api/v5/KYC/CardToIban', fields: { cardNumber: { type: 'cardNumber' } } },
  { name: 'postal-address', upstreamPath: '/api/v5/KYC/Address', fields: { postalCode: { type: 'postalCode' } } },
]);

describe('the sandbox’s added operations', () => {
  it('reads their names from INQUIRY_OPERATIONS, or else from INQUIRY_OPERATIONS_FILE', () => {
    expect(addedOperationNames({ INQUIRY_OPERATIONS: OPERATIONS })).toEqual(['card-to-iban', 'postal-address']);
    const file = join(dir, 'operations.json');
    writeFileSync(file, OPERATIONS);
    expect(addedOperationNames({ INQUIRY_OPERATIONS_FILE: file })).toEqual(['card-to-iban', 'postal-address']);
    expect(addedOperationNames({})).toEqual([]);
  });

  it('gives none for a list the gateway will refuse at start (it names the problem itself)', () => {
    for (const bad of ['[{', '{"name":"x"}', '[null, 7]'])
      expect(addedOperationNames({ INQUIRY_OPERATIONS: bad })).toEqual([]);
    expect(addedOperationNames({ INQUIRY_OPERATIONS_FILE: join(dir, 'missing.json') })).toEqual([]);
  });
});
