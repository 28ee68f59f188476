import { ContractChecker, type Violation } from '../../core/openapi/contract.ts'
import type { TestServer } from '../helpers/server.ts'
import type { Workflow } from './bases.ts'
import type { Case } from './cases.ts'
import { escalation, guardMisses, PayloadCheck, problemIssues, prototypeKeys, type Me } from './oracles.ts'
import { render, type Rendered } from './render.ts'
import type { Pools } from './seed.ts'
import { changedByIdempotentRefusals, differences, type Snapshots } from './snapshot.ts'
import { send, type WireReply, type WireRequest } from './wire.ts'

/**
 * One fuzz request end to end: render it, snapshot, send, snapshot, judge. A misbehaviour
 * throws an Error whose message is a ready repro (request as sent, answer, what was wrong).
 */
export interface ExchangeOptions {
  server: TestServer
  pools: Pools
  snapshots: Snapshots
  workflows: Record<string, Workflow>
  /** Caller name → token, and what `/api/v1/me` says about each. */
  tokens: Record<string, string>
  me: Record<string, Me>
  payloads: PayloadCheck
  /** The tenant document the answers are judged by. */
  doc: Record<string, any>
  /** Wall-clock bound on one answer. */
  boundMs: number
}

export class Exchange {
  /** Distinct answers outside the OpenAPI document → the repro of the first request that got one. */
  readonly contract = new Map<string, string>()
  /** Requests sent, per operation id (`framing` for the damaged ones). */
  readonly sent = new Map<string, number>()
  total() {
    return [...this.sent.values()].reduce((a, b) => a + b, 0)
  }

  /** The slowest answer so far (to see how close the bound is). */
  slowest = { ms: 0, label: 'none' }

  /** Requests the oracles sent (GET /api/v1/me with a minted token). */
  oracleRequests = 0
  private readonly port: number
  private readonly checker = new ContractChecker()
  private readonly proto = prototypeKeys()
  private keyCounter = 0
  private readonly runTag = Date.now().toString(36)

  constructor(private readonly o: ExchangeOptions) {
    this.port = Number(new URL(o.server.url).port)
  }

  /** Sends a case; `tweak` may then damage the wire request below what a mutation can (framing). */
  async run(c: Case, tweak?: (w: WireRequest) => string): Promise<void> {
    let r: Rendered
    try {
      r = await render(c, {
        pools: this.o.pools,
        tokens: this.o.tokens,
        freshKey: () => `fz-${this.runTag}-${++this.keyCounter}`
      })
    } catch (err) {
      throw new Error(`harness error (not the service's): rendering ${c.base.op.id} failed: ${(err as Error).stack}`, {
        cause: err
      })
    }
    if (tweak) r.applied.push(tweak(r.wire))
    const before = await this.o.snapshots.take()
    const violations = this.o.server.violations.length
    let reply: WireReply | undefined
    const failures: string[] = []
    try {
      reply = await send(this.port, r.wire, this.o.boundMs)
    } catch (err) {
      failures.push(`no answer: ${(err as Error).message}`)
    }
    const counted = tweak ? 'framing' : c.base.op.id
    this.sent.set(counted, (this.sent.get(counted) ?? 0) + 1)
    if (process.env.FUZZ_TRACE)
      console.error(
        `${reply?.status ?? '---'} ${Math.round(reply?.ms ?? 0)}ms ${c.base.op.id} [${c.base.label}/${c.caller}${c.key === 'none' ? '' : `/key ${c.key}`}] ${r.applied.join(' | ') || '(valid base)'}`
      )
    const after = await this.o.snapshots.take()
    if (reply && reply.ms > this.slowest.ms)
      this.slowest = {
        ms: reply.ms,
        label: `${Math.round(reply.ms)} ms (${c.base.op.id}: ${r.applied.join('; ').slice(0, 200) || 'valid base'})`
      }
    if (reply) {
      if (reply.status >= 500) failures.push(`answered ${reply.status}`)
      if (reply.ms > this.o.boundMs)
        failures.push(`answered after ${Math.round(reply.ms)} ms (bound ${this.o.boundMs} ms)`)
      if (reply.status >= 400 && reply.status < 500) {
        failures.push(...problemIssues(reply))
        const changed = differences(before, after, r.idempotencyKey ? changedByIdempotentRefusals : [])
        if (changed.length) failures.push(`refused, yet the database changed: ${changed.join('; ')}`)
      }
      if (reply.status >= 200 && reply.status < 300) failures.push(...(await this.afterSuccess(c, r, reply, before.at)))
    }
    // Answers outside the document are kept apart (see `contract`), so one undocumented status
    // does not stop an operation's property before it finds a 5xx.
    for (const v of this.o.server.violations
      .slice(violations)
      .filter((x) => !reply || !this.trailingSlashAlias(x, reply))) {
      const key = `${v.method} ${v.path.replace(/\/[^/]*$/, '/…')} → ${v.status}: ${v.message.replace(/[0-9a-f-]{36}/g, '<id>')}`
      if (!this.contract.has(key))
        this.contract.set(key, repro(c, r, reply, [`breaks the OpenAPI document: ${v.message}`], this.o.tokens))
    }
    if (prototypeKeys() !== this.proto) {
      failures.push(`Object.prototype gained ${prototypeKeys()}`)
      for (const k of Object.getOwnPropertyNames(Object.prototype))
        if (!this.proto.split(',').includes(k)) delete (Object.prototype as any)[k]
    }
    if (failures.length)
      throw Object.assign(new Error(repro(c, r, reply, failures, this.o.tokens)), {
        slow: !reply || reply.ms > this.o.boundMs
      })
  }

  /**
   * An empty path parameter leaves a trailing slash, and `/api/v1/modules/` is `/api/v1/modules`
   * to the router: such an answer is judged as one to the path without the slash.
   */
  private trailingSlashAlias(v: Violation, reply: WireReply): boolean {
    const m = /^no path of the document matches (.+)\/$/.exec(v.message)
    if (!m) return false
    const r = {
      method: v.method,
      path: m[1],
      status: v.status,
      contentType: reply.headers['content-type'] ?? '',
      headers: reply.headers,
      body: reply.text
    }
    return this.checker.check(this.o.doc, r, () => undefined).violations.length === 0
  }

  /** Checks what a success stored, then puts back what it used up. */
  private async afterSuccess(c: Case, r: Rendered, reply: WireReply, since: string): Promise<string[]> {
    const out: string[] = []
    const rows = await this.o.snapshots.recordsSince(since)
    for (const row of rows) {
      const issue = this.o.payloads.issue(row.module_key, row.payload)
      if (issue)
        out.push(
          `stored record ${row.id} (${row.module_key}) holds a payload create would refuse: ${issue}; stored: ${JSON.stringify(row.payload).slice(0, 400)}`
        )
    }
    const body = parse(reply.text)
    if (c.base.op.id === 'transitionRecord' && body?.id) {
      const row = rows.find((x) => x.id === body.id)
      const transition = (r.json as any)?.transition
      const misses = guardMisses(
        this.o.workflows[body.moduleKey],
        body.transition?.key ?? transition,
        row?.payload ?? body.payload
      )
      if (misses.length)
        out.push(
          `transition "${transition}" succeeded although its guard's field(s) ${misses.join(', ')} are not in the stored payload`
        )
    }
    if (c.base.op.id === 'createToken' && typeof body?.token === 'string' && this.o.me[c.caller]) {
      this.oracleRequests++
      const me = await this.o.server.request('GET', '/api/v1/me', { token: body.token })
      if (me.status !== 200) out.push(`the minted token cannot call GET /api/v1/me (${me.status})`)
      else {
        const extra = escalation(this.o.me[c.caller], me.body)
        if (extra.length)
          out.push(
            `minted a token with rights its minter (${c.caller}) lacks: ${extra.join(', ')} (minted: roles ${JSON.stringify(me.body.roles)}, scopes ${JSON.stringify(me.body.scopes)})`
          )
      }
    }
    for (const p of c.base.op.params.filter((x) => x.in === 'path' && Array.isArray(x.schema.enum))) {
      const value = decoded(r.wire.target, c.base.op.path, p.name)
      // An empty one leaves a trailing slash: another route (the list), judged by the contract check.
      if (value !== undefined && value !== '' && !p.schema.enum.includes(value))
        out.push(
          `path parameter {${p.name}} = ${JSON.stringify(value)} is outside its enum, yet answered ${reply.status}`
        )
    }
    await this.o.pools.replenish(c.base.op.id, r.refs)
    return out
  }
}

function parse(text: string): any {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The decoded value of a path parameter in a sent target (as sent when it does not decode; undefined when the target has another shape). */
function decoded(target: string, template: string, name: string): string | undefined {
  const source = template
    .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
    .replace(/\\?\{([^}]+)\\?\}/g, (_m, n: string) => (n === name ? '([^/?]*)' : '[^/?]*'))
  const m = new RegExp(`^${source}(\\?|$)`).exec(target)
  if (!m) return undefined
  try {
    return decodeURIComponent(m[1])
  } catch {
    return m[1]
  }
}

/** A body as a JS expression that rebuilds it exactly: a string literal, or hex for bytes that are not UTF-8. */
export function bodyExpr(b: Buffer): string {
  const text = b.toString('utf8')
  const exact = Buffer.from(text, 'utf8').equals(b)
  if (b.length <= 2_000) return exact ? JSON.stringify(text) : `Buffer.from('${b.toString('hex')}', 'hex')`
  return `${b.length} bytes starting ${JSON.stringify(b.subarray(0, 300).toString(exact ? 'utf8' : 'latin1'))} (built as the mutations above say)`
}

function repro(
  c: Case,
  r: Rendered,
  reply: WireReply | undefined,
  failures: string[],
  tokens: Record<string, string>
): string {
  const hide = (v: string) => Object.entries(tokens).reduce((s, [who, tok]) => s.split(tok).join(`<${who} token>`), v)
  const lines: string[] = [
    `${c.base.op.method} ${c.base.op.path} (${c.base.op.id}, base: ${c.base.label}, caller: ${c.caller}) misbehaved:`,
    ...failures.map((f) => `  ✗ ${f}`),
    'mutations:',
    ...(r.applied.length ? r.applied.map((a) => `  - ${a}`) : ['  (none: the valid base request)']),
    'request:',
    `  ${r.wire.method} ${r.wire.target.length > 2_000 ? `${r.wire.target.slice(0, 2_000)}…(${r.wire.target.length} chars)` : r.wire.target}`,
    ...r.wire.headers.map(([k, v]) => `  ${k}: ${JSON.stringify(v).slice(1, -1).slice(0, 300)}`),
    ...(r.wire.body ? [`  body: ${bodyExpr(r.wire.body)}`] : []),
    'answer:',
    ...(reply
      ? [
          `  ${reply.status} in ${Math.round(reply.ms)} ms, Content-Type: ${reply.headers['content-type'] ?? '(none)'}`,
          `  ${reply.text.slice(0, 1_500)}`
        ]
      : ['  (none)'])
  ]
  return hide(lines.join('\n'))
}
