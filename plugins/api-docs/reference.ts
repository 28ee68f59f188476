import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { Middleware, ParameterizedContext } from 'koa'
import { problems } from '../../core/errors/index.ts'
import { ifNoneMatchHits } from '../../core/http/entity-tag.ts'
import { setHtmlSecurityHeaders } from '../../core/http/security-headers.ts'
import { toPostmanCollection, type OpenApiLike } from './postman.ts'
import { mePath } from '../me/me.shared.ts'

const base = '/api/docs'
const assetsPrefix = `${base}/assets/`
const specUrl = `${base}/spec.json`
const postmanUrl = `${base}/postman.json`
export const postmanFileName = 'records-api.postman_collection.json'
/** The paths referenceRoutes serves (GET and HEAD only), for the route guard: another verb is 405. */
export const referencePaths: Array<string | RegExp> = [base, postmanUrl, /^\/api\/docs\/assets\/[^/]+$/]

/** Swagger UI from the installed package, never a CDN: the page's CSP allows only 'self'. */
const swaggerDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
const swaggerVersion: string = JSON.parse(readFileSync(join(swaggerDir, 'package.json'), 'utf8')).version

/** The only files of the package that are served; anything else under assets/ is not ours to answer. */
const vendorFiles: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png'
}

/**
 * Starts Swagger UI; a file, not an inline script, so the CSP needs no 'unsafe-inline' or
 * nonce for scripts.
 *
 * The spec is fetched from the same origin, so a signed-in session's cookie goes with it.
 * A bearer token given in the Authorize dialog is kept in this page's memory only
 * (persistAuthorization: false). Swagger UI applies it to "Try it out" calls by each
 * operation's `security`, but not to the spec request, and the tenant's modules are only in
 * the document its credential gets. So: the wrapped `authorize` action keeps the token and
 * downloads the spec again (`specActions.download`, from the DownloadUrl plugin), the
 * `requestInterceptor` adds `Authorization` to that spec request (`req.loadSpec`) only, and
 * logging out downloads the generic (or session's) document again.
 *
 * "Try it out" as a signed-in user sends the session cookie, and a write authenticated by
 * it needs the session's `X-CSRF-Token` (403 `auth.csrf` without). The interceptor reads
 * the token where the service's page scripts read it, `csrfToken` of `GET /api/v1/me`, once,
 * and adds it to writes to this origin only; a 403 `auth.csrf` (signed in again elsewhere)
 * makes it read the token afresh on the next write.
 */
const initScript = `(function () {
  'use strict'
  var specUrl = ${JSON.stringify(specUrl)}
  var meUrl = ${JSON.stringify(`/${mePath}`)}
  var bearer = null
  var bearerScheme = null
  var csrf = null

  function sameOrigin(url) {
    return new URL(url, location.href).origin === location.origin
  }

  // The session's CSRF token, or null without a session; a failed read is not kept.
  function csrfToken() {
    if (!csrf) {
      csrf = fetch(meUrl, { credentials: 'same-origin', headers: { Accept: 'application/json' } })
        .then(function (res) { return res.ok ? res.json() : null })
        .then(function (me) { return me && typeof me.csrfToken === 'string' ? me.csrfToken : null })
        .catch(function () { return null })
        .then(function (token) {
          if (!token) csrf = null
          return token
        })
    }
    return csrf
  }

  function field(schema, key) {
    if (!schema) return undefined
    return typeof schema.get === 'function' ? schema.get(key) : schema[key]
  }

  // The authorize payload: { bearerAuth: { name, schema (an Immutable map), value } }.
  function bearerOf(payload) {
    for (var name in payload) {
      var entry = payload[name]
      if (entry && entry.value && field(entry.schema, 'type') === 'http' && String(field(entry.schema, 'scheme')).toLowerCase() === 'bearer') return { scheme: name, token: String(entry.value) }
    }
    return null
  }

  function RefetchOnAuthorize() {
    return {
      statePlugins: {
        auth: {
          wrapActions: {
            authorize: function (authorize, system) {
              return function (payload) {
                var result = authorize(payload)
                var found = bearerOf(payload)
                if (found) {
                  bearer = found.token
                  bearerScheme = found.scheme
                  system.specActions.download(specUrl)
                }
                return result
              }
            },
            logout: function (logout, system) {
              return function (names) {
                var result = logout(names)
                if (bearer && (!names || names.indexOf(bearerScheme) !== -1)) {
                  bearer = null
                  bearerScheme = null
                  system.specActions.download(specUrl)
                }
                return result
              }
            }
          }
        }
      }
    }
  }

  // The standalone top bar is a field to load any URL; this page shows one document.
  function NoTopbar() {
    return { components: { Topbar: function () { return null } } }
  }

  window.ui = SwaggerUIBundle({
    url: specUrl,
    dom_id: '#swagger-ui',
    deepLinking: true,
    persistAuthorization: false,
    tryItOutEnabled: false,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl, RefetchOnAuthorize, NoTopbar],
    layout: 'StandaloneLayout',
    requestInterceptor: function (req) {
      if (!sameOrigin(req.url)) return req
      if (req.loadSpec && bearer) req.headers.Authorization = 'Bearer ' + bearer
      var method = String(req.method || 'GET').toUpperCase()
      if (req.loadSpec || method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return req
      return csrfToken().then(function (token) {
        if (token) req.headers['X-CSRF-Token'] = token
        return req
      })
    },
    responseInterceptor: function (res) {
      if (res && res.status === 403 && res.body && res.body.code === 'auth.csrf') csrf = null
      return res
    }
  })

  // With a bearer token authorized, the download links fetch with it too, so the files are
  // the tenant's; otherwise they are plain links (a session cookie goes with them).
  document.querySelectorAll('a[data-download]').forEach(function (link) {
    link.addEventListener('click', function (event) {
      if (!bearer) return
      event.preventDefault()
      fetch(link.getAttribute('href'), { headers: { Authorization: 'Bearer ' + bearer } })
        .then(function (res) {
          if (!res.ok) throw new Error(res.status + ' ' + res.statusText)
          return res.blob()
        })
        .then(function (blob) {
          var a = document.createElement('a')
          a.href = URL.createObjectURL(blob)
          a.download = link.getAttribute('data-download')
          document.body.appendChild(a)
          a.click()
          a.remove()
          setTimeout(function () { URL.revokeObjectURL(a.href) }, 10000)
        })
        .catch(function (err) { window.alert('The download failed: ' + err.message) })
    })
  })
})()
`

interface Asset {
  body: Buffer
  type: string
  etag: string
}

const asset = (body: Buffer, type: string): Asset => ({
  body,
  type,
  etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
})
const initAsset = asset(Buffer.from(initScript), 'text/javascript; charset=utf-8')
/** Read on first request and kept: 2 MB in all, and the package does not change while running. */
const vendorCache = new Map<string, Asset>()

function assetNamed(name: string): Asset | undefined {
  if (name === 'init.js') return initAsset
  const type = Object.hasOwn(vendorFiles, name) ? vendorFiles[name] : undefined
  if (!type) return undefined
  let hit = vendorCache.get(name)
  if (!hit) vendorCache.set(name, (hit = asset(readFileSync(join(swaggerDir, name)), type)))
  return hit
}

/** Asset URLs carry a version, so a day of caching never serves a stale Swagger UI after an upgrade. */
const vendorUrl = (name: string) => `${assetsPrefix}${name}?v=${swaggerVersion}`
const initUrl = `${assetsPrefix}init.js?v=${initAsset.etag.slice(1, 13)}`

const page = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference · Records Platform</title>
<link rel="stylesheet" href="${vendorUrl('swagger-ui.css')}">
<link rel="icon" type="image/png" sizes="32x32" href="${vendorUrl('favicon-32x32.png')}">
<link rel="icon" type="image/png" sizes="16x16" href="${vendorUrl('favicon-16x16.png')}">
<style>
  body { margin: 0; font-family: system-ui, sans-serif; }
  .docs-header { padding: 12px 20px; border-bottom: 1px solid #ddd; display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: baseline; }
  .docs-header h1 { font-size: 1.25rem; margin: 0; }
  .docs-header nav { display: flex; gap: 16px; }
  .docs-header p { margin: 0; color: #555; font-size: 0.9rem; flex-basis: 100%; }
</style>
</head>
<body>
<header class="docs-header">
  <h1>Records Platform API</h1>
  <nav aria-label="Downloads">
    <a href="${postmanUrl}" data-download="${postmanFileName}">Download the Postman collection</a>
    <a href="${specUrl}" data-download="records-api.openapi.json">Download the OpenAPI document (JSON)</a>
  </nav>
  <p>Signed in, or after Authorize with a bearer token, the reference lists your organisation's modules with their fields, states and transitions.</p>
</header>
<main id="swagger-ui"></main>
<script src="${vendorUrl('swagger-ui-bundle.js')}"></script>
<script src="${vendorUrl('swagger-ui-standalone-preset.js')}"></script>
<script src="${initUrl}"></script>
</body>
</html>
`

/**
 * Swagger UI and its own scripts only. 'unsafe-inline' for styles because Swagger UI (React)
 * sets style attributes; img-src data: for its inline SVG icons.
 */
export const pageCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'"
].join('; ')

export interface ReferenceOptions {
  /** The OpenAPI document for this caller (its tenant's when authenticated). */
  document(ctx: ParameterizedContext): Promise<OpenApiLike>
  /**
   * The base URL Postman sends to; default: the origin the request was addressed to. Set it
   * to the configured public URL behind a proxy that terminates TLS.
   */
  baseUrl?(ctx: ParameterizedContext): string
  /** Where `GET /` sends a browser: the start page of the browser pages, when there is one; else the reference. */
  home?(): string | undefined
}

/**
 * `GET /api/docs` (Swagger UI), `/api/docs/assets/*` and `/api/docs/postman.json`, and `GET /`:
 * a browser is sent to the start page (the records workspace; the reference without it), any other client gets a 404 that names where things
 * are. Passes on every other method and path, unknown assets included, so they get the
 * app's own 404.
 */
export function referenceRoutes(options: ReferenceOptions): Middleware {
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next()
    if (ctx.path === '/') {
      if (ctx.accepts('json', 'html') === 'html') {
        ctx.set('Cache-Control', 'no-cache')
        ctx.redirect(options.home?.() ?? base)
        return
      }
      throw problems.notFound(
        'route.not_found',
        `No route ${ctx.method} /. The API is under /api/v1 (e.g. GET /api/v1/modules), its OpenAPI document at ${base}/spec.json and its reference at ${base}.`
      )
    }
    if (ctx.path === base || ctx.path === `${base}/`) {
      setHtmlSecurityHeaders(ctx, pageCsp)
      // The page is the same for everyone; the versioned asset URLs in it change on upgrade.
      ctx.set('Cache-Control', 'no-cache')
      ctx.type = 'text/html; charset=utf-8'
      ctx.body = page
      return
    }
    if (ctx.path.startsWith(assetsPrefix)) {
      const found = assetNamed(ctx.path.slice(assetsPrefix.length))
      if (!found) return next()
      ctx.set({ 'Cache-Control': 'public, max-age=86400', ETag: found.etag, 'X-Content-Type-Options': 'nosniff' })
      if (ifNoneMatchHits(ctx.get('if-none-match'), found.etag)) {
        ctx.status = 304
        return
      }
      ctx.type = found.type
      ctx.body = found.body
      return
    }
    if (ctx.path === postmanUrl) {
      const document = await options.document(ctx)
      // Not ctx.origin: since Koa 3 that is the request's Origin header, absent on a download.
      const baseUrl = options.baseUrl?.(ctx) ?? `${ctx.protocol}://${ctx.host}`
      const collection = toPostmanCollection(document, {
        baseUrl,
        name: document.info?.title ?? 'Records Platform API'
      })
      ctx.set({
        'Content-Disposition': `attachment; filename="${postmanFileName}"`,
        'Cache-Control': 'private, no-cache',
        // The document, so the collection, is the caller's tenant's.
        Vary: 'Authorization, Cookie',
        'X-Content-Type-Options': 'nosniff'
      })
      ctx.type = 'application/json'
      ctx.body = collection
      return
    }
    return next()
  }
}
