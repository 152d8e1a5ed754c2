/**
 * `npm run openapi`: writes docs/openapi.json, the document the gateway serves at /docs-json,
 * from the code (controllers, DTOs, decorators). test/openapi.e2e.spec.ts fails when the
 * committed file and the served document differ, so run this after changing the API.
 * The gateway is built as the sandbox builds it (in-process store, the upstream simulator),
 * because the document is taken from a live application's routes.
 */
import { writeFileSync } from 'node:fs';
import { createGateway } from '../src/bootstrap.js';
import { UpstreamSimulator } from '../test/upstream-simulator/upstream-simulator.js';

const OPENAPI_FILE = new URL('../../docs/openapi.json', import.meta.url);

const simulator = new UpstreamSimulator({ username: 'openapi', password: 'openapi' });
const upstream = await simulator.start(0);
const { app, openApi } = await createGateway(
  {
    UPSTREAM_BASE_URL: upstream,
    UPSTREAM_USERNAME: 'openapi',
    UPSTREAM_PASSWORD: 'openapi',
    API_KEYS: JSON.stringify([{ clientId: 'openapi', keySha256: '0'.repeat(64), scopes: ['kyc:shahkar'] }]),
    LOG_LEVEL: 'silent',
  },
  { logger: false },
);
try {
  writeFileSync(OPENAPI_FILE, JSON.stringify(openApi, null, 2) + '\n');
  process.stdout.write(`wrote ${OPENAPI_FILE.pathname}\n`);
} finally {
  await app.close();
  await simulator.stop();
}
