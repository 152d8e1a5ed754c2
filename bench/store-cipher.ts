/**
 * `npm run bench:cipher`: the cost of encryption at rest per inquiry (src/store/store-cipher.ts).
 * One inquiry on Redis writes three values: the record when it starts (pending), the record
 * settled with the upstream data, and the idempotency claim holding the replayable response.
 * Each write is measured as the store does it (JSON.stringify, then seal) against the reference
 * measured in the same run (JSON.stringify alone); reads likewise (open + JSON.parse against
 * JSON.parse). Fixed iteration counts, median of rounds. A second reference: the same seal with
 * the key as a Buffer (as the cipher held it before): on Node 24 createCipheriv turns a Buffer
 * into a key object on every call, so the ring holds KeyObjects.
 */
import { createCipheriv, randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Secret } from '../src/config/secret.js';
import { StoreCipher } from '../src/store/store-cipher.js';

const ITERATIONS = Number(process.env.BENCH_CIPHER_ITERATIONS ?? 50_000);
const ROUNDS = 5;

const trackId = randomUUID();
const pending = {
  trackId,
  clientId: 'billing-svc',
  subjectSha256: 'a'.repeat(64),
  operation: 'iban',
  requestHandlingType: 'standard',
  fingerprint: 'f'.repeat(64),
  status: 'pending',
  createdAt: new Date().toISOString(),
};
const data = {
  iban: 'IR820540102680020817909002',
  bankName: 'Bank Melli Iran',
  depositNumber: '0102680020817909002',
  depositStatus: 'ACTIVE',
  depositOwners: [{ firstName: 'Ali', lastName: 'Rezaei' }],
};
const settled = {
  ...pending,
  status: 'succeeded',
  completedAt: new Date().toISOString(),
  upstream: { code: 0, message: 'ok' },
  data,
};
const claim = {
  trackId,
  fingerprint: 'f'.repeat(64),
  state: 'done',
  claimedAt: Date.now(),
  response: {
    status: 200,
    contentType: 'application/json',
    body: { trackId, status: 'succeeded', data },
    trackId,
  },
};
const writes = [pending, settled, claim];
const context = `{vgw:inq:${trackId}}`;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** µs per call of `run`, median of ROUNDS rounds of ITERATIONS calls. */
function measure(run: () => unknown): number {
  for (let i = 0; i < ITERATIONS / 10; i++) run();
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    for (let i = 0; i < ITERATIONS; i++) run();
    rounds.push(((performance.now() - start) * 1000) / ITERATIONS);
  }
  return median(rounds);
}

const cipher = new StoreCipher([
  { id: 'k2', key: new Secret(randomBytes(32).toString('base64')) },
  { id: 'k1', key: new Secret(randomBytes(32).toString('base64')) },
]);
const sealedWrites = writes.map((value) => cipher.seal(JSON.stringify(value), context));
const plainWrites = writes.map((value) => JSON.stringify(value));

let sink = 0;
const perInquiryWrite = measure(() => {
  for (const value of writes) sink += cipher.seal(JSON.stringify(value), context).length;
});
const perInquiryWriteReference = measure(() => {
  for (const value of writes) sink += JSON.stringify(value).length;
});
const bufferKey = randomBytes(32);
const ivs = randomBytes(12 * 256);
let ivAt = 0;
/** StoreCipher.seal as it was with a Buffer key (same IV pool, AAD and output). */
function sealWithBufferKey(plain: string): string {
  const iv = ivs.subarray(ivAt, ivAt + 12);
  ivAt = (ivAt + 12) % ivs.length;
  const c = createCipheriv('aes-256-gcm', bufferKey, iv);
  c.setAAD(Buffer.from(context, 'utf8'));
  return `enc:v1:k0:${Buffer.concat([iv, c.update(plain, 'utf8'), c.final(), c.getAuthTag()]).toString('base64')}`;
}
const perInquiryWriteBufferKey = measure(() => {
  for (const value of writes) sink += sealWithBufferKey(JSON.stringify(value)).length;
});
const readSettled = measure(() => {
  sink += (JSON.parse(cipher.open(sealedWrites[1], context)) as { status: string }).status.length;
});
const readSettledReference = measure(() => {
  sink += (JSON.parse(plainWrites[1]) as { status: string }).status.length;
});

const bytesPlain = plainWrites.reduce((sum, v) => sum + v.length, 0);
const bytesSealed = sealedWrites.reduce((sum, v) => sum + v.length, 0);
const rows = [
  ['per inquiry, 3 writes (stringify + seal)', perInquiryWrite, perInquiryWriteReference],
  ['the same, sealed with a Buffer key (before)', perInquiryWriteBufferKey, perInquiryWriteReference],
  ['one read of a settled record (open + parse)', readSettled, readSettledReference],
] as const;
console.log(`\nEncryption at rest (AES-256-GCM, Node ${process.version}), ${ITERATIONS} × ${ROUNDS} rounds, median`);
console.log('| path | encrypted µs | reference µs (JSON only) | added µs |');
console.log('|---|---|---|---|');
for (const [name, sealed, reference] of rows) {
  console.log(`| ${name} | ${sealed.toFixed(2)} | ${reference.toFixed(2)} | +${(sealed - reference).toFixed(2)} |`);
}
console.log(
  `stored bytes per inquiry: ${bytesPlain} in clear, ${bytesSealed} sealed (+${bytesSealed - bytesPlain}, base64 and 28-byte IV/tag)`,
);
if (sink < 0) console.log(sink);
