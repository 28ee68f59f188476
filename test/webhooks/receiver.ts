import http from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Received {
  at: number
  headers: http.IncomingHttpHeaders
  body: string
  json: any
}

/**
 * A real local HTTP receiver for webhook tests: records every request and answers with the
 * status `answer` gives for the n-th request (0-based), 200 by default; 0 holds the request
 * open without an answer (a receiver that hangs).
 */
export async function startReceiver(
  answer: (n: number, r: Received) => number = () => 200,
  options: { delayMs?: number; body?: (n: number) => string; headers?: Record<string, string> } = {}
) {
  const received: Received[] = []
  let waiters: Array<() => void> = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      let json: any
      try {
        json = JSON.parse(body)
      } catch {
        json = undefined
      }
      const r = { at: Date.now(), headers: req.headers, body, json }
      const n = received.length
      const status = answer(n, r)
      received.push(r)
      const reply = () =>
        res
          .writeHead(status, { 'content-type': 'text/plain', ...options.headers })
          .end(options.body?.(n) ?? `answered ${status}`)
      if (status) setTimeout(reply, options.delayMs ?? 0)
      const w = waiters
      waiters = []
      for (const f of w) f()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    /** Resolves once `n` requests arrived (rejects after `ms`). */
    async waitFor(n: number, ms = 20_000) {
      const until = Date.now() + ms
      while (received.length < n) {
        if (Date.now() > until) throw new Error(`receiver got ${received.length} of ${n} requests within ${ms} ms`)
        await new Promise<void>((resolve) => {
          waiters.push(resolve)
          setTimeout(resolve, 100)
        })
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Config for tests: plain http and loopback allowed explicitly, a compressed retry schedule. */
export const webhookTestConfig = (more: Record<string, unknown> = {}) => ({
  webhooks: {
    allowHttp: true,
    allowedCidrs: ['127.0.0.1/32'],
    retryScheduleMs: [0, 100, 200, 400, 700, 1100, 1600, 2200],
    retryJitter: 0,
    pollMs: 200,
    timeoutMs: 2000,
    ...more
  }
})
