import type { Json } from '../../openapi/builder.ts'

/** A refusal the kit expected otherwise: its message is the check's detail. */
export class Failure extends Error {}

/** A user the kit made for a check, with a personal token. */
export interface KitUser {
  id: string
  token: string
  roles: string[]
}

export interface KitReply {
  status: number
  headers: Headers
  /** The JSON body (read as the API documents it; a wrong shape fails the check), `{}` when the body is not JSON. */
  body: Json
  text: string
  bytes: Buffer
}

/** Throws a Failure with `message` unless `condition` holds. */
export function expect(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Failure(message)
}

/** `403 permission.denied: This credential may not …`: a reply as one line of a check's detail. */
export function describeReply(r: KitReply): string {
  const b = r.body
  const problem =
    b && typeof b === 'object' && typeof b.code === 'string'
      ? `${b.code}: ${b.detail ?? b.title ?? ''}${Array.isArray(b.errors) ? ` [${b.errors.map((e: { field?: string }) => e.field).join(', ')}]` : ''}`
      : r.text.slice(0, 200)
  return `${r.status} ${problem}`.trim()
}

/** The fields a validation problem names (`payload.title`, …). */
export function problemFields(r: KitReply): string[] {
  return Array.isArray(r.body?.errors) ? r.body.errors.map((e: { field?: string }) => String(e.field)) : []
}

/** The kit's HTTP client: every request bounded by a timeout, bodies read whole. */
export class KitClient {
  constructor(
    readonly url: string,
    private readonly timeoutMs: number
  ) {}

  async request(
    method: string,
    path: string,
    options: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {}
  ): Promise<KitReply> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) }
    if (options.token) headers.authorization = `Bearer ${options.token}`
    let body = options.raw
    if (options.body !== undefined) {
      body = JSON.stringify(options.body)
      headers['content-type'] ??= 'application/json'
    }
    const target = /^https?:\/\//.test(path) ? path : this.url + path
    let res: Response
    try {
      res = await fetch(target, { method, headers, body, signal: AbortSignal.timeout(this.timeoutMs) })
    } catch (err) {
      throw new Failure(`${method} ${path}: no answer (${(err as Error).message})`)
    }
    const bytes = Buffer.from(await res.arrayBuffer())
    const text = bytes.toString('utf8')
    let parsed: Json = {}
    if (/json/.test(res.headers.get('content-type') ?? '') && !/ndjson/.test(res.headers.get('content-type') ?? ''))
      try {
        if (text) parsed = JSON.parse(text)
      } catch {
        /* not JSON after all: the text stays */
      }
    return { status: res.status, headers: res.headers, body: parsed, text, bytes }
  }
}
