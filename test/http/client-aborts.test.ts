import { randomUUID } from 'node:crypto'
import { createWriteStream, rmSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { finished } from 'node:stream/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import t from '../helpers/tap.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

// Debug level: the aborts must still be JSON lines, and the test sees that they were noticed.
const server = await startTestServer({ logLevel: 'debug' })
t.teardown(() => server.close())
const { storage } = server.platform

/**
 * Everything written to stderr (where the JSON log and Koa's default error printer write) from
 * now until stop(), instead of the terminal.
 */
function captureStderr() {
  const chunks: string[] = []
  const write = process.stderr.write
  process.stderr.write = (chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'))
    return true
  }
  const lines = () =>
    chunks
      .join('')
      .split('\n')
      .filter((line) => line !== '')
  return {
    lines,
    stop() {
      process.stderr.write = write
      return lines()
    }
  }
}

const parsed = (line: string) => {
  try {
    return JSON.parse(line)
  } catch {
    return undefined
  }
}

/** GETs `url` and cuts the connection as soon as the first bytes of the body arrive. */
function abortAfterFirstBytes(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => {
      res.once('data', () => {
        req.destroy()
        resolve(res.statusCode!)
      })
    })
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)))
  })
}

/** Waits until a log line passes `test`, then a moment more for late errors of the same connection. */
async function untilLogged(lines: () => string[], test: (entry: any) => boolean, ms = 3000) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline && !lines().some((l) => test(parsed(l) ?? {}))) await sleep(20)
  await sleep(300)
}

const abortMessage = 'client closed the connection before the response ended'

// A file large enough that it is still streaming when the client leaves.
const key = `acme/exports/${randomUUID()}`
const big = join(tmpdir(), `records-abort-${randomUUID()}.csv`)
const out = createWriteStream(big)
for (let i = 0; i < 512; i++) out.write(Buffer.alloc(64 * 1024, 'x'))
out.end()
await finished(out)
await storage.putFile(key, big, 'text/csv; charset=utf-8')
rmSync(big)

t.test('a client that aborts a download leaves only JSON lines in the log, the abort at debug level', async (t) => {
  const { url } = await storage.signDownload({
    key,
    contentType: 'text/csv; charset=utf-8',
    fileName: 'incident-export-2026-11-22.csv',
    expiresAt: new Date(Date.now() + 60_000)
  })
  const capture = captureStderr()
  let status: number | undefined
  try {
    status = await abortAfterFirstBytes(url)
    await untilLogged(capture.lines, (e) => e.msg === abortMessage)
  } finally {
    capture.stop()
  }
  const lines = capture.lines()
  t.equal(status, 200)
  t.same(
    lines.filter((l) => parsed(l) === undefined),
    [],
    'no line that is not JSON (no stack trace)'
  )
  const aborts = lines.map(parsed).filter((e) => e?.msg === abortMessage)
  t.ok(aborts.length, 'the abort is logged')
  t.ok(
    aborts.every((e) => e.level === 'debug'),
    'at debug level'
  )
  t.ok(
    aborts.some(
      (e) => e.path === new URL(url).pathname && ['ERR_STREAM_PREMATURE_CLOSE', 'ECONNRESET'].includes(e.code)
    ),
    'with the path and the code'
  )
  t.notOk(
    lines.map(parsed).some((e) => e?.level === 'error'),
    'nothing at error level'
  )
})

t.test('a client that aborts a list mid-response leaves only JSON lines in the log', async (t) => {
  await bulkCall(
    server.url,
    '/api/modules/incident/bulk',
    server.keys.acme,
    ndjson(
      Array.from({ length: 200 }, (_, i) => ({
        payload: incidentPayload({ title: `Incident ${i}`, description: 'x'.repeat(2000) })
      }))
    )
  )
  const capture = captureStderr()
  const statuses: number[] = []
  try {
    for (let i = 0; i < 5; i++)
      statuses.push(
        await abortAfterFirstBytes(`${server.url}/api/v1/records?moduleKey=incident&limit=200`, {
          authorization: `Bearer ${server.keys.acme}`
        })
      )
    await sleep(500)
  } finally {
    capture.stop()
  }
  const lines = capture.lines()
  t.same(statuses, [200, 200, 200, 200, 200])
  t.same(
    lines.filter((l) => parsed(l) === undefined),
    [],
    'no line that is not JSON'
  )
  t.notOk(
    lines.map(parsed).some((e) => e?.level === 'error'),
    'nothing at error level'
  )
})

t.test('any other error after a response started is one JSON line at error level', async (t) => {
  const capture = captureStderr()
  try {
    server.running.app.emit('error', new Error('the disk went away'))
  } finally {
    capture.stop()
  }
  const lines = capture.lines()
  t.same(
    lines.filter((l) => parsed(l) === undefined),
    [],
    'no line that is not JSON'
  )
  const errors = lines.map(parsed).filter((e) => e?.level === 'error')
  t.equal(errors.length, 1)
  t.match(errors[0], { msg: 'response failed', error: /^Error: the disk went away\n\s+at / })
})
