import { describe, expect, it } from '@jest/globals';
import type { ClaimedDelivery, DeliveryOutcome, WebhookOutbox } from './webhook-outbox.js';
import { WebhookOutcomes } from './webhook-outcomes.js';

const claim = (id: string): ClaimedDelivery => ({
  id,
  endpointId: 'e',
  type: 'inquiry.settled',
  data: {},
  occurredAt: new Date(0),
  attempt: 1,
  retrySince: new Date(0),
  leaseToken: `lease-${id}`,
});

/** An outbox whose statements are recorded and answered by hand (the SQL is test/webhook-outbox.integration.spec.ts's). */
class RecordingOutbox {
  readonly statements: Array<{ ids: string[]; answer: (written: string[]) => void; fail: (e: Error) => void }> = [];
  settleMany(outcomes: readonly { claim: ClaimedDelivery; outcome: DeliveryOutcome }[]): Promise<Set<string>> {
    return new Promise((resolve, reject) => {
      this.statements.push({
        ids: outcomes.map((o) => o.claim.id),
        answer: (written) => resolve(new Set(written)),
        fail: reject,
      });
    });
  }
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('WebhookOutcomes', () => {
  it("writes a turn's outcomes in one statement, those that come meanwhile in the next, and tells each its own", async () => {
    const outbox = new RecordingOutbox();
    const outcomes = new WebhookOutcomes(outbox as unknown as WebhookOutbox);
    const a = outcomes.write(claim('a'), { status: 'delivered' });
    const b = outcomes.write(claim('b'), { status: 'dead' });
    await turn();
    expect(outbox.statements.map((s) => s.ids)).toEqual([['a', 'b']]);
    const c = outcomes.write(claim('c'), { status: 'delivered' });
    // The same delivery twice (a lease that ran out and was claimed again here): never in one statement.
    const c2 = outcomes.write(claim('c'), { status: 'pending', retryInMs: 1 });
    outbox.statements[0].answer(['a']);
    expect(await a).toBe(true);
    expect(await b).toBe(false);
    await turn();
    expect(outbox.statements.map((s) => s.ids)).toEqual([['a', 'b'], ['c']]);
    outbox.statements[1].answer(['c']);
    expect(await c).toBe(true);
    await turn();
    expect(outbox.statements[2].ids).toEqual(['c']);
    outbox.statements[2].fail(new Error('connection lost'));
    await expect(c2).rejects.toThrow('connection lost');
    // After a failure the writer is idle again and writes the next outcome.
    const d = outcomes.write(claim('d'), { status: 'delivered' });
    await turn();
    outbox.statements[3].answer(['d']);
    expect(await d).toBe(true);
  });
});
