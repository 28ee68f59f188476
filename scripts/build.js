#!/usr/bin/env node
// `npm run build` (and `prepare`, so `npm ci` builds): TypeScript to JavaScript in dist/, by
// tsc with tsconfig.build.json (core/, plugins/, bin/server.ts; `.ts` import specifiers
// rewritten to `.js`), plus every other file of core/ and plugins/ that the code reads beside
// itself at run time (the GraphQL console's stylesheet and browser script). Type errors are
// `npm run typecheck`'s job; the build only emits (`--noCheck`), so it takes seconds, not a minute.
// It is written to a folder of its own and swapped in at the end, so a service running from
// dist/ never sees half a build; dist/build.json says when the sources were read (bin/runtime.js
// compares it with the sources' times to tell a current build from a stale one).
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')

// The module SDK (packages/module-sdk, a workspace the platform and module packages import by name) first: its
// dist/ holds the JavaScript and the declarations its package.json exports. Rebuilt when older than its source.
const sdk = join(root, 'packages', 'module-sdk')
const sdkBuilt = (() => {
  try {
    return statSync(join(sdk, 'dist', 'index.js')).mtimeMs >= statSync(join(sdk, 'src', 'index.ts')).mtimeMs
  } catch {
    return false
  }
})()
if (!sdkBuilt) {
  execFileSync(process.execPath, [tsc, '-p', join(sdk, 'tsconfig.json')], { cwd: sdk, stdio: 'inherit' })
  process.stdout.write('build: packages/module-sdk/dist/\n')
}

// `--if-stale` (npm test's pretest): nothing to do when dist/ is newer than every source file.
if (process.argv.includes('--if-stale')) {
  const { chooseRuntime } = await import('../bin/runtime.js')
  if (chooseRuntime({}).from === 'build') process.exit(0)
}
const out = join(root, 'dist')
const next = join(root, `dist.next-${process.pid}`)
const startedAt = Date.now()

rmSync(next, { recursive: true, force: true })
try {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', next, '--noCheck'], {
    cwd: root,
    stdio: 'inherit'
  })
  let assets = 0
  const copyAssets = (dir) => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, e.name)
      if (e.isDirectory()) copyAssets(path)
      else if (!e.name.endsWith('.ts')) {
        mkdirSync(join(next, dir), { recursive: true })
        copyFileSync(join(root, path), join(next, path))
        assets++
      }
    }
  }
  for (const dir of ['core', 'plugins']) copyAssets(dir)
  writeFileSync(join(next, 'build.json'), JSON.stringify({ startedAt, node: process.version }) + '\n')
  // Another build may swap its own in between (two test runs at once): then try again.
  const old = join(root, `dist.old-${process.pid}`)
  for (let attempt = 1; ; attempt++) {
    try {
      renameSync(out, old)
    } catch (err) {
      if (err.code !== 'ENOENT') throw err
    }
    try {
      renameSync(next, out)
      break
    } catch (err) {
      if (attempt === 5 || (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST')) throw err
    }
  }
  rmSync(old, { recursive: true, force: true })
  process.stdout.write(
    `build: ${relative(root, out)}/ from core/, plugins/ and bin/server.ts (${assets} asset files copied) in ${((Date.now() - startedAt) / 1000).toFixed(1)} s\n`
  )
} catch (err) {
  rmSync(next, { recursive: true, force: true })
  process.stderr.write(`build failed: ${err.message}\n`)
  process.exit(1)
}
