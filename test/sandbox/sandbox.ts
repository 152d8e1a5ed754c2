/**
 * `npm run sandbox`: the gateway on PORT (3000) in front of the built-in upstream simulator,
 * without Redis, the ledger and the records beside it on PGlite, PostgreSQL in a worker thread,
 * kept in .data/ledger so that they survive a restart (LEDGER_DATA_DIR; unless
 * LEDGER_DATABASE_URL is set). Ctrl-C stops both. Its callers and test data are listed
 * in docs/local-stack.md ("The sandbox's callers and test data"):
 * - an API key with every scope: SANDBOX_API_KEY, or a random one generated and printed here;
 * - a narrow key with `kyc:shahkar` only (the first key plus `-shahkar-only`), for 403 answers;
 * - JWT callers: a key pair made at each start (sandbox-jwt.ts); `npm run sandbox:jwt` mints tokens;
 * - the simulator's test inputs (SANDBOX_INPUT_OUTCOMES): a non-match and supplier failures;
 * - operations added with INQUIRY_OPERATIONS (or its _FILE) from the environment, answered by the
 *   simulator, their scopes on the every-scope key (sandbox-operations.ts).
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { relative } from 'node:path';
import { createGateway } from '../../src/bootstrap.js';
import { ConfigError, loadConfig } from '../../src/config/load-config.js';
import { startupSettled } from '../../src/health/startup-settled.js';
import { JsonLogger } from '../../src/observability/json-logger.js';
import { SANDBOX_INPUT_OUTCOMES, UpstreamSimulator } from '../upstream-simulator/upstream-simulator.js';
import { addedOperationNames } from './sandbox-operations.js';
import { sandboxStoreKeys } from './sandbox-store-key.js';
import { SANDBOX_JWT_AUDIENCE, SANDBOX_JWT_ISSUER, createSandboxSigningKey, mintSandboxToken } from './sandbox-jwt.js';

const SANDBOX_USERNAME = 'sandbox-user';
const SANDBOX_PASSWORD = 'sandbox-password';
const ALL_SCOPES = ['kyc:shahkar', 'kyc:iban', 'inquiries:read', 'kyc:advanced', 'ledger:read', 'ledger:reconcile'];

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The checked-out commit for vgw_build_info, when this is a git work tree. */
function gitCommit(): string | undefined {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/** Where the banner says the ledger is, and whether it outlives the sandbox. */
function ledgerWhere(ledger: { databaseUrl?: unknown; dataDir: string }): string {
  if (ledger.databaseUrl) return 'LEDGER_DATABASE_URL';
  if (ledger.dataDir === 'memory://')
    return 'PGlite in memory (LEDGER_DATA_DIR=memory://): lost when the sandbox stops';
  const path = relative(process.cwd(), ledger.dataDir);
  const shown = path.startsWith('..') ? ledger.dataDir : path;
  return `PGlite in ${shown}: kept when the sandbox stops and restarts (LEDGER_DATA_DIR)`;
}

/** The sandbox's reuse policy: a day for Shahkar answers within a client, a week for IBANs company-wide. */
const SANDBOX_REUSE = JSON.stringify({
  shahkar: { maxAgeSeconds: 86_400, share: 'client' },
  iban: { maxAgeSeconds: 604_800, share: 'company' },
});

async function main(): Promise<void> {
  const apiKey = process.env.SANDBOX_API_KEY || randomBytes(24).toString('base64url');
  const narrowKey = `${apiKey}-shahkar-only`;
  const simulator = new UpstreamSimulator({
    username: SANDBOX_USERNAME,
    password: SANDBOX_PASSWORD,
    inputOutcomes: SANDBOX_INPUT_OUTCOMES,
  });
  const upstreamUrl = await simulator.start(Number(process.env.SIMULATOR_PORT ?? 4010));
  const signingKey = await createSandboxSigningKey();
  const storeKeys = sandboxStoreKeys(process.env);
  const added = addedOperationNames(process.env);

  const env = {
    LOG_LEVEL: 'info',
    BUILD_COMMIT: gitCommit(),
    ...process.env,
    UPSTREAM_BASE_URL: upstreamUrl,
    UPSTREAM_USERNAME: SANDBOX_USERNAME,
    UPSTREAM_PASSWORD: SANDBOX_PASSWORD,
    API_KEYS: JSON.stringify([
      {
        clientId: 'sandbox',
        keySha256: sha256(apiKey),
        scopes: [...ALL_SCOPES, ...added.map((name) => `kyc:${name}`)],
      },
      { clientId: 'sandbox-shahkar-only', keySha256: sha256(narrowKey), scopes: ['kyc:shahkar'] },
    ]),
    JWT_PUBLIC_KEY: signingKey.publicKeyPem,
    JWT_JWKS_URL: undefined,
    JWT_ISSUER: SANDBOX_JWT_ISSUER,
    JWT_AUDIENCE: SANDBOX_JWT_AUDIENCE,
    // The sandbox's throwaway key, unless the operator gave a ring (STORE_ENCRYPTION_KEYS or its _FILE).
    ...(storeKeys ? { STORE_ENCRYPTION_KEYS: storeKeys.keys } : {}),
    // Reuse of paid answers on (docs/api.md §2), with a throwaway key, unless the operator set them.
    ...(process.env.INQUIRY_REUSE || process.env.INQUIRY_REUSE_FILE ? {} : { INQUIRY_REUSE: SANDBOX_REUSE }),
    ...(process.env.REUSE_HMAC_KEY || process.env.REUSE_HMAC_KEY_FILE
      ? {}
      : { REUSE_HMAC_KEY: randomBytes(32).toString('base64url') }),
    // Webhooks to a receiver on loopback (npm run webhook-receiver prints the WEBHOOKS to set).
    WEBHOOKS_ALLOW_HTTP: process.env.WEBHOOKS_ALLOW_HTTP ?? 'true',
    // Money beside units in usage and the console (an example price), unless the operator set one.
    COST_UNIT_PRICE: process.env.COST_UNIT_PRICE ?? '{"amount":"25000","currency":"IRR"}',
    REDIS_URL: undefined,
    REDIS_SENTINELS: undefined,
    REDIS_CLUSTER_NODES: undefined,
  };
  // Start-up's ~30 info lines (modules, routes, the ledger opening) would bury the banner: only
  // errors until it is printed, then LOG_LEVEL (info). A LOG_LEVEL set by hand holds throughout.
  let gateway;
  let logger;
  try {
    logger = new JsonLogger(loadConfig(env).logging.level);
    if (!process.env.LOG_LEVEL) logger.pino.level = 'error';
    gateway = await createGateway(env, { logger });
  } catch (error) {
    await simulator.stop();
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(78);
    }
    throw error;
  }
  const { app, config } = gateway;
  await app.listen({ port: config.http.port, host: '127.0.0.1' });
  await signingKey.publish(config.http.port);
  // The banner comes last, once the first token attempt has finished and the ledger is open.
  await startupSettled(app);
  await new Promise<void>((resolve) => logger.pino.flush(() => resolve()));
  const url = `http://127.0.0.1:${config.http.port}`;
  // /console, /admin/*, /metrics and /docs move to OPS_PORT when it is set (docs/operations.md).
  const opsUrl = config.http.opsPort === undefined ? url : `http://127.0.0.1:${config.http.opsPort}`;
  const inputs = Object.entries(SANDBOX_INPUT_OUTCOMES).map(([input, outcome]) => `${input} (${outcome})`);
  const today = new Date().toISOString().slice(0, 10);
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  console.log(
    [
      '',
      `Verification gateway sandbox on ${url} (OpenAPI: ${opsUrl}/docs, metrics: ${opsUrl}/metrics)`,
      `Upstream simulator on ${upstreamUrl} (state: ${upstreamUrl}/__simulator/state)`,
      `API key (every scope): ${apiKey}`,
      `API key (kyc:shahkar only): ${narrowKey}`,
      `JWT (an app's end user; more with npm run --silent sandbox:jwt): ${await mintSandboxToken(config.http.port)}`,
      `Operators' console: ${opsUrl}/console (type the first API key)`,
      `Test inputs: ${inputs.join(', ')}; any other valid input matches.`,
      storeKeys
        ? `Upstream results in the ledger are sealed with ${storeKeys.said}, never for production.`
        : `Upstream results in the ledger are sealed with STORE_ENCRYPTION_KEYS${process.env.STORE_ENCRYPTION_KEYS ? '' : '_FILE'}.`,
      '',
      `  curl -s -X POST ${url}/v1/kyc/shahkar -H 'X-Api-Key: ${apiKey}' -H 'Content-Type: application/json' \\`,
      `       -d '{"nationalCode":"0499370899","mobileNumber":"09121234567"}'`,
      `  (add -i -H 'Cache-Control: max-age=600' and send it twice: the second is reused, see Age and Cache-Status)`,
      ...(added.length > 0
        ? [`Added operations (INQUIRY_OPERATIONS): ${added.map((n) => `POST /v1/kyc/${n}`).join(', ')}`]
        : []),
      '',
      ...(config.webhooks.configured
        ? [`Webhooks (WEBHOOKS) to: ${config.webhooks.endpoints.map((e) => e.id).join(', ')}, as each inquiry settles`]
        : []),
      `The ledger (${ledgerWhere(config.ledger)}; an entry a moment after each inquiry):`,
      `  curl -s '${opsUrl}/admin/ledger?from=${today}&to=${tomorrow}' -H 'X-Api-Key: ${apiKey}'`,
      `  curl -s '${opsUrl}/admin/usage?from=${today}&to=${tomorrow}&period=day' -H 'X-Api-Key: ${apiKey}'`,
      '',
    ].join('\n'),
  );
  logger.pino.level = config.logging.level;

  const stop = async () => {
    signingKey.withdraw();
    await app.close();
    await simulator.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

await main();
