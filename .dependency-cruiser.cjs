/**
 * The layering the plugin contract rests on (core/plugin.ts), checked by
 * `npm run lint:layers` (test/layers/layers.test.ts runs it in `npm test`):
 * - core imports nothing from plugins/ (it receives the plugin list);
 * - a plugin imports another plugin only through that plugin's `*.shared.ts`, its public face;
 * - a module package (tenant-modules/) imports no code of the service: its API is the module SDK
 *   (@qehs-records/module-sdk, packages/module-sdk), which packages outside this repository import too;
 * - a migration (core/db/migrations/, plugins/<name>/migrations/) imports no code of the service:
 *   it must do tomorrow what it did when it was released.
 * Composition roots (bin/, plugins/index.ts) and tests and benchmarks may import anything.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'core-imports-no-plugin',
      comment: 'core/ receives the plugin list (core/plugin.ts) and names no plugin.',
      severity: 'error',
      from: { path: '^core/' },
      to: { path: '^plugins/' }
    },
    {
      name: 'plugins-meet-through-shared',
      comment: "A plugin uses another plugin only through that plugin's *.shared.ts.",
      severity: 'error',
      from: { path: '^plugins/([^/]+)/' },
      to: { path: '^plugins/[^/]+/', pathNot: ['^plugins/$1/', '^plugins/[^/]+/[^/]+\\.shared\\.ts$'] }
    },
    {
      name: 'migrations-stand-alone',
      comment:
        "A migration runs as released forever: it imports no code of the service that may change (only its list's types).",
      severity: 'error',
      from: { path: '^(core/db|plugins/[^/]+)/migrations/' },
      to: {
        path: '^(core|plugins)/',
        pathNot: ['^$1/migrations/', '^core/plugin\\.ts$', '^core/db/migrate\\.ts$']
      }
    },
    {
      name: 'modules-import-only-the-module-api',
      comment: 'A module package depends on the module SDK (@qehs-records/module-sdk), nothing of the service itself.',
      severity: 'error',
      from: { path: '^tenant-modules/' },
      to: { path: '^(core|plugins)/' }
    }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|test/openapi/client/generated)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'] }
  }
}
