/**
 * Runs a Runscope API test export (the JSON Runscope's "Export test" wrote; Okta ships its
 * SCIM spec test as one) against a server, step by step, as Runscope did: request steps
 * with `{{variable}}` templates, `variables` taken from each response, `assertions` on
 * status, JSON, headers, text, time and size, and the step's scripts; pause steps wait
 * (or not, see `pauses`). Before sending anything it checks that the export uses nothing
 * this runner does not implement (another step type, a form body, an auth helper, an
 * unknown source or comparison) and refuses it otherwise, naming each: a runner that
 * skipped what it did not understand would report passes it never checked.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { request as httpsRequest } from 'node:https'
import {
  asText,
  comparisons,
  parseProperty,
  runScript,
  substitute,
  valueAt,
  type ScriptOutcome,
  type Variables
} from './runscope-checks.ts'
import { excerpt, showFailure, type Failure, type Say } from './results.ts'

export interface RunscopeAssertion {
  source: string
  comparison?: string
  value?: unknown
  property?: string | null
}

export interface RunscopeVariable {
  source: string
  name: string
  property?: string | null
}

export interface RunscopeStep {
  step_type: string
  skipped?: boolean
  note?: string
  method?: string
  url?: string
  headers?: Record<string, string[] | string>
  body?: string | null
  form?: Record<string, unknown>
  multipart_form?: unknown[]
  binary_body?: unknown
  auth?: Record<string, unknown>
  assertions?: RunscopeAssertion[]
  variables?: RunscopeVariable[]
  scripts?: string[]
  before_scripts?: string[]
  duration?: number
}

export interface RunscopeExport {
  name?: string
  steps: RunscopeStep[]
}

export interface RunscopeOptions {
  /** Initial variables, then whatever steps and scripts set; the runner adds to this map. */
  variables: Variables
  /** Wait out pause steps (Runscope's pace), or note and skip them (default). */
  pauses?: 'wait' | 'skip'
  /** Milliseconds before a request counts as failed; default 30 s. */
  timeoutMs?: number
  say?: Say
}

export interface RunscopeOutcome {
  passed: number
  failed: number
  failures: Failure[]
  variables: Variables
}

const sources = new Set([
  'response_status',
  'response_json',
  'response_headers',
  'response_text',
  'response_time',
  'response_size'
])
const variableSources = new Set(['response_status', 'response_json', 'response_headers', 'response_text'])
const noValue = new Set(['empty', 'not_empty', 'is_null', 'is_a_number'])

/** Everything in the export this runner would not carry out as Runscope did; empty when it can run it. */
export function unsupported(test: RunscopeExport): string[] {
  const problems: string[] = []
  if (!Array.isArray(test?.steps)) return ['the export has no "steps" list']
  test.steps.forEach((step, i) => {
    const at = `step ${i + 1}${step.note ? ` (${step.note.trim()})` : ''}`
    if (step.step_type === 'pause') {
      if (!Number.isFinite(step.duration)) problems.push(`${at}: a pause without a numeric duration`)
      return
    }
    if (step.step_type !== 'request') return void problems.push(`${at}: step type "${step.step_type}"`)
    if (!step.method || !step.url) problems.push(`${at}: a request without method or url`)
    if (step.auth && Object.keys(step.auth).length)
      problems.push(`${at}: Runscope auth helper ${JSON.stringify(step.auth)}`)
    if (step.form && Object.keys(step.form).length) problems.push(`${at}: a form body`)
    if (step.multipart_form?.length) problems.push(`${at}: a multipart form body`)
    if (step.binary_body) problems.push(`${at}: a binary body`)
    for (const a of step.assertions ?? []) {
      if (!sources.has(a.source)) problems.push(`${at}: assertion source "${a.source}"`)
      if (!a.comparison || !Object.hasOwn(comparisons, a.comparison))
        problems.push(`${at}: assertion comparison "${a.comparison}"`)
      try {
        parseProperty(a.property)
      } catch (err) {
        problems.push(`${at}: ${(err as Error).message}`)
      }
    }
    for (const v of step.variables ?? []) {
      if (!variableSources.has(v.source)) problems.push(`${at}: variable source "${v.source}" (for ${v.name})`)
    }
  })
  return problems
}

interface Exchange {
  method: string
  url: string
  status: number
  headers: IncomingHttpHeaders
  text: string
  timeMs: number
  size: number
  /** Set when no response came: connection refused, timeout, a URL that does not parse. */
  error?: string
}

/** Sends one request with exactly the headers given (fetch would add its own) and reads the whole answer. */
function send(
  method: string,
  url: string,
  headers: Array<[string, string]>,
  body: string | undefined,
  timeoutMs: number
): Promise<Exchange> {
  const started = performance.now()
  const base = { method, url, status: 0, headers: {}, text: '', size: 0 }
  let target: URL
  try {
    target = new URL(url)
  } catch {
    return Promise.resolve({ ...base, timeMs: 0, error: `not a URL: ${url}` })
  }
  const outgoing: Record<string, string | string[]> = {}
  for (const [name, value] of headers) {
    const prior = outgoing[name]
    outgoing[name] = prior === undefined ? value : [...(Array.isArray(prior) ? prior : [prior]), value]
  }
  const payload = body ? Buffer.from(body) : undefined
  if (payload) outgoing['Content-Length'] = String(payload.length)
  const requestFn = target.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve) => {
    const req = requestFn(target, { method, headers: outgoing, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const raw = Buffer.concat(chunks)
        resolve({
          ...base,
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: raw.toString('utf8'),
          size: raw.length,
          timeMs: Math.round(performance.now() - started)
        })
      })
      res.on('error', (err) =>
        resolve({ ...base, timeMs: Math.round(performance.now() - started), error: err.message })
      )
    })
    req.on('timeout', () => req.destroy(new Error(`no response within ${timeoutMs} ms`)))
    req.on('error', (err) =>
      resolve({
        ...base,
        timeMs: Math.round(performance.now() - started),
        error: (err as NodeJS.ErrnoException).code ?? err.message
      })
    )
    req.end(payload)
  })
}

type Json = { ok: true; value: unknown } | { ok: false; error: string }

function parseJson(exchange: Exchange): Json {
  if (exchange.error) return { ok: false, error: `no response (${exchange.error})` }
  try {
    return { ok: true, value: JSON.parse(exchange.text) }
  } catch {
    return { ok: false, error: `the response is not JSON: ${excerpt(exchange.text, 80) || '(empty body)'}` }
  }
}

const headerText = (headers: IncomingHttpHeaders, name: string) => {
  const v = headers[name.toLowerCase()]
  return v === undefined ? undefined : Array.isArray(v) ? v.join(', ') : v
}

/** The value a source names in a response; `error` when it cannot be read at all. */
function read(
  source: string,
  property: string | null | undefined,
  exchange: Exchange,
  json: () => Json
): { value?: unknown; error?: string } {
  if (exchange.error) return { error: `no response (${exchange.error})` }
  switch (source) {
    case 'response_status':
      return { value: exchange.status }
    case 'response_time':
      return { value: exchange.timeMs }
    case 'response_size':
      return { value: exchange.size }
    case 'response_text':
      if (!property) return { value: exchange.text }
      // A property on a text source is a regular expression; its first group (or the match) is the value.
      return { value: ((m) => (m ? (m[1] ?? m[0]) : undefined))(exchange.text.match(new RegExp(property))) }
    case 'response_headers':
      return { value: headerText(exchange.headers, property ?? '') }
    case 'response_json': {
      const parsed = json()
      return parsed.ok ? { value: valueAt(parsed.value, parseProperty(property)) } : { error: parsed.error }
    }
    default:
      return { error: `unknown source ${source}` }
  }
}

const describe = (a: RunscopeAssertion, expected: string | undefined) =>
  `${a.source}${a.property ? `.${a.property}` : ''} ${a.comparison}${expected === undefined || noValue.has(a.comparison!) ? '' : ` ${JSON.stringify(expected)}`}`

const shown = (value: unknown) => (value === undefined ? 'nothing there' : excerpt(asText(value), 200))

/** Runs the steps in order; every assertion and script assertion counts, and so does each script error. */
export async function runRunscope(test: RunscopeExport, options: RunscopeOptions): Promise<RunscopeOutcome> {
  const problems = unsupported(test)
  if (problems.length)
    throw new Error(`this Runscope export uses what the runner does not implement:\n  ${problems.join('\n  ')}`)
  const say = options.say ?? (() => undefined)
  const variables = options.variables
  const timeoutMs = options.timeoutMs ?? 30_000
  const outcome: RunscopeOutcome = { passed: 0, failed: 0, failures: [], variables }

  for (const [index, step] of test.steps.entries()) {
    const label = `[${index + 1}] ${(step.note ?? '').trim() || step.step_type}`
    if (step.skipped) {
      say(`${label}: skipped in the export`)
      continue
    }
    if (step.step_type === 'pause') {
      if (options.pauses === 'wait') await new Promise((r) => setTimeout(r, step.duration! * 1000))
      say(
        `${label} ${step.duration} s: ${options.pauses === 'wait' ? 'waited' : 'not waited (SCIM_PEERS_PAUSES=wait waits)'}`
      )
      continue
    }

    const unresolved = new Set<string>()
    const fill = (text: string) => substitute(text, variables, unresolved)
    const request = {
      method: step.method!.toUpperCase(),
      url: fill(step.url!),
      headers: Object.fromEntries(
        Object.entries(step.headers ?? {}).map(([name, values]) => [
          name,
          (Array.isArray(values) ? values : [values]).map(fill)
        ])
      ) as Record<string, string[]>,
      body: step.body ? fill(step.body) : ''
    }
    const failures: Failure[] = []
    const said: string[] = []
    let passed = 0
    const record = (assertion: string, ok: boolean, detail: string, response?: string) => {
      if (ok) passed++
      else failures.push({ where: label, assertion, detail, response })
    }
    const scripted = (outcomeOf: ScriptOutcome, kind: string, response?: string) => {
      for (const a of outcomeOf.assertions) record(`${kind} ${a.name}`, a.passed, a.message ?? '', response)
      if (outcomeOf.error) record(`${kind} error`, false, outcomeOf.error, response)
      for (const line of outcomeOf.logs) said.push(`    log: ${line}`)
    }
    for (const code of step.before_scripts ?? []) {
      if (code.trim())
        scripted(runScript(code, variables, { request, filename: `step-${index + 1}-before.js` }), 'before-script')
    }

    const headerList = Object.entries(request.headers).flatMap(([name, values]) =>
      values.map((v) => [name, v] as [string, string])
    )
    const exchange = await send(request.method, request.url, headerList, request.body || undefined, timeoutMs)
    let cached: Json | undefined
    const json = () => (cached ??= parseJson(exchange))
    const path = exchange.url.replace(/^[a-z]+:\/\/[^/]+/i, '')
    const evidence = exchange.error
      ? `${request.method} ${path} → no response (${exchange.error})`
      : `${request.method} ${path} → ${exchange.status} ${headerText(exchange.headers, 'content-type') ?? '(no content type)'} ${excerpt(exchange.text) || '(empty body)'}`

    for (const a of step.assertions ?? []) {
      const expected = a.value === null || a.value === undefined ? undefined : fill(String(a.value))
      const { value, error } = read(a.source, a.property ? fill(a.property) : a.property, exchange, json)
      const name = describe(a, expected)
      if (error) record(name, false, error, evidence)
      else record(name, comparisons[a.comparison!](value, expected ?? ''), `got ${shown(value)}`, evidence)
    }
    for (const v of step.variables ?? []) {
      const { value } = read(v.source, v.property, exchange, json)
      if (value === undefined || value === null)
        said.push(`    variable ${v.name}: nothing at ${v.source}${v.property ? `.${v.property}` : ''}, left unset`)
      else variables.set(v.name, asText(value))
    }
    const response = {
      status: exchange.status,
      headers: Object.fromEntries(
        Object.entries(exchange.headers).map(([k, val]) => [k, Array.isArray(val) ? val : [val]])
      ),
      body: exchange.text,
      response_time: exchange.timeMs,
      size: exchange.size
    }
    for (const code of step.scripts ?? []) {
      if (!code.trim()) continue
      // Without a response a script would only test the runner's stand-in for one.
      if (exchange.error) record('script', false, `not run: no response (${exchange.error})`, evidence)
      else
        scripted(
          runScript(code, variables, { request, response, filename: `step-${index + 1}-script.js` }),
          'script',
          evidence
        )
    }

    outcome.passed += passed
    outcome.failed += failures.length
    outcome.failures.push(...failures)
    const status = exchange.error ? `no response (${exchange.error})` : `${exchange.status} in ${exchange.timeMs} ms`
    say(`${label}: ${request.method} ${path} → ${status}: ${passed} passed, ${failures.length} failed`)
    if (unresolved.size)
      say(`    unresolved variables, sent as written: ${[...unresolved].map((n) => `{{${n}}}`).join(', ')}`)
    said.forEach((line) => say(line))
    if (failures.length) say(`    response: ${evidence}`)
    for (const f of failures) showFailure(say, { ...f, response: undefined })
  }
  return outcome
}
