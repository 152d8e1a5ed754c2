/**
 * `npm run sandbox`: the gateway on PORT (3000) in front of the built-in upstream simulator,
 * with the in-process store (no Redis) and the ledger on PGlite, PostgreSQL in the process
 * (unless LEDGER_DATABASE_URL is set). One API key with every scope: SANDBOX_API_KEY, or a
 * random one generated and printed here. Ctrl-C stops both.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createGateway } from '../../src/bootstrap.js';
import { ConfigError } from '../../src/config/load-config.js';
import { UpstreamSimulator } from '../upstream-simulator/upstream-simulator.js';

const SANDBOX_USERNAME = 'sandbox-user';
const SANDBOX_PASSWORD = 'sandbox-password';

async function main(): Promise<void> {
  const apiKey = process.env.SANDBOX_API_KEY || randomBytes(24).toString('base64url');
  const simulator = new UpstreamSimulator({ username: SANDBOX_USERNAME, password: SANDBOX_PASSWORD });
  const upstreamUrl = await simulator.start(Number(process.env.SIMULATOR_PORT ?? 4010));

  const env = {
    LOG_LEVEL: 'info',
    ...process.env,
    UPSTREAM_BASE_URL: upstreamUrl,
    UPSTREAM_USERNAME: SANDBOX_USERNAME,
    UPSTREAM_PASSWORD: SANDBOX_PASSWORD,
    API_KEYS: JSON.stringify([
      {
        clientId: 'sandbox',
        keySha256: createHash('sha256').update(apiKey).digest('hex'),
        scopes: ['kyc:shahkar', 'kyc:iban', 'inquiries:read', 'kyc:advanced', 'ledger:read', 'ledger:reconcile'],
      },
    ]),
    REDIS_URL: undefined,
    REDIS_SENTINELS: undefined,
    REDIS_CLUSTER_NODES: undefined,
  };
  let gateway;
  try {
    gateway = await createGateway(env);
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
  const url = `http://127.0.0.1:${config.http.port}`;
  const today = new Date().toISOString().slice(0, 10);
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  console.log(
    [
      '',
      `Verification gateway sandbox on ${url} (OpenAPI: ${url}/docs)`,
      `Upstream simulator on ${upstreamUrl} (state: ${upstreamUrl}/__simulator/state)`,
      `API key (every scope): ${apiKey}`,
      '',
      `  curl -s -X POST ${url}/v1/kyc/shahkar -H 'X-Api-Key: ${apiKey}' -H 'Content-Type: application/json' \\`,
      `       -d '{"nationalCode":"0499370899","mobileNumber":"09121234567"}'`,
      '',
      `The ledger (${config.ledger.databaseUrl ? 'LEDGER_DATABASE_URL' : 'PGlite, in this process'}; an entry a moment after each inquiry):`,
      `  curl -s '${url}/admin/ledger?from=${today}&to=${tomorrow}' -H 'X-Api-Key: ${apiKey}'`,
      `  curl -s '${url}/admin/usage?from=${today}&to=${tomorrow}&period=day' -H 'X-Api-Key: ${apiKey}'`,
      '',
    ].join('\n'),
  );

  const stop = async () => {
    await app.close();
    await simulator.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

await main();
