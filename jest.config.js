import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// Jest runs the TypeScript sources as native ES modules (NestJS 12, axios and jose ship ESM
// only): ts-jest transpiles each file on its own (isolatedModules, with decorator metadata,
// exactly as tsc emits it) and keeps `import`; Node's VM modules load the result (hence
// --experimental-vm-modules in the `test` script). Jest 29 and ts-jest are plain
// JavaScript, so `npm ci` needs no platform-specific binary from the registry.
const root = dirname(fileURLToPath(import.meta.url));

// ESM-only packages that CommonJS dependencies require() (light-my-request → cookie,
// @fastify/static → content-disposition). Node >= 20.19 allows require(esm) and so does the
// gateway at run time, but Jest 29's module loader refuses it. Each is compiled once to a
// CommonJS copy that the tests resolve instead; the copy is rebuilt on every run.
const ESM_ONLY_REQUIRED = ['cookie', 'content-disposition'];
const require = createRequire(import.meta.url);
const cjsCopies = join(root, 'node_modules', '.cache', 'esm-only-as-cjs');
mkdirSync(cjsCopies, { recursive: true });
const moduleNameMapper = {};
for (const name of ESM_ONLY_REQUIRED) {
  const source = readFileSync(require.resolve(name), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  const target = join(cjsCopies, `${name}.cjs`);
  writeFileSync(target, outputText);
  moduleNameMapper[`^${name}$`] = target;
}

export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: '<rootDir>/tsconfig.jest.json', diagnostics: false }],
  },
  moduleNameMapper: {
    ...moduleNameMapper,
    // Sources import siblings as './x.js' (Node ESM rule); map back to the .ts file.
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
  testTimeout: 30000,
};
