// Jest runs the TypeScript sources as native ES modules (NestJS 12 and axios ship ESM only):
// @swc/jest strips types and keeps `import`, Node's VM modules load them
// (hence --experimental-vm-modules in the `test` script).
const swc = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
    keepClassNames: true,
  },
  sourceMaps: 'inline',
};

const esmOnlyRequired = ['cookie', 'content-disposition'];

export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', swc],
    // ESM-only packages that CommonJS dependencies require(): Node >= 20.19 allows
    // require(esm), but Jest's own module loader does not before Node 24.9, so they are
    // compiled to CommonJS when required (and left as ESM when imported).
    [`node_modules/(${esmOnlyRequired.join('|')})/.+\\.js$`]: ['@swc/jest', { jsc: { target: 'es2022' } }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnlyRequired.join('|')})/)`],
  // Sources import siblings as './x.js' (Node ESM rule); map back to the .ts file.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
  testTimeout: 30000,
};
