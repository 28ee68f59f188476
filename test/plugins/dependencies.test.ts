import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from '../helpers/tap.ts'
import { createApp, createPlatform } from '../../core/app.ts'
import { runCli } from '../../core/cli/index.ts'
import { loadConfig } from '../../core/config.ts'
import type { Platform } from '../../core/declarations.ts'
import { checkDependencies, type Plugin } from '../../core/plugin.ts'
import { plugins } from '../../plugins/index.ts'

/**
 * Plugins declare the plugins they need (Plugin.dependsOn) instead of relying on list order,
 * and start-up refuses a list that does not hold them in order (core/plugin.ts checkDependencies).
 */

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** The plugin folders whose files `folder`'s files import (`../<other>/…`, at any depth). */
function importedPlugins(folder: string): Set<string> {
  const found = new Set<string>()
  const dir = join(root, 'plugins', folder)
  for (const entry of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (!/\.(ts|js)$/.test(entry)) continue
    const file = join(dir, entry)
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/(?:from|import\()\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const [top, other] = relative(join(root, 'plugins'), resolve(dirname(file), m[1])).split('/')
      if (top !== '..' && other !== undefined && top !== folder) found.add(top)
    }
  }
  return found
}

/** The list with `name` moved to the front. */
const movedFirst = (name: string) => [plugins.find((p) => p.name === name)!, ...plugins.filter((p) => p.name !== name)]

t.test('the plugin list holds every declared dependency before its dependant', async (t) => {
  t.doesNotThrow(() => checkDependencies(plugins))
  t.ok(plugins.filter((p) => p.dependsOn?.length).length >= 10, 'most plugins declare some')
})

t.test('every plugin declares the plugins whose files it imports (through their *.shared.ts)', async (t) => {
  const folders = readdirSync(join(root, 'plugins'), { withFileTypes: true }).filter((d) => d.isDirectory())
  t.same(folders.map((d) => d.name).sort(), plugins.map((p) => p.name).sort(), 'a plugin is its folder')
  for (const plugin of plugins) {
    const undeclared = [...importedPlugins(plugin.name)].filter((name) => !plugin.dependsOn?.includes(name))
    t.same(undeclared, [], `${plugin.name} imports only what it declares`)
  }
})

t.test('the GraphQL endpoint starts without a plugin that adds GraphQL types of its own (modules)', async (t) => {
  const without = plugins.filter((p) => p.name !== 'modules')
  t.doesNotThrow(() => checkDependencies(without), 'graphql depends on none of them')
  const graphql = plugins.find((p) => p.name === 'graphql')!
  t.same(graphql.dependsOn, ['settings'], 'only what its files import')
})

t.test('start-up refuses a plugin listed before one it depends on, naming both', async (t) => {
  const config = loadConfig({ port: 0, logLevel: 'error' })
  const late = movedFirst('record-report')
  const message = /Plugin "record-report" depends on plugin "records", which comes after it in the plugin list/
  await t.rejects(createPlatform(config, late), message, 'before the database is touched')
  t.throws(() => createApp({} as Platform, late), message)
  // The CLI's migrate command: exit 1 with the reason on stderr.
  let err = ''
  const code = await runCli(['migrate'], late, {
    out: () => undefined,
    err: (s) => void (err += s),
    input: async () => ''
  })
  t.equal(code, 1)
  t.match(err, message)
})

t.test('start-up refuses a plugin whose dependency is not in the list, naming both', async (t) => {
  const without = plugins.filter((p) => p.name !== 'idempotency')
  t.throws(
    () => checkDependencies(without),
    /Plugin "records" depends on plugin "idempotency", which is not in the plugin list/
  )
})

t.test("start-up refuses a plugin listed twice, or one named core (whose migrations are core's)", async (t) => {
  const named = (name: string): Plugin => ({ name, configure: () => undefined })
  t.throws(() => checkDependencies([named('a'), named('a')]), /Plugin "a" is listed twice/)
  t.throws(() => checkDependencies([named('core')]), /Plugin "core" is listed twice, or takes core's name/)
})
