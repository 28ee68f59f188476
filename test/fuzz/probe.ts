import type { TestServer } from '../helpers/server.ts'
import { bodyExpr } from './exchange.ts'
import { prototypeKeys } from './oracles.ts'
import { differences, type Snapshots } from './snapshot.ts'
import { send, wtf8, type WireReply, type WireRequest } from './wire.ts'

/**
 * One fuzz request of a protocol-driven fuzzer (GraphQL, SCIM) end to end, with the oracles
 * every fuzzer here shares: snapshot, send on the wire, snapshot; no 5xx, no missing answer,
 * an answer within the bound, nothing changed when the protocol's judge says the answer
 * refused, Object.prototype untouched. The judge adds the protocol's own checks. A
 * misbehaviour throws an Error whose message is a ready repro (as exchange.ts does for
 * OpenAPI cases), flagged `slow` when it was the time bound, so it is not shrunk.
 */
export interface Judgement {
  /** The answer changed nothing by its own account (an error, a refusal): the database must agree. */
  refused: boolean
  issues: string[]
}

export interface ProbeCase {
  /** What the requests are counted under (an operation, a root field, a family of cases). */
  family: string
  /** One line naming the case. */
  label: string
  /** How it was built from a valid request: one line each. */
  notes: string[]
  wire: WireRequest
  /** How long to wait for the answer before giving up (default: the bound); longer to learn how slow a slow answer is. */
  patienceMs?: number
}

/** How long a request given up on is still waited for before the next is sent (its work would otherwise land in the next one's snapshots). */
const lateMs = 180_000

export class Probe {
  /** Requests sent, per family. */
  readonly sent = new Map<string, number>()
  /** Distinct answers outside the OpenAPI document → the repro of the first request that got one. */
  readonly contract = new Map<string, string>()
  slowest = { ms: 0, label: 'none' }
  private readonly port: number
  private readonly proto = prototypeKeys()

  constructor(
    private readonly o: {
      server: TestServer
      snapshots: Snapshots
      boundMs: number
      /** Caller name → token, hidden in repros. */
      tokens: Record<string, string>
    }
  ) {
    this.port = Number(new URL(o.server.url).port)
  }

  /** A request whose answer did not come in time, still waited for (up to `lateMs`) before the next one. */
  private pending?: Promise<void>

  /** Waits for a request given up on to end. */
  async settle() {
    await this.pending
    this.pending = undefined
  }

  total() {
    return [...this.sent.values()].reduce((a, b) => a + b, 0)
  }

  /** Sends one case and judges it; returns the answer (for a caller that reads it, e.g. to replenish). */
  async run(c: ProbeCase, judge: (reply: WireReply) => Judgement | Promise<Judgement>): Promise<WireReply | undefined> {
    // A request given up on is still at work in the server: its changes must not land in this one's snapshots.
    await this.settle()
    const before = await this.o.snapshots.take()
    const violations = this.o.server.violations.length
    let reply: WireReply | undefined
    const failures: string[] = []
    const patience = c.patienceMs ?? this.o.boundMs
    const answer = send(this.port, c.wire, lateMs)
    let timer: NodeJS.Timeout | undefined
    try {
      reply = await Promise.race([
        answer,
        new Promise<never>(
          (_resolve, reject) =>
            (timer = setTimeout(() => reject(new Error(`no complete answer within ${patience} ms`)), patience))
        )
      ])
    } catch (err) {
      failures.push(`no answer: ${(err as Error).message}`)
      this.pending = answer.then(
        () => undefined,
        () => undefined
      )
    } finally {
      clearTimeout(timer)
    }
    this.sent.set(c.family, (this.sent.get(c.family) ?? 0) + 1)
    if (process.env.FUZZ_TRACE)
      console.error(
        `${reply?.status ?? '---'} ${Math.round(reply?.ms ?? 0)}ms ${c.family}: ${c.label} ${c.notes.join(' | ').slice(0, 300)}`
      )
    const after = await this.o.snapshots.take()
    if (reply && reply.ms > this.slowest.ms)
      this.slowest = {
        ms: reply.ms,
        label: `${Math.round(reply.ms)} ms (${c.family}: ${`${c.label} ${c.notes.join('; ')}`.slice(0, 200)})`
      }
    if (reply) {
      if (reply.status >= 500) failures.push(`answered ${reply.status}`)
      if (reply.ms > this.o.boundMs)
        failures.push(`answered after ${Math.round(reply.ms)} ms (bound ${this.o.boundMs} ms)`)
      const verdict = await judge(reply)
      failures.push(...verdict.issues)
      if (verdict.refused || reply.status >= 400) {
        const changed = differences(before, after)
        if (changed.length) failures.push(`refused, yet the database changed: ${changed.join('; ')}`)
      }
    }
    for (const v of this.o.server.violations.slice(violations)) {
      const key = `${v.method} ${v.path.replace(/\/[^/]*$/, '/…')} → ${v.status}: ${v.message.replace(/[0-9a-f-]{36}/g, '<id>')}`
      if (!this.contract.has(key))
        this.contract.set(key, this.repro(c, reply, [`breaks the OpenAPI document: ${v.message}`]))
    }
    if (prototypeKeys() !== this.proto) {
      failures.push(`Object.prototype gained ${prototypeKeys()}`)
      for (const k of Object.getOwnPropertyNames(Object.prototype))
        if (!this.proto.split(',').includes(k)) delete (Object.prototype as any)[k]
    }
    if (failures.length)
      throw Object.assign(new Error(this.repro(c, reply, failures)), { slow: !reply || reply.ms > this.o.boundMs })
    return reply
  }

  repro(c: ProbeCase, reply: WireReply | undefined, failures: string[]): string {
    const hide = (v: string) =>
      Object.entries(this.o.tokens).reduce((s, [who, tok]) => s.split(tok).join(`<${who} token>`), v)
    const w = c.wire
    const lines = [
      `${c.family}: ${c.label} misbehaved:`,
      ...failures.map((f) => `  ✗ ${f}`),
      'built as:',
      ...(c.notes.length ? c.notes.map((n) => `  - ${n}`) : ['  (a valid request)']),
      'request:',
      `  ${w.method} ${w.target.length > 2_000 ? `${w.target.slice(0, 2_000)}…(${w.target.length} chars)` : w.target}`,
      ...w.headers.map(([k, v]) => `  ${k}: ${JSON.stringify(v).slice(1, -1).slice(0, 300)}`),
      ...(w.body ? [`  body: ${bodyExpr(w.body)}`] : []),
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
}

/** Text an answer must never show a client: a stack, a JavaScript fault, SQL, an internal error passed off as a result. */
export const leaks: Array<[RegExp, string]> = [
  [/Maximum call stack/i, 'a stack overflow'],
  [/Cannot read propert/i, 'a JavaScript TypeError'],
  [/is not a function|is not iterable|undefined is not|null is not an object/i, 'a JavaScript TypeError'],
  [/\bat [\w.<>]+ \(?(?:file:|node:|\/)[^)\s]+:\d+:\d+/, 'a stack trace'],
  [
    /syntax error at or near|violates (?:not-null|unique|check|foreign key) constraint|invalid input syntax for|unsupported Unicode escape sequence|invalid byte sequence for encoding/i,
    "PostgreSQL's own message"
  ],
  [/ECONNREFUSED|ETIMEDOUT|EPIPE/, 'a socket error']
]

/** What in a text shows an internal fault (see `leaks`). */
export function leaked(text: string): string[] {
  return leaks
    .filter(([re]) => re.test(text))
    .map(([re, what]) => `the answer shows ${what} (${JSON.stringify(text.match(re)![0])})`)
}

/** The media type of an answer, lower-cased, without parameters. */
export const mediaType = (reply: WireReply) => (reply.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase()

export function parseJson(text: string): { ok: true; value: any } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/** Percent-encodes every byte but the unreserved ones (lone surrogates as their WTF-8 bytes, as a client that does not check would send them). */
export const percentEncode = (s: string) =>
  [...wtf8(s)]
    .map((b) =>
      /[A-Za-z0-9\-._~]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`
    )
    .join('')
