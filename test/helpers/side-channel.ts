import { createHash } from 'node:crypto'
import feathersPackage from '@feathersjs/feathers'
import type { App } from '../../core/declarations.ts'
import type { StorageDriver } from '../../core/storage/driver.ts'

/**
 * Tools for the tenant side-channel test (test/tenancy/side-channel.test.ts): what one
 * tenant sees, reduced to what must not vary with another tenant's data.
 */

/** A response as the side-channel test compares it. */
export interface Answer {
  status: number
  headers: Record<string, string>
  body: unknown
}

/** Headers a client reads as data; the rest (trace id, rate-limit counters, date, length, CSP nonce) vary per call. */
const keptHeaders = [
  'content-type',
  'etag',
  'location',
  'cache-control',
  'allow',
  'retry-after',
  'www-authenticate',
  'content-disposition',
  'vary'
]
/** Values that legitimately differ per call: the request's trace id, signed URLs' expiry, a token's last use. */
const volatileKeys = new Set(['traceId', 'lastUsedAt'])
const uuidPattern = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi
const isoTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

/** Replaces every occurrence of each key by its label: an id under test reads `<id>`, known ids read their names. */
export type Labels = Map<string, string>

function scrubText(text: string, labels: Labels): string {
  let out = text
  for (const [value, label] of labels) if (value) out = out.split(value).join(label)
  return (
    out
      // Signed storage URLs: their expiry and signature change every time one is issued.
      .replace(/([?&](?:expires|sig)=)[^&"'\s<]+/g, '$1<signed>')
      // Pages: CSP nonces and CSRF tokens are fresh per response or session.
      .replace(/nonce(=|-)"?[A-Za-z0-9+/_=-]{8,}"?/g, 'nonce$1<nonce>')
      .replace(/(name="csrf" value=")[^"]+"/g, '$1<csrf>"')
      .replace(/(data-csrf=")[^"]+"/g, '$1<csrf>"')
      // The workspace's forms: a fresh submit key (the Idempotency-Key of the form's write) each time one is shown.
      .replace(/(name="submitKey" value=")[^"]+"/g, '$1<submit-key>"')
      .replace(/("csrfToken":")[^"]+"/g, '$1<csrf>"')
  )
}

function scrub(value: unknown, labels: Labels, key = '', parent = ''): unknown {
  if (typeof value === 'string') {
    if (
      (key === 'expiresAt' && (parent === 'download' || parent === 'upload')) ||
      (volatileKeys.has(key) && isoTime.test(value))
    )
      return '<volatile>'
    return scrubText(value, labels)
  }
  if (Array.isArray(value)) return value.map((v) => scrub(v, labels, key, parent))
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) {
      if (k === 'traceId') continue
      out[k] = scrub(v, labels, k, key)
    }
    return out
  }
  return value
}

/**
 * A reply reduced to what must not depend on another tenant: status, the headers clients
 * act on, and the body without its trace id and per-call values. `digest` replaces a
 * large body by its hash (after the same scrubbing), e.g. the OpenAPI document.
 */
export function normalise(
  reply: { status: number; headers: Headers; body: unknown; text: string },
  labels: Labels = new Map(),
  digest = false
): Answer {
  const headers: Record<string, string> = {}
  for (const h of keptHeaders) {
    const v = reply.headers.get(h)
    if (v !== null) headers[h] = scrubText(v, labels)
  }
  const body =
    typeof reply.body === 'string' || reply.body === undefined
      ? scrubText(reply.text, labels)
      : scrub(reply.body, labels)
  if (!digest) return { status: reply.status, headers, body }
  return {
    status: reply.status,
    headers,
    body: `sha256:${createHash('sha256').update(JSON.stringify(body)).digest('hex')}`
  }
}

/** The position in a page cursor, when a client can read it (base64url JSON before the signature); undefined when it is opaque. */
export function cursorPosition(cursor: unknown): unknown[] | undefined {
  if (typeof cursor !== 'string') return undefined
  try {
    const parsed = JSON.parse(Buffer.from(cursor.split('.')[0], 'base64url').toString('utf8'))
    return Array.isArray(parsed?.p) ? parsed.p : undefined
  } catch {
    return undefined
  }
}

/**
 * Figures a tenant sees of its own new objects, as steps from the last one it saw of the
 * same kind: record numbers (per number prefix), activity ids and cursor positions. Two
 * runs of the same writes give the same steps unless something outside the tenant
 * advanced the counter in between.
 */
export class Steps {
  private readonly last = new Map<string, number>()
  /** The step from the previous value of this kind (`first` the first time). */
  step(kind: string, value: number): string {
    const prev = this.last.get(kind)
    this.last.set(kind, value)
    return prev === undefined ? 'first' : `+${value - prev}`
  }
}

/**
 * An answer about a tenant's own new objects, comparable between runs: new uuids become
 * `<new:n>` in order of appearance, times `<time>`, secrets `<secret>`, and the figures
 * that count (record numbers, activity ids, record positions in cursors) become steps.
 */
export function relative(answer: Answer, steps: Steps, fresh: Map<string, string>): Answer {
  const newId = (id: string) => fresh.get(id) ?? (fresh.set(id, `<new:${fresh.size + 1}>`), fresh.get(id)!)
  const walk = (value: unknown, key: string, parent: string): unknown => {
    if (typeof value === 'string') {
      if (isoTime.test(value) || key === 'expiresAt') return '<time>'
      if (key === 'token' || key === 'prefix') return '<secret>'
      const number = key === 'number' && /^([A-Z]+)-(\d{4})-(\d+)$/.exec(value)
      if (number) return `${number[1]}-${number[2]}-${steps.step(`number:${number[1]}`, Number(number[3]))}`
      if (key === 'nextCursor') {
        const p = cursorPosition(value)
        return p
          ? { position: p.map((v) => (typeof v === 'number' ? steps.step('record-seq', v) : '<time>')) }
          : '<opaque cursor>'
      }
      return value.replace(uuidPattern, (id) => newId(id.toLowerCase()))
    }
    if (typeof value === 'number' && key === 'id' && parent === 'activity') return steps.step('activity-id', value)
    if (Array.isArray(value)) return value.map((v) => walk(v, key, parent))
    if (value && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k, key)]))
    return value
  }
  return {
    status: answer.status,
    headers: walk(answer.headers, '', '') as Record<string, string>,
    body: walk(answer.body, '', '')
  }
}

/**
 * Holds export files of a tenant before they are stored: its render jobs stop in state
 * `running`, with `progress.rowsTotal` as counted at the start, until released. Wraps
 * the storage driver's putFile, which every export calls once its rows are rendered.
 */
export function exportGate(storage: StorageDriver) {
  const held = new Map<string, { promise: Promise<void>; open(): void; arrived: Promise<void>; arrive(): void }>()
  const putFile = storage.putFile.bind(storage)
  storage.putFile = async (key, path, contentType) => {
    const [tenantId, area] = key.split('/')
    const gate = area === 'exports' ? held.get(tenantId) : undefined
    if (gate) {
      gate.arrive()
      await gate.promise
    }
    return putFile(key, path, contentType)
  }
  return {
    hold(tenantId: string) {
      let open!: () => void
      let arrive!: () => void
      const promise = new Promise<void>((resolve) => (open = resolve))
      const arrived = new Promise<void>((resolve) => (arrive = resolve))
      held.set(tenantId, { promise, open, arrived, arrive })
    },
    /** Resolves once an export of the tenant is held, its progress final until release. */
    arrived(tenantId: string): Promise<void> {
      return held.get(tenantId)?.arrived ?? Promise.resolve()
    },
    release(tenantId: string) {
      held.get(tenantId)?.open()
      held.delete(tenantId)
    },
    releaseAll() {
      for (const id of [...held.keys()]) this.release(id)
    }
  }
}

/**
 * Every door a tenant's credential can knock on: each Feathers service method
 * (`<path>#<method>`), each operation of the OpenAPI document not served by a service
 * (`<METHOD> <path template>`), and each settings page route (`page <METHOD> <regex>`).
 */
export function doors(app: App): string[] {
  const out: string[] = []
  const servicePatterns: RegExp[] = []
  for (const [path, service] of Object.entries({ ...app.services })) {
    for (const method of feathersPackage.getServiceOptions(service)?.methods ?? []) out.push(`${path}#${method}`)
    servicePatterns.push(new RegExp(`^/${path.replace(/:[^/]+/g, '[^/]+')}(?:/|:|$)`))
  }
  const document = app.get('openapi')!.forPrincipal().document as { paths: Record<string, Record<string, unknown>> }
  for (const [path, item] of Object.entries(document.paths)) {
    if (servicePatterns.some((p) => p.test(path.replace(/\{[^}]+\}/g, 'x')))) continue
    for (const method of Object.keys(item))
      if (['get', 'put', 'post', 'patch', 'delete'].includes(method)) out.push(`${method.toUpperCase()} ${path}`)
  }
  // Every page route any plugin mounted (plugins/settings/page-router.ts records them), not a fixed list: a new page is a door too.
  const pages = app.get('settingsPages')?.routes ?? []
  if (!pages.length) throw new Error("no page routes registered: doors() reads them from app.get('settingsPages')")
  for (const route of pages) out.push(`page ${route.method} ${route.path.source}`)
  return out
}

/** Whether a probe's `covers` entry names the door: services and documented routes by name, pages by a sample (`page POST /sign-in`). */
export function covers(door: string, entry: string): boolean {
  if (!door.startsWith('page ')) return door === entry
  const [, method, source] = door.split(' ')
  const [kind, m, path] = entry.split(' ')
  return kind === 'page' && m === method && new RegExp(source).test(path ?? '')
}
