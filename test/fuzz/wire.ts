import net from 'node:net'

/**
 * Raw HTTP/1.1 for the fuzzer. `fetch` and `node:http` refuse or rewrite what an attacker
 * can send (header bytes, invalid percent-escapes, `1e400`), so requests are written to a
 * socket byte for byte, and bodies are JSON text built here rather than by JSON.stringify.
 */

/** JSON text sent verbatim where a value goes: `1e400`, `-0`, 5,000 levels of `[`. */
export class Raw {
  constructor(
    readonly text: string,
    /** How to rebuild it in a repro, e.g. `'['.repeat(5000) + ']'.repeat(5000)`. */
    readonly label: string = text
  ) {}
}

export type JsonLike = null | boolean | number | string | Raw | JsonLike[] | { [key: string]: JsonLike }

/** An object whose `__proto__`, `constructor` and `prototype` keys are plain own keys. */
export function obj(entries: Array<[string, JsonLike]> = []): { [key: string]: JsonLike } {
  const o: { [key: string]: JsonLike } = Object.create(null)
  for (const [k, v] of entries) setKey(o, k, v)
  return o
}

export function setKey(o: object, key: string, value: unknown) {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true })
}

/** JSON text; lone surrogates come out as `\ud800` escapes (JSON.stringify's well-formed output). */
export function jsonText(v: JsonLike): string {
  if (v instanceof Raw) return v.text
  if (v === null || typeof v !== 'object') return JSON.stringify(v)
  if (Array.isArray(v)) return `[${v.map(jsonText).join(',')}]`
  return `{${Object.keys(v)
    .map((k) => `${JSON.stringify(k)}:${jsonText(v[k])}`)
    .join(',')}}`
}

/** Deep copy that keeps Raw nodes and null-prototype objects. */
export function cloneJson<T extends JsonLike>(v: T): T {
  if (v === null || typeof v !== 'object' || v instanceof Raw) return v
  if (Array.isArray(v)) return v.map(cloneJson) as T
  return obj(Object.keys(v).map((k) => [k, cloneJson((v as Record<string, JsonLike>)[k])])) as T
}

/** UTF-8, except that lone surrogates become their 3-byte (invalid UTF-8) forms, e.g. ED A0 80. */
export function wtf8(s: string): Buffer {
  const out: number[] = []
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    const next = s.charCodeAt(i + 1)
    if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out.push(...Buffer.from(s.slice(i, i + 2), 'utf8'))
      i++
    } else if (c >= 0xd800 && c <= 0xdfff) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f))
    else out.push(...Buffer.from(s[i], 'utf8'))
  }
  return Buffer.from(out)
}

export interface WireRequest {
  method: string
  /** Path and query exactly as they go on the request line (already percent-encoded). */
  target: string
  /** Header values are sent as their UTF-8 bytes (lone surrogates as WTF-8). */
  headers: Array<[string, string]>
  body?: Buffer
}

export interface WireReply {
  status: number
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Record<string, string>
  text: string
  ms: number
}

/** Sends one request on a new connection and reads the whole answer; rejects after `timeoutMs`. */
export function send(port: number, r: WireRequest, timeoutMs: number): Promise<WireReply> {
  const head = [`${r.method} ${r.target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close']
  const lines: Uint8Array[] = [Buffer.from(head.join('\r\n') + '\r\n', 'latin1')]
  for (const [name, value] of r.headers)
    lines.push(Buffer.concat([Buffer.from(`${name}: `, 'latin1'), wtf8(value), Buffer.from('\r\n')]))
  if (r.body) lines.push(Buffer.from(`Content-Length: ${r.body.length}\r\n`))
  lines.push(Buffer.from('\r\n'))
  if (r.body) lines.push(r.body)
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    const chunks: Uint8Array[] = []
    let done = false
    const finish = (err?: Error) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      const ms = performance.now() - started
      const all = Buffer.concat(chunks)
      if (err && !all.length) return reject(err)
      try {
        resolve({ ...parseReply(all), ms })
      } catch (e) {
        reject(
          new Error(
            `${(e as Error).message}${err ? ` (${err.message})` : ''}; ${all.length} bytes: ${JSON.stringify(all.subarray(0, 300).toString('latin1'))}`
          )
        )
      }
    }
    const timer = setTimeout(() => finish(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs)
    socket.on('data', (c) => chunks.push(c))
    socket.on('end', () => finish())
    socket.on('close', () => finish())
    // A server may answer (413, 400) and close before reading all of a large body: keep the answer.
    socket.on('error', (e) => finish(e))
    socket.write(Buffer.concat(lines))
  })
}

function parseReply(all: Buffer): Omit<WireReply, 'ms'> {
  const end = all.indexOf('\r\n\r\n')
  if (end < 0) throw new Error('the connection closed without a complete response head')
  const [statusLine, ...headerLines] = all.subarray(0, end).toString('latin1').split('\r\n')
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)
  if (!m) throw new Error(`not an HTTP status line: ${JSON.stringify(statusLine)}`)
  const headers: Record<string, string> = {}
  for (const line of headerLines) {
    const i = line.indexOf(':')
    const name = line.slice(0, i).trim().toLowerCase()
    const value = line.slice(i + 1).trim()
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`
  }
  let body = all.subarray(end + 4)
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) body = dechunk(body)
  else if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length'])
    if (body.length < length) throw new Error(`the body ended after ${body.length} of ${length} bytes`)
    body = body.subarray(0, length)
  }
  return { status: Number(m[1]), headers, text: body.toString('utf8') }
}

function dechunk(b: Buffer): Buffer {
  const parts: Buffer[] = []
  let at = 0
  for (;;) {
    const eol = b.indexOf('\r\n', at)
    if (eol < 0) throw new Error('a chunked body ended before its last chunk')
    const size = parseInt(b.subarray(at, eol).toString('latin1'), 16)
    if (Number.isNaN(size)) throw new Error('a malformed chunk size')
    if (size === 0) return Buffer.concat(parts)
    if (eol + 2 + size > b.length) throw new Error('a chunked body ended inside a chunk')
    parts.push(b.subarray(eol + 2, eol + 2 + size))
    at = eol + 2 + size + 2
  }
}
