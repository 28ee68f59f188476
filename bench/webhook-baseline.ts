/**
 * The floor of one webhook lane for `npm run bench:webhooks`, in a process of its own as the
 * service's dispatcher is: a bare node:http loop that POSTs `count` signed envelopes to the
 * receiver one at a time over a keep-alive connection. Each request is what the dispatcher
 * sends: the envelope (a real one from the service as template, with a fresh event and subject
 * id, so the same size) serialised, signed per request as Standard Webhooks do (HMAC-SHA256 of
 * `id.timestamp.body` with the secret's bytes, `v1,<base64>`), the same headers. No database.
 *
 * Forked by bench/webhooks.ts (serveAsChild); `{ type: 'run', url, count, template, secret }`
 * answers `{ type: 'done', ms, failed }` once the last response has been read.
 */
import { createHmac, randomUUID } from 'node:crypto'
import http from 'node:http'
import { serveAsChild } from './common.ts'

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

function post(url: URL, headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: 'POST',
      agent,
      headers: {
        ...headers,
        host: url.host,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'records-webhooks/1'
      }
    })
    req.on('error', () => resolve(0))
    req.on('response', (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
      res.on('error', () => resolve(0))
    })
    req.end(body)
  })
}

async function run(target: string, count: number, template: Record<string, any>, secret: string) {
  const url = new URL(target)
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64')
  let failed = 0
  const started = performance.now()
  for (let i = 0; i < count; i++) {
    const id = randomUUID()
    const body = JSON.stringify({ ...template, id, subject: { ...template.subject, id: randomUUID() } })
    const timestamp = Math.floor(Date.now() / 1000)
    const signature = `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
    const status = await post(
      url,
      { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature },
      body
    )
    if (status < 200 || status >= 300) failed++
  }
  return { ms: performance.now() - started, failed }
}

process.on(
  'message',
  (msg: { type?: string; url: string; count: number; template: Record<string, any>; secret: string }) => {
    if (msg?.type !== 'run') return
    void run(msg.url, msg.count, msg.template, msg.secret).then((r) => process.send!({ type: 'done', ...r }))
  }
)

serveAsChild(async () => undefined, {})
