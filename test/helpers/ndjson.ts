import http from 'node:http'

export interface BulkCall {
  /** Outcome lines received so far, parsed. */
  lines: any[]
  status(): number | undefined
  headers(): http.IncomingHttpHeaders | undefined
  write(rows: unknown[] | string): void
  end(rows?: unknown[] | string): Promise<any[]>
  /** Resolves once `n` lines have arrived (rejects after `ms`). */
  waitFor(n: number, ms?: number): Promise<void>
  /** Cuts the connection, as a client that dies mid-upload. */
  destroy(): void
  /** Resolves when the response has ended (or the connection closed). */
  finished: Promise<void>
}

const toText = (rows: unknown[] | string) =>
  typeof rows === 'string' ? rows : rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r)) + '\n').join('')

/** A streaming bulk call over a raw HTTP connection: write rows whenever, read outcomes as they come. */
export function openBulk(baseUrl: string, path: string, token: string, headers: Record<string, string> = {}): BulkCall {
  const url = new URL(baseUrl + path)
  const lines: any[] = []
  let status: number | undefined
  let resHeaders: http.IncomingHttpHeaders | undefined
  let waiters: Array<() => void> = []
  const notify = () => {
    const w = waiters
    waiters = []
    for (const f of w) f()
  }
  const req = http.request({
    hostname: url.hostname,
    port: url.port,
    path: url.pathname + url.search,
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson', ...headers }
  })
  const finished = new Promise<void>((resolve) => {
    req.on('error', () => resolve())
    req.on('close', () => resolve())
    req.on('response', (res) => {
      status = res.statusCode
      resHeaders = res.headers
      notify()
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => {
        buffer += d
        let i
        while ((i = buffer.indexOf('\n')) >= 0) {
          const l = buffer.slice(0, i)
          buffer = buffer.slice(i + 1)
          if (l.trim()) lines.push(JSON.parse(l))
        }
        notify()
      })
      res.on('end', () => {
        if (buffer.trim()) lines.push(JSON.parse(buffer))
        notify()
        resolve()
      })
      res.on('error', () => resolve())
    })
  })
  const call: BulkCall = {
    lines,
    status: () => status,
    headers: () => resHeaders,
    write: (rows) => void req.write(toText(rows)),
    async end(rows) {
      req.end(rows === undefined ? undefined : toText(rows))
      await finished
      return lines
    },
    waitFor(n, ms = 5000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`only ${lines.length} of ${n} lines after ${ms} ms`)), ms)
        const check = () => {
          if (lines.length >= n) {
            clearTimeout(timer)
            resolve()
          } else waiters.push(check)
        }
        check()
      })
    },
    destroy: () => req.destroy(),
    finished
  }
  // Headers go out at once, so the server starts reading before the body ends.
  req.flushHeaders()
  return call
}

/** A whole bulk call at once: status, headers and parsed outcome lines (or a problem body). */
export async function bulkCall(
  baseUrl: string,
  path: string,
  token: string,
  body: string,
  headers: Record<string, string> = {}
) {
  const res = await fetch(baseUrl + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson', ...headers },
    body
  })
  const text = await res.text()
  const isNdjson = (res.headers.get('content-type') ?? '').startsWith('application/x-ndjson')
  return {
    status: res.status,
    headers: res.headers,
    lines: isNdjson
      ? text
          .split('\n')
          .filter((l) => l.trim())
          .map((l) => JSON.parse(l))
      : [],
    body: isNdjson ? undefined : JSON.parse(text)
  }
}

export const ndjson = (rows: unknown[]) =>
  rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n'
