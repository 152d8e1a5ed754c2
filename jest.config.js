import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

// Jest runs the TypeScript sources as native ES modules (NestJS 12, axios and jose ship ESM
// only): ts-jest transpiles each file on its own (isolatedModules, with decorator metadata,
// exactly as tsc emits it) and keeps `import`; Node's VM modules load the result (hence
// --experimental-vm-modules in the `test` scripts). ESM-only packages that CommonJS
// dependencies require() (light-my-request → cookie, @fastify/static → content-disposition)
// load through Jest 30's own require(esm), as under Node. Jest 30 resolves modules with a
// native binary (unrs-resolver's prebuilt per platform, an optional dependency) and loads
// @parcel/watcher's only in watch mode; neither builds anything at `npm ci`.
const root = dirname(fileURLToPath(import.meta.url));

// Three tiers, told apart by file name only; `npm test` runs all, TEST_TIER=<tier> one
// (`npm run test:unit` etc.; any jest argument can follow, e.g. `npm run test:unit -- src/config`):
//   unit         src/**/*.spec.ts beside the code: no Redis, no sockets, no network
//   integration  test/**/*.integration.spec.ts: components against a real redis-server
//                and/or the upstream simulator
//   e2e          test/**/*.e2e.spec.ts: whole gateways over HTTP
const TIERS = {
  unit: (path) => path.startsWith('src/') && path.endsWith('.spec.ts'),
  integration: (path) => path.startsWith('test/') && path.endsWith('.integration.spec.ts'),
  e2e: (path) => path.startsWith('test/') && path.endsWith('.e2e.spec.ts'),
};

// A spec file that fits no tier would silently never run: refuse to start instead.
const misfits = ['src', 'test']
  .flatMap((dir) => readdirSync(join(root, dir), { recursive: true }).map((file) => `${dir}/${file}`))
  .filter((path) => /\.(spec|test)\.[cm]?[jt]s$/.test(path))
  .filter((path) => Object.values(TIERS).filter((fits) => fits(path)).length !== 1);
if (misfits.length > 0) {
  throw new Error(`Spec files that fit no test tier (see jest.config.js): ${misfits.join(', ')}`);
}

const common = {
  rootDir: root,
  testEnvironment: 'node',
  // Every test must assert (expect.hasAssertions); tests needing an absent tool are skipped
  // outside CI and fail in it (test/support/tools.ts).
  setupFilesAfterEnv: ['<rootDir>/test/support/every-test-asserts.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.jest.json', diagnostics: false }],
  },
  moduleNameMapper: {
    // Sources import siblings as './x.js' (Node ESM rule); map back to the .ts file.
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
};

const projects = [
  { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
  { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/**/*.integration.spec.ts'] },
  { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/**/*.e2e.spec.ts'] },
];

const tier = process.env.TEST_TIER;
if (tier !== undefined && !(tier in TIERS)) {
  throw new Error(`TEST_TIER must be one of ${Object.keys(TIERS).join(', ')}`);
}

export default {
  // A guard against a hung test, above START_BOUND_MS (test/support/events.ts): a start slowed by
  // a loaded machine fails with its own message, or passes, but never on this clock.
  testTimeout: 60_000,
  // One worker a core, not Jest's default of cores - 1: most spec files wait on sockets and child
  // processes (redis-server, postgres, gateway processes, buildah), so on 2 cores a second
  // worker took the integration tier from 160 s to 109 s (CONTRIBUTING.md, "A fast suite").
  maxWorkers: availableParallelism(),
  // Slowest files first, also on a machine without Jest's timings cache (CI).
  testSequencer: '<rootDir>/test/support/slowest-first-sequencer.js',
  // The tests leave the work tree as they found it: compared once around the whole run.
  globalSetup: '<rootDir>/test/support/clean-tree-setup.js',
  globalTeardown: '<rootDir>/test/support/clean-tree-teardown.js',
  projects: tier === undefined ? projects : projects.filter((project) => project.displayName === tier),
};
