import type { Middleware } from 'koa'
import { problemKinds, type ProblemKind } from '../errors/index.ts'
import { setRouteTemplate } from './route-template.ts'
import { newNonce, nonceCsp, setHtmlSecurityHeaders } from './security-headers.ts'

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)

/** Serves the short human-readable page behind every problem `type` URI. */
export const errorPages = (): Middleware => (ctx, next) => {
  if (!ctx.path.startsWith('/errors')) return next()
  const m = ctx.path.match(/^\/errors(?:\/([a-z-]+))?\/?$/)
  if (!m || !['GET', 'HEAD'].includes(ctx.method)) return next()
  const kinds = Object.entries(problemKinds) as Array<[ProblemKind, (typeof problemKinds)[ProblemKind]]>
  const one = m[1] ? kinds.find(([k]) => k === m[1]) : undefined
  if (m[1] && !one) return next()
  setRouteTemplate(ctx, m[1] ? '/errors/:kind' : '/errors')
  const section = ([kind, k]: (typeof kinds)[number]) =>
    `<section id="${kind}"><h2>${k.status} ${escape(k.title)} <small><code>${kind}</code></small></h2><p>${escape(k.text).replace(/`([^`]+)`/g, '<code>$1</code>')}</p></section>`
  const nonce = newNonce()
  setHtmlSecurityHeaders(ctx, nonceCsp(nonce))
  ctx.type = 'text/html; charset=utf-8'
  ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${one ? escape(one[1].title) : 'Error kinds'} · Records API</title>
<style nonce="${nonce}">body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:3rem auto;padding:0 1rem;color:#222}code{background:#f3f3f3;padding:0 .2em}small{color:#666;font-weight:normal}</style></head>
<body><h1>${one ? 'Records API error' : 'Records API error kinds'}</h1>
<p>Errors are <code>application/problem+json</code> (RFC 7807) with <code>type</code>, <code>title</code>, <code>status</code>, <code>detail</code>, <code>code</code> and <code>traceId</code>.</p>
${(one ? [one] : kinds).map(section).join('\n')}
${one ? '<p><a href="./">All error kinds</a></p>' : ''}</body></html>`
}
