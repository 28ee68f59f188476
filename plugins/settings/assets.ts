import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { Middleware } from 'koa'
import { ifNoneMatchHits } from '../../core/http/entity-tag.ts'
import { html, type SafeHtml } from './html.ts'

/**
 * The static files of the browser pages (scripts and stylesheets: a feature's own, or a package's from node_modules;
 * never a CDN), served by name from an allow-list under a prefix of the feature's, each URL versioned so that a
 * page always loads the files of the code that rendered it.
 */

export const jsType = 'text/javascript; charset=utf-8'
export const cssType = 'text/css; charset=utf-8'

export interface AssetFile {
  path: string
  type: string
  /** The `?v=` of its URL: the package version, or a hash of the feature's own file. */
  version: string
}

const packageDir = (name: string) => dirname(createRequire(import.meta.url).resolve(`${name}/package.json`))

/** A file of an installed package, versioned by the package's version. */
export function vendorAsset(pkg: string, file: string, type: string): AssetFile {
  const dir = packageDir(pkg)
  return { path: join(dir, file), type, version: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version }
}

/** A feature's own file (beside its code in `dir`), versioned by a hash of its content. */
export function ownAsset(dir: string, file: string, type: string): AssetFile {
  const path = join(dir, file)
  return { path, type, version: createHash('sha256').update(readFileSync(path)).digest('base64url').slice(0, 12) }
}

/** One feature's files under its prefix: the URLs of its tags, and the middleware that serves them. */
export class AssetSet {
  /** Read on first request and kept: the files do not change while the service runs. */
  private readonly loaded = new Map<string, { body: Buffer; etag: string }>()

  constructor(
    readonly prefix: string,
    private readonly files: Record<string, AssetFile>
  ) {}

  url(name: string): string {
    return `${this.prefix}${name}?v=${encodeURIComponent(this.files[name].version)}`
  }

  /** `<script defer>` tags of these scripts and `<link>` tags of these stylesheets, each with the response's CSP nonce. */
  tags(nonce: string, o: { scripts?: readonly string[]; stylesheets?: readonly string[] }): SafeHtml {
    return html`${(o.stylesheets ?? []).map((n) => html`<link rel="stylesheet" href="${this.url(n)}" nonce="${nonce}">\n`)}${(o.scripts ?? []).map((n) => html`<script defer src="${this.url(n)}" nonce="${nonce}"></script>\n`)}`
  }

  private load(name: string) {
    let hit = this.loaded.get(name)
    if (!hit) {
      const body = readFileSync(this.files[name].path)
      hit = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` }
      this.loaded.set(name, hit)
    }
    return hit
  }

  /**
   * `GET <prefix><name>`: the files of the allow-list, to anyone (they hold nothing of a tenant). Under the URL of the
   * current version (the pages' links) they are cached for a year, as immutable; under any other `v`, or none,
   * revalidated by ETag. Passes on every other method, path and name, so they get the app's own 404.
   */
  routes(): Middleware {
    return async (ctx, next) => {
      if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || !ctx.path.startsWith(this.prefix)) return next()
      const name = ctx.path.slice(this.prefix.length)
      if (!Object.hasOwn(this.files, name)) return next()
      const file = this.files[name]
      const { body, etag } = this.load(name)
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
}
