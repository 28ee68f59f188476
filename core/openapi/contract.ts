import { Readable, Transform } from 'node:stream'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { Middleware } from 'koa'
import { pointerSegment, resolveLocal, type Json } from './builder.ts'
import type { OpenApiDocuments } from './document.ts'
import { problemResponseNames } from './problems.ts'

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void

export interface Violation {
  method: string
  path: string
  status: number
  message: string
}

interface Route {
  template: string
  pattern: RegExp
  /** The same, in any case and with a trailing slash. */
  loose: RegExp
}

interface Compiled {
  ajv: Ajv2020
  routes: Route[]
}

/** `/api/v1/records/{id}:transition` → a regex; a parameter never spans `/` or `:`. */
function routeOf(template: string): Route {
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '([^/:]+)' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
    .join('')
  return { template, pattern: new RegExp(`^${source}$`), loose: new RegExp(`^${source}/?$`, 'i') }
}

/**
 * Checks responses against an OpenAPI 3.1 document: the path and method are an operation,
 * the status is one of its responses, the content type is documented, and the body (each
 * line of an NDJSON stream) validates against the schema. Used by the test suite on every
 * response it receives, so the document cannot drift from the code.
 */
export class ContractChecker {
  private readonly compiled = new WeakMap<Json, Compiled>()

  private compile(doc: Json): Compiled {
    let c = this.compiled.get(doc)
    if (!c) {
      const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true })
      addFormats(ajv)
      ajv.addSchema(doc, 'doc')
      // Literal paths before templated ones, so `/api/docs/spec.json` never counts as a `{param}`.
      const routes = Object.keys(doc.paths ?? {})
        .sort((a, b) => (a.includes('{') ? 1 : 0) - (b.includes('{') ? 1 : 0))
        .map(routeOf)
      c = { ajv, routes }
      this.compiled.set(doc, c)
    }
    return c
  }

  /** The response object (its `$ref` followed) and its JSON pointer in the document, or a reason. */
  private response(
    doc: Json,
    method: string,
    path: string,
    status: number
  ): { at: string; response: Json } | { error: string } {
    const { routes } = this.compile(doc)
    // A path a feature also serves spelled otherwise (a trailing slash, SCIM's endpoint names in another case) is judged as the one it names.
    const route =
      routes.find((r) => r.pattern.test(path)) ??
      (status !== 404 && status !== 405 ? routes.find((r) => r.loose.test(path)) : undefined)
    // A 404 or 405 off the operations: any problem body will do, as the nearest path's operations refuse (SCIM's: a SCIM error too).
    const notFound = (template: string | undefined) => {
      const own: string | undefined = template
        ? Object.values<Json>(doc.paths[template]).find((o) => o?.responses?.[404]?.$ref)?.responses[404].$ref
        : undefined
      const at = own ?? '#/components/responses/NotFound'
      return { at, response: doc.components.responses[at.split('/').pop()!] }
    }
    if (!route) {
      if (status === 404 || status === 405) {
        // The path whose fixed start (up to its first parameter) is the longest start of this one.
        const near = routes
          .filter((r) => path.startsWith(r.template.split('{')[0]))
          .sort((a, b) => b.template.split('{')[0].length - a.template.split('{')[0].length)[0]
        return notFound(near?.template)
      }
      // A path spelled in no way the document names (`/api//v1/…`) refused before routing (the CSRF check): the shared problem of its status.
      const shared = status >= 400 ? problemResponseNames[status] : undefined
      if (shared && doc.components.responses[shared])
        return { at: `#/components/responses/${shared}`, response: doc.components.responses[shared] }
      return { error: `no path of the document matches ${path}` }
    }
    const verb = method === 'HEAD' ? 'get' : method.toLowerCase()
    const op = doc.paths[route.template][verb]
    if (!op) {
      if (status === 405 || status === 404) return notFound(route.template)
      return { error: `${route.template} has no ${verb} operation` }
    }
    const key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => op.responses[k])
    if (!key)
      return {
        error: `${verb.toUpperCase()} ${route.template} does not document status ${status} (documents ${Object.keys(op.responses).join(', ')})`
      }
    let at = `#/paths/${pointerSegment(route.template)}/${verb}/responses/${key}`
    let response = op.responses[key]
    if (response.$ref) {
      at = response.$ref
      response = resolveLocal(doc, at)
    }
    return { at, response }
  }

  /**
   * The violations of one response; for a stream of `application/x-ndjson`, a replacement
   * stream that checks each line as it passes and reports through `onLate`.
   */
  check(
    doc: Json,
    r: {
      method: string
      path: string
      status: number
      contentType: string
      headers: Record<string, unknown>
      body: unknown
    },
    onLate: (v: Violation) => void
  ): { violations: Violation[]; body?: unknown } {
    const v = (message: string): Violation => ({ method: r.method, path: r.path, status: r.status, message })
    const found = this.response(doc, r.method, r.path, r.status)
    if ('error' in found) return { violations: [v(found.error)] }
    const missing = Object.entries<Json>(found.response.headers ?? {})
      .filter(
        ([name, h]: [string, Json]) =>
          (h.$ref ? resolveLocal(doc, h.$ref) : h)?.required && r.headers[name.toLowerCase()] === undefined
      )
      .map(([name]) => name)
    if (missing.length) return { violations: [v(`required header(s) ${missing.join(', ')} missing (${found.at})`)] }
    const content: Json | undefined = found.response.content
    const empty = r.body === undefined || r.body === null || r.body === '' || r.method === 'HEAD'
    if (!content)
      return {
        violations:
          empty || r.status === 304 ? [] : [v(`${found.at} documents no body, but one was sent (${r.contentType})`)]
      }
    if (r.method === 'HEAD') return { violations: [] }
    const type = r.contentType.split(';')[0].trim().toLowerCase()
    const keys = Object.keys(content)
    // An exact media type first, then a range (`image/*`, `*/*`).
    const mediaKey =
      keys.find((k) => k.toLowerCase() === type) ??
      keys.find((k) => k === '*/*' || (k.endsWith('/*') && type.startsWith(k.slice(0, -1).toLowerCase())))
    if (!mediaKey)
      return {
        violations: [
          v(
            `content type ${type || '(none)'} is not documented at ${found.at} (documents ${Object.keys(content).join(', ')})`
          )
        ]
      }
    if (!content[mediaKey].schema) return { violations: [] }
    const validate = this.compile(doc).ajv.getSchema(`doc${found.at}/content/${pointerSegment(mediaKey)}/schema`)
    if (!validate) return { violations: [v(`cannot compile the schema at ${found.at}`)] }
    const failures = (value: unknown, where: string) =>
      validate(value) ? [] : [v(`${where} breaks ${found.at}: ${JSON.stringify(validate.errors?.slice(0, 3))}`)]

    if (r.body instanceof Readable) {
      if (type !== 'application/x-ndjson') return { violations: [] }
      // Each NDJSON line is one value of the documented schema; check them as they stream.
      let rest = ''
      let line = 0
      const checkLine = (text: string) => {
        line++
        if (!text.trim()) return
        try {
          for (const f of failures(JSON.parse(text), `NDJSON line ${line}`)) onLate(f)
        } catch {
          onLate(v(`NDJSON line ${line} is not JSON`))
        }
      }
      const tee = new Transform({
        transform(chunk, _enc, done) {
          const lines = (rest + chunk.toString('utf8')).split('\n')
          rest = lines.pop()!
          lines.forEach(checkLine)
          done(null, chunk)
        },
        flush(done) {
          if (rest) checkLine(rest)
          done()
        }
      })
      r.body.on('error', (err) => tee.destroy(err))
      return { violations: [], body: r.body.pipe(tee) }
    }
    if (Buffer.isBuffer(r.body)) return { violations: [] }
    let value = r.body
    if (typeof value === 'string') {
      if (!/json/.test(type)) return { violations: [] }
      try {
        value = JSON.parse(value)
      } catch {
        return { violations: [v('the body is not JSON')] }
      }
    } else value = JSON.parse(JSON.stringify(value))
    return { violations: failures(value, 'the body') }
  }
}

/**
 * Koa middleware (outermost) that checks every response of the API (`/api/`, and the local
 * storage driver's signed URLs under `/storage/`) against the caller's document
 * and hands each violation to `report`.
 */
export function contractMiddleware(
  documents: () => OpenApiDocuments | undefined,
  report: (v: Violation) => void
): Middleware {
  const checker = new ContractChecker()
  return async (ctx, next) => {
    await next()
    // The path as the client sent it: `colonMethods` rewrites `{id}:transition` on the way in.
    const path = ctx.originalUrl.split('?')[0]
    const docs = documents()
    if (!docs || !(path.startsWith('/api/') || path.startsWith('/storage/'))) return
    // OPTIONS answered (core/http/cors.ts) is HTTP's and CORS's, not an operation of the API.
    if (ctx.method === 'OPTIONS' && ctx.status === 204) return
    const principal = ctx.state.authError ? undefined : ctx.state.principal
    const response = {
      method: ctx.method,
      path,
      status: ctx.status,
      contentType: ctx.response.get('content-type') || '',
      headers: ctx.response.headers,
      body: ctx.body
    }
    let { violations, body } = checker.check(docs.forPrincipal(principal).document, response, report)
    // A tenant document leaves out the modules the caller has no role in (and their per-module
    // paths); the refusal it gets there is described by the generic document.
    if (principal && violations.some((v) => v.message.startsWith('no path of the document')))
      ({ violations, body } = checker.check(docs.forPrincipal(undefined).document, response, report))
    violations.forEach(report)
    if (body) ctx.body = body
  }
}
