// Which code the service and the CLI run: the compiled build in dist/ (`npm run build`, which
// `npm ci` runs through `prepare`) when it is current, else the TypeScript sources through tsx.
// Plain JavaScript, so that it runs before either is chosen. RECORDS_RUNTIME=build or
// =sources forces one (the benchmarks measure both; `build` refuses a missing build).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

export const projectRoot = fileURLToPath(new URL('..', import.meta.url))
const buildDir = join(projectRoot, 'dist')

/** Node 24 or later; the project pins it (package `node`, node_modules/.bin/node), which npm scripts and npx run first. */
export function requireSupportedNode(what) {
  const major = Number(process.versions.node.split('.')[0])
  if (major >= 24) return
  process.stderr.write(
    `${what} needs Node 24 or later; this is ${process.version} (${process.execPath}). ` +
      `Run it through npm (\`npm start\`, \`npx records\`), which uses the project's own Node (node_modules/.bin/node, installed by \`npm ci\`).\n`
  )
  process.exit(1)
}

/** The newest file the build is made from: a stale build is older than one of them. */
function newestSource() {
  let newest = { path: '', mtimeMs: 0 }
  // A deployment may ship dist/ without the sources: what is not there is not newer.
  const see = (path) => {
    const mtimeMs = statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0
    if (mtimeMs > newest.mtimeMs) newest = { path, mtimeMs }
  }
  const walk = (dir) => {
    if (!existsSync(dir)) return
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name)
      if (e.isDirectory()) walk(path)
      else see(path)
    }
  }
  walk(join(projectRoot, 'core'))
  walk(join(projectRoot, 'plugins'))
  for (const file of ['bin/server.ts', 'tsconfig.json', 'tsconfig.build.json']) see(join(projectRoot, file))
  return newest
}

/** `{ from: 'build' | 'sources', why, stale? }`: the build when dist/build.json is newer than every source file (a few hundred stat calls, about a millisecond). */
export function chooseRuntime(env = process.env) {
  const stamp = join(buildDir, 'build.json')
  const forced = env.RECORDS_RUNTIME
  if (forced === 'sources') return { from: 'sources', why: 'RECORDS_RUNTIME=sources' }
  if (!existsSync(stamp)) {
    if (forced === 'build') throw new Error('RECORDS_RUNTIME=build, but there is no build: run `npm run build`')
    return { from: 'sources', why: 'no build in dist/ (`npm run build` makes one)' }
  }
  if (forced === 'build') return { from: 'build', why: 'RECORDS_RUNTIME=build' }
  const { startedAt } = JSON.parse(readFileSync(stamp, 'utf8'))
  const newest = newestSource()
  if (newest.mtimeMs > startedAt)
    return {
      from: 'sources',
      stale: true,
      why: `${relative(projectRoot, newest.path)} changed after the build (\`npm run build\` brings dist/ up to date)`
    }
  return { from: 'build', why: 'dist/ is newer than the sources' }
}

let tsxRegistered

/**
 * Imports `entry` (a path from the project root without extension, e.g. `bin/server`) from the
 * chosen runtime: `dist/<entry>.js`, or `<entry>.ts` once tsx is registered for this process.
 */
export async function importEntry(entry, runtime) {
  if (runtime.from === 'build') return import(pathToFileURL(join(buildDir, `${entry}.js`)).href)
  tsxRegistered ??= import('tsx/esm/api').then(({ register }) => void register())
  await tsxRegistered
  return import(pathToFileURL(join(projectRoot, `${entry}.ts`)).href)
}

/**
 * Stops this process as on SIGTERM once its parent is gone (it was reparented): `npm start`
 * follows npm this way when npm dies without forwarding a signal (SIGKILL). Polled once a
 * second, unref'd; the SIGTERM runs the service's own shutdown.
 */
export function followParent() {
  const parent = process.ppid
  const watch = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(watch)
    process.kill(process.pid, 'SIGTERM')
  }, 1000)
  watch.unref()
}
