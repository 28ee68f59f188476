// ESLint (flat config) with typescript-eslint's type-aware rules. Formatting is Prettier's job
// (.prettierrc.json): no stylistic rule is enabled here, so the two never disagree.
// `npm run lint`; `npm run check` runs it with the format check, typecheck, knip and the layer rules.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

const nodeGlobals = Object.fromEntries(
  [
    'process',
    'console',
    'URL',
    'Buffer',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'module',
    'require',
    '__dirname'
  ].map((name) => [name, 'readonly'])
)
const browserGlobals = Object.fromEntries(
  [
    'window',
    'document',
    'fetch',
    'sessionStorage',
    'console',
    'navigator',
    'HTMLFormElement',
    'XMLHttpRequest',
    'FormData',
    'URL',
    'setTimeout',
    'React',
    'ReactDOM',
    'GraphiQL'
  ].map((name) => [name, 'readonly'])
)

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'packages/*/dist/',
      'dist.next-*/',
      'dist.old-*/',
      'data/',
      'coverage/',
      '.tap/',
      'bench/results/',
      'test/.logs/',
      'test/.groups/',
      'test/openapi/client/generated/',
      'test/fixtures-modules-*/'
    ]
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node-tap queues a subtest itself: `t.test(...)` is not awaited, by tap's design.
        { allowForKnownSafePromises: [{ from: 'package', name: 'PromiseWithSubtest', package: '@tapjs/core' }] }
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      // The no-unsafe-* family reports every use of a value typed `any` by a library (knex rows,
      // JSON.parse, Feathers params): thousands of reports that typing the rows would fix at
      // once. no-explicit-any stops new `any` in our code; the family is the next step.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      // Feathers service methods and hooks are async by contract, and tap callbacks may be: an
      // `async` without an `await` is harmless; a forgotten `await` is no-floating-promises' catch.
      '@typescript-eslint/require-await': 'off',
      // Matching control characters is deliberate here: NUL and C0 are what PostgreSQL or a
      // header refuses, and the code that looks for them says so (CONVENTIONS 11).
      'no-control-regex': 'off',
      // `String(value)` of a JSON scalar is how SCIM, the settings pages and the CSV writers turn
      // it into text; objects are refused or serialised before they get there.
      '@typescript-eslint/no-base-to-string': 'off',
      // `let browser` before the teardown that closes it, assigned after: the usual test set-up.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }
      ],
      // A function longer than 100 lines (blank lines and comments aside), a screen and a half, is
      // a split waiting to happen (three of them fill the ~300-line file CONVENTIONS allows); a
      // warning, not an error, because an OpenAPI description is one long literal by nature.
      'max-lines-per-function': ['warn', { max: 100, skipBlankLines: true, skipComments: true, IIFEs: true }]
    }
  },
  {
    // Tests pass ill-typed values on purpose (to prove the runtime checks refuse them), and tests
    // and benchmarks read JSON answers and child-process messages whose shape is what they check
    // or measure: `any` there is a reading, not a design. A scenario reads top to bottom as one story.
    files: ['test/**', 'bench/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      // Tests swap a method for a spy and put it back: taking it unbound is the point.
      '@typescript-eslint/unbound-method': 'off',
      'max-lines-per-function': 'off'
    }
  },
  {
    // Plain JavaScript (bin/, scripts/build.js, this file) is outside tsconfig: linted without types.
    files: ['**/*.js', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { parserOptions: { projectService: false }, globals: nodeGlobals }
  },
  {
    // The GraphQL console's script runs as is in the browser (ES2017, no build step).
    files: ['plugins/graphql/graphql.console.browser.js', 'plugins/workspace/browser/*.js'],
    languageOptions: { sourceType: 'script', ecmaVersion: 2017, globals: browserGlobals }
  }
)
