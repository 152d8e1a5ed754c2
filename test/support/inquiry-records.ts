import { randomUUID } from 'node:crypto';
import type { InquiryRecord } from '../../src/inquiry/inquiry-record.js';

/** A pending IBAN inquiry of `svc-a` opened now, for the inquiry steps' unit specs; `fields` override. */
export function pendingRecord(fields: Partial<InquiryRecord> = {}): InquiryRecord {
  return {
    trackId: randomUUID(),
    clientId: 'svc-a',
    operation: 'iban',
    requestHandlingType: 'standard',
    fingerprint: 'f'.repeat(64),
    status: 'pending',
    createdAt: new Date().toISOString(),
    ...fields,
  };
}
