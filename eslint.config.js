import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import globals from 'globals';

export default tseslint.config(
  // `**/`: built output anywhere, the client's own dist/ and node_modules/ too (clients/typescript/README.md).
  { ignores: ['**/dist/', '**/.build/', '**/node_modules/', 'coverage/', 'clients/typescript/src/schema.ts'] },
  js.configs.recommended,
  // Type-aware rules: the TypeScript project service gives each file the tsconfig.json that covers it.
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts', '**/*.spec.ts'],
    rules: { 'no-console': 'off', 'no-loss-of-precision': 'off' },
  },
  {
    // Plain JavaScript (configs, the console's page) is outside the TypeScript project.
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The Node preflight (scripts/check-node.cjs): CommonJS in ES5, to run on any old Node.
    files: ['**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'commonjs',
      globals: globals.node,
    },
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      '@typescript-eslint/no-require-imports': 'off',
      'no-var': 'off',
    },
  },
  {
    // The console's page (served as files, run by browsers): browser globals, no Node ones.
    files: ['src/console/assets/**/*.js'],
    languageOptions: { globals: globals.browser },
  },
  prettier,
);
