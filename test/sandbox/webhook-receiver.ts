/**
 * `npm run webhook-receiver`: a receiver of the gateway's webhooks for the sandbox (docs/api.md
 * §9, "The receiver's side"), on loopback only. It verifies each delivery with the official
 * `standardwebhooks` package, as a company service would, prints each verified event on one line
 * and answers 204; a delivery that does not verify (forged, replayed over 5 minutes late, or
 * signed with another secret) is refused with 400 and said on stderr.
 *
 * - WEBHOOK_RECEIVER_PORT (4020): where it listens, on 127.0.0.1.
 * - WEBHOOK_SECRET: the endpoint's `whsec_…` secret; a random one is made and printed without it.
 * - WEBHOOK_RECEIVER_STATUS (204): what it answers a verified delivery; 500 shows the gateway's
 *   retries (the same webhook-id again), 410 disables the endpoint.
 *
 * Its banner prints the WEBHOOKS value that points `npm run sandbox` at it.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

/** A delivery is a small JSON event: anything larger is refused unread. */
const MAX_BODY_BYTES = 256 * 1024;
/** Ids already printed, to tell a retry from a new event (a real receiver keeps them durably). */
const MAX_REMEMBERED = 10_000;
const EVENTS = ['inquiry.settled', 'inquiry.resolved', 'budget.threshold', 'ledger.parked'];

function setting(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    console.error(`${name}: must be an integer from ${min} to ${max}`);
    process.exit(78);
  }
  return value;
}

const port = setting('WEBHOOK_RECEIVER_PORT', 4020, 0, 65_535);
const answer = setting('WEBHOOK_RECEIVER_STATUS', 204, 200, 599);
const secret = process.env.WEBHOOK_SECRET || `whsec_${randomBytes(32).toString('base64')}`;
let webhook: Webhook;
try {
  webhook = new Webhook(secret);
} catch {
  console.error('WEBHOOK_SECRET: must be "whsec_<base64>"');
  process.exit(78);
}
const seen = new Set<string>();

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  let size = 0;
  request.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  });
  request.on('end', () => {
    if (request.method !== 'POST' || size > MAX_BODY_BYTES) {
      response.statusCode = request.method !== 'POST' ? 405 : 413;
      response.end();
      return;
    }
    const body = Buffer.concat(chunks).toString('utf8');
    let event: { type: string; timestamp: string; data: unknown };
    try {
      event = webhook.verify(body, request.headers as Record<string, string>) as typeof event;
    } catch (error) {
      console.error(`refused a delivery (400): ${(error as Error).message}`);
      response.statusCode = 400;
      response.end();
      return;
    }
    const id = String(request.headers['webhook-id']);
    const again = seen.has(id) ? ' (again: a retry of an id already seen; deduplicate on webhook-id)' : '';
    if (!again && seen.size < MAX_REMEMBERED) seen.add(id);
    console.log(`verified ${event.type} webhook-id=${id}${again} ${JSON.stringify(event.data)}`);
    response.statusCode = answer;
    response.end();
  });
});

server.listen(port, '127.0.0.1', () => {
  const { port: bound } = server.address() as { port: number };
  const url = `http://127.0.0.1:${bound}/`;
  const webhooks = JSON.stringify([{ id: 'sandbox', clientId: '*', url, secret, events: EVENTS }]);
  console.log(
    [
      `Webhook receiver on ${url} (verifies each delivery with the standardwebhooks package; answers ${answer})`,
      `Secret: ${secret}${process.env.WEBHOOK_SECRET ? '' : ' (made now; WEBHOOK_SECRET chooses it)'}`,
      'Point the sandbox at it, in another terminal:',
      `  WEBHOOKS='${webhooks}' npm run sandbox`,
      '',
    ].join('\n'),
  );
});

const stop = () => {
  server.close(() => process.exit(0));
  // The gateway keeps its connections alive: closed here, or close would wait for them.
  server.closeAllConnections();
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
