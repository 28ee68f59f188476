import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Middleware } from 'koa'
import { ifNoneMatchHits } from '../../core/http/entity-tag.ts'
import { html, type SafeHtml } from '../settings/settings.shared.ts'

/** Where the console's scripts and stylesheets are served: GraphiQL and React from the installed packages (no CDN), and the console's own two files. */
export const consoleAssetsPrefix = '/settings/graphql/assets/'

const js = 'text/javascript; charset=utf-8'
const css = 'text/css; charset=utf-8'
const here = dirname(fileURLToPath(import.meta.url))
const packageDir = (name: string) => dirname(createRequire(import.meta.url).resolve(`${name}/package.json`))
const versionOf = (dir: string): string => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version

interface AssetFile {
  path: string
  type: string
  /** The `?v=` of its URL: the package version, or a hash of the console's own file. */
  version: string
}

const vendor = (pkg: string, file: string, type: string): AssetFile => {
  const dir = packageDir(pkg)
  return { path: join(dir, file), type, version: versionOf(dir) }
}
const own = (file: string, type: string): AssetFile => {
  const path = join(here, file)
  return { path, type, version: createHash('sha256').update(readFileSync(path)).digest('base64url').slice(0, 12) }
}

/**
 * The only files served under the prefix, by name, in the order the page loads them:
 * the production UMD builds of React and ReactDOM (GraphiQL 3's bundle expects them as
 * globals), GraphiQL's bundle, then the console's script. Stylesheets: the console's
 * before GraphiQL's (see graphql.console.css).
 */
const files: Record<string, AssetFile> = {
  'react.production.min.js': vendor('react', 'umd/react.production.min.js', js),
  'react-dom.production.min.js': vendor('react-dom', 'umd/react-dom.production.min.js', js),
  'graphiql.min.js': vendor('graphiql', 'graphiql.min.js', js),
  'console.js': own('graphql.console.browser.js', js),
  'console.css': own('graphql.console.css', css),
  'graphiql.min.css': vendor('graphiql', 'graphiql.min.css', css)
}
const scripts = ['react.production.min.js', 'react-dom.production.min.js', 'graphiql.min.js', 'console.js']
const stylesheets = ['console.css', 'graphiql.min.css']

const urlOf = (name: string) => `${consoleAssetsPrefix}${name}?v=${encodeURIComponent(files[name].version)}`

/** The <link> and <script> tags of the console page; each carries the response's CSP nonce, the only way the page's policy lets them load. */
export function consoleAssetTags(nonce: string): SafeHtml {
  return html`${stylesheets.map((n) => html`<link rel="stylesheet" href="${urlOf(n)}" nonce="${nonce}">\n`)}${scripts.map((n) => html`<script defer src="${urlOf(n)}" nonce="${nonce}"></script>\n`)}`
}

/** Read on first request and kept (1.5 MB in all): the packages do not change while the service runs. */
const loaded = new Map<string, { body: Buffer; etag: string }>()

function load(name: string) {
  let hit = loaded.get(name)
  if (!hit) {
    const body = readFileSync(files[name].path)
    hit = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` }
    loaded.set(name, hit)
  }
  return hit
}

/**
 * `GET /settings/graphql/assets/<name>`: the files of the allow-list above, to anyone (they
 * hold nothing of a tenant). Under the URL of the current version (the page's links) they
 * are cached for a year, as immutable; under any other `v`, or none, revalidated by ETag.
 * Passes on every other method, path and name, so they get the app's own 404.
 */
export function consoleAssets(): Middleware {
  return async (ctx, next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || !ctx.path.startsWith(consoleAssetsPrefix)) return next()
    const name = ctx.path.slice(consoleAssetsPrefix.length)
    if (!Object.hasOwn(files, name)) return next()
    const file = files[name]
    const { body, etag } = load(name)
    const current = ctx.query.v === file.version
    ctx.set({
      'Cache-Control': current ? 'public, max-age=31536000, immutable' : 'no-cache',
      ETag: etag,
      'X-Content-Type-Options': 'nosniff'
    })
    if (ifNoneMatchHits(ctx.get('if-none-match'), etag)) {
      ctx.status = 304
      return
    }
    ctx.type = file.type
    ctx.body = body
  }
}
