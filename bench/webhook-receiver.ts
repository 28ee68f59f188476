/**
 * The receiver of `npm run bench:webhooks`, in a process of its own so that its event loop is
 * shared with neither the service nor the benchmark: a node:http server on 127.0.0.1 that reads
 * each request to its end, answers 204 and notes the arrival (aligned wall clock, bench/wall-clock.ts),
 * the path (one per subscription), the `webhook-id` header and the body.
 *
 * Forked by bench/webhooks.ts (serveAsChild: `ready` carries the URL). Over IPC it answers
 * `{ type: 'count' }` with the arrivals so far and `{ type: 'take' }` with every arrival since the
 * last take (subject id read from the body then, not while receiving) and the first request it
 * ever got, headers and body, to check its signature.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { serveAsChild } from './common.ts'
import { wallClock } from './wall-clock.ts'

export interface Arrival {
  at: number
  path: string
  id: string
  subject: string | null
  type: string | null
  bytes: number
}

const now = wallClock()
let received: Array<{ at: number; path: string; id: string; body: string }> = []
let first: { headers: http.IncomingHttpHeaders; body: string } | undefined

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const at = now()
    res.writeHead(204).end()
    const body = Buffer.concat(chunks).toString('utf8')
    received.push({ at, path: req.url ?? '', id: String(req.headers['webhook-id'] ?? ''), body })
    first ??= { headers: req.headers, body }
  })
})
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
const { port } = server.address() as AddressInfo

function parsed(r: (typeof received)[number]): Arrival {
  let json: any
  try {
    json = JSON.parse(r.body)
  } catch {
    json = undefined
  }
  return {
    at: r.at,
    path: r.path,
    id: r.id,
    subject: json?.subject?.id ?? null,
    type: json?.type ?? null,
    bytes: Buffer.byteLength(r.body)
  }
}

process.on('message', (msg: { type?: string }) => {
  if (msg?.type === 'count') process.send!({ type: 'count', n: received.length })
  if (msg?.type === 'take') {
    const taken = received
    received = []
    process.send!({ type: 'take', arrivals: taken.map(parsed), first })
  }
})

serveAsChild(
  async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  },
  { url: `http://127.0.0.1:${port}` }
)
