/**
 * The client side of `npm run bench:bulk`: the rows it loads, bulk calls over HTTP with
 * their bodies streamed from a generator and every outcome checked, and the slow-writer
 * call that times the first outcome.
 */
import http from 'node:http'
import { once } from 'node:events'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createPayload } from './common.ts'

const severities = ['low', 'medium', 'high', 'critical']

/** Row `i` of a load tagged `tag`: the create payload with its own title and a severity that varies. */
export function bulkPayload(tag: string, i: number) {
  return {
    ...createPayload,
    title: `${createPayload.title} (${tag} #${i + 1})`,
    severity: severities[i % severities.length]
  }
}

/** NDJSON of rows [from, to) of a load, a few hundred lines per chunk (never the whole body at once). */
export function* ndjsonRows(tag: string, from: number, to: number, chunkRows = 250): Generator<string> {
  for (let start = from; start < to; start += chunkRows) {
    let chunk = ''
    for (let i = start; i < Math.min(to, start + chunkRows); i++)
      chunk += JSON.stringify({ payload: bulkPayload(tag, i) }) + '\n'
    yield chunk
  }
}

export interface Target {
  url: string
  token: string
  moduleKey: string
}

const agent = new http.Agent({ keepAlive: true })

function request(t: Target, a: http.Agent | false) {
  const url = new URL(`${t.url}/api/modules/${t.moduleKey}/bulk`)
  return http.request({
    hostname: url.hostname,
    port: url.port,
    path: url.pathname,
    method: 'POST',
    agent: a,
    headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/x-ndjson' }
  })
}

/**
 * Reads a bulk response to its end and checks it: HTTP 200, one `created` outcome per
 * row in input order, and a summary that is complete with matching counts. Throws with
 * what it saw otherwise. `onLine` is told of each outcome line as it arrives.
 */
async function readOutcomes(
  res: http.IncomingMessage,
  rows: number,
  onLine?: (n: number) => void
): Promise<{ firstNumber?: string }> {
  res.setEncoding('utf8')
  if (res.statusCode !== 200) {
    let body = ''
    for await (const d of res) body += d
    throw new Error(`bulk call answered ${res.statusCode}: ${body.slice(0, 500)}`)
  }
  let buffer = ''
  let seen = 0
  let firstNumber: string | undefined
  let summary: any
  const wrong: unknown[] = []
  const take = (text: string) => {
    if (!text.trim()) return
    const o = JSON.parse(text)
    if (o.summary) return void (summary = o.summary)
    seen++
    onLine?.(seen)
    if (o.line !== seen || o.status !== 'created' || typeof o.id !== 'string' || o.version !== 1) {
      if (wrong.length < 5) wrong.push(o)
    } else firstNumber ??= o.number
  }
  for await (const d of res as AsyncIterable<string>) {
    buffer += d
    let i
    while ((i = buffer.indexOf('\n')) >= 0) {
      take(buffer.slice(0, i))
      buffer = buffer.slice(i + 1)
    }
  }
  take(buffer)
  const counts = summary ? `summary ${JSON.stringify(summary)}` : 'no summary line'
  if (wrong.length)
    throw new Error(
      `bulk call: rows not created as expected (${seen} outcomes, ${counts}); first: ${JSON.stringify(wrong)}`
    )
  if (
    seen !== rows ||
    !summary ||
    summary.complete !== true ||
    summary.rows !== rows ||
    summary.created !== rows ||
    summary.errors !== 0
  ) {
    throw new Error(`bulk call of ${rows} rows: ${seen} outcome lines, ${counts}`)
  }
  return { firstNumber }
}

/** One bulk call of rows [from, to), its body streamed from ndjsonRows. */
export async function bulkCall(t: Target, tag: string, from: number, to: number) {
  const req = request(t, agent)
  const response = once(req, 'response') as Promise<[http.IncomingMessage]>
  // The body goes up while outcomes come down: read the response as soon as it starts.
  const outcome = response.then(([res]) => readOutcomes(res, to - from))
  await Promise.all([pipeline(Readable.from(ndjsonRows(tag, from, to)), req), outcome])
  return outcome
}

/** `rows` rows in calls of `perCall`, one call after another; wall time from the first call's start to the last response byte. */
export async function bulkLoad(t: Target, tag: string, rows: number, perCall: number) {
  const started = performance.now()
  let firstNumber: string | undefined
  for (let from = 0; from < rows; from += perCall) {
    const r = await bulkCall(t, tag, from, Math.min(rows, from + perCall))
    firstNumber ??= r.firstNumber
  }
  return { rows, ms: performance.now() - started, firstNumber }
}

/**
 * A slow writer: one row, then `pauseMs` of nothing, then `restRows` more and the end.
 * Returns the milliseconds from the first row written (on a connected socket, headers
 * already sent) to the first outcome line received; the whole call is checked as above.
 */
export async function firstOutcomeMs(t: Target, tag: string, restRows = 99, pauseMs = 1000): Promise<number> {
  const req = request(t, false) // a fresh connection, not a pooled one: 'connect' tells when the socket is up
  req.flushHeaders()
  const [socket] = (await once(req, 'socket')) as [import('node:net').Socket]
  if (socket.connecting) await once(socket, 'connect')
  let first: number | undefined
  const response = (once(req, 'response') as Promise<[http.IncomingMessage]>).then(([res]) =>
    readOutcomes(res, 1 + restRows, (n) => {
      if (n === 1) first = performance.now()
    })
  )
  response.catch(() => undefined)
  const rows = ndjsonRows(tag, 0, 1 + restRows, 1)
  const wrote = performance.now()
  req.write(rows.next().value)
  await new Promise((resolve) => setTimeout(resolve, pauseMs))
  const firstBeforeRest = first
  for (const chunk of rows) req.write(chunk)
  req.end()
  await response
  socket.destroy()
  if (firstBeforeRest === undefined)
    throw new Error(
      `no outcome for the first row within ${pauseMs} ms (it came ${first === undefined ? 'never' : `after ${Math.round(first - wrote)} ms`})`
    )
  return firstBeforeRest - wrote
}
