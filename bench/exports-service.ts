/**
 * The client side of one export through the service (bench/exports.ts): start it over
 * `POST /api/v1/exports` and poll `GET /api/v1/exports/{id}` until it succeeds (a `failed` or
 * `expired` status, or a stalled job, throws); later, download the file from its signed URL
 * and check it: a CSV has one line per row plus the header, an XLSX is a zip (`PK\x03\x04`),
 * a PDF starts with `%PDF-` and ends with `%%EOF`. Downloading is a separate step so that the
 * benchmark can read the service's peak RSS of rendering before that of serving the files.
 * The baseline CSV is compared to the service's with `compareFiles`.
 */
import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { once } from 'node:events'
import { finished } from 'node:stream/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { createInterface } from 'node:readline'

export type Format = 'csv' | 'xlsx' | 'pdf'

export interface ServiceExport {
  id: string
  rows: number
  /** POST sent → a poll saw `succeeded` (includes queueing, the count query, storing the file, and up to one poll interval). */
  wallMs: number
  /** The job's own `finishedAt − startedAt` (rendering and storing; server clock, ms precision). */
  jobMs: number
  /** `createdAt` → `startedAt`: the wait for Agenda to pick the job up. */
  queueMs: number
  polls: number
  fileSize: number
}

interface ExportJson {
  id: string
  status: string
  progress: { rowsDone: number; rowsTotal: number | null }
  createdAt: string
  startedAt: string | null
  finishedAt: string | null
  file?: { size: number }
  download?: { url: string }
  problem?: unknown
}

export interface Target {
  url: string
  token: string
}

async function api(
  target: Target,
  path: string,
  init: RequestInit = {}
): Promise<{ status: number; json: ExportJson }> {
  const res = await fetch(target.url + path, {
    ...init,
    headers: { ...(init.headers ?? {}), authorization: `Bearer ${target.token}` }
  })
  const text = await res.text()
  try {
    return { status: res.status, json: JSON.parse(text) }
  } catch {
    throw new Error(`${init.method ?? 'GET'} ${path} answered ${res.status} with non-JSON: ${text.slice(0, 300)}`)
  }
}

/** The export as `GET /api/v1/exports/{id}` shows it (a fresh download URL once it has succeeded). */
async function exportJson(target: Target, id: string): Promise<ExportJson> {
  const r = await api(target, `/api/v1/exports/${id}`)
  if (r.status !== 200)
    throw new Error(`GET /api/v1/exports/${id} answered ${r.status}: ${JSON.stringify(r.json).slice(0, 500)}`)
  return r.json
}

/** Runs one export of the tenant's `moduleKey` records to completion (no download); it must report `expectRows` rows. */
export async function serviceExport(
  target: Target,
  moduleKey: string,
  format: Format,
  expectRows: number,
  pollMs = 100
): Promise<ServiceExport> {
  const t0 = performance.now()
  const started = await api(target, '/api/v1/exports', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ moduleKey, format })
  })
  if (started.status !== 202 || started.json.status !== 'queued')
    throw new Error(`POST /api/v1/exports answered ${started.status}: ${JSON.stringify(started.json).slice(0, 500)}`)
  const id = started.json.id
  let job = started.json
  let polls = 0
  let lastChange = Date.now()
  let lastDone = -1
  while (job.status !== 'succeeded') {
    if (job.status === 'failed' || job.status === 'expired')
      throw new Error(`export ${id} (${format}) ${job.status}: ${JSON.stringify(job.problem)}`)
    if (job.progress.rowsDone !== lastDone) [lastDone, lastChange] = [job.progress.rowsDone, Date.now()]
    // Progress is written every ~0.5 s while reading; a minute without any is a stuck job. Once every row is read
    // the file is rendered from the stored chunks without progress: at a million rows that alone can pass a minute.
    const rendering = job.progress.rowsTotal !== null && job.progress.rowsDone === job.progress.rowsTotal
    const stallMs = rendering ? 600_000 : 60_000
    if (Date.now() - lastChange > stallMs)
      throw new Error(
        `export ${id} (${format}) made no progress for ${stallMs / 1000} s (status ${job.status}, ${job.progress.rowsDone} rows done)`
      )
    await sleep(pollMs)
    job = await exportJson(target, id)
    polls++
  }
  const wallMs = performance.now() - t0
  if (job.progress.rowsDone !== expectRows)
    throw new Error(`export ${id} (${format}) says ${job.progress.rowsDone} rows done, expected ${expectRows}`)
  if (!job.download?.url || !job.file)
    throw new Error(`export ${id} (${format}) succeeded without a file or download URL`)
  return {
    id,
    rows: job.progress.rowsDone,
    wallMs,
    jobMs: Date.parse(job.finishedAt!) - Date.parse(job.startedAt!),
    queueMs: Date.parse(job.startedAt!) - Date.parse(job.createdAt),
    polls,
    fileSize: job.file.size
  }
}

/** The header line of a finished CSV export: reads the download only up to its first CRLF. */
export async function csvHeader(target: Target, id: string): Promise<string> {
  const job = await exportJson(target, id)
  const res = await fetch(job.download!.url)
  if (res.status !== 200 || !res.body) throw new Error(`download of export ${id} answered ${res.status}`)
  const reader = res.body.getReader()
  let head = Buffer.alloc(0)
  try {
    while (!head.includes('\r\n')) {
      const { done, value } = await reader.read()
      if (done) break
      head = Buffer.concat([head, value])
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
  const end = head.indexOf('\r\n')
  if (end < 0) throw new Error(`export ${id}: no CRLF-terminated header line`)
  return head.subarray(0, end).toString('utf8')
}

/**
 * Downloads a finished export from its signed URL into `saveTo` and checks it: the size the
 * job reported; CSV: `expectRows` + 1 lines; XLSX: a zip; PDF: `%PDF-` … `%%EOF`.
 */
export async function downloadAndCheck(
  target: Target,
  e: ServiceExport,
  format: Format,
  saveTo: string
): Promise<{ downloadMs: number }> {
  const job = await exportJson(target, e.id)
  const d0 = performance.now()
  const got = await download(job.download!.url, saveTo, format === 'csv')
  const downloadMs = performance.now() - d0
  const id = e.id
  if (got.bytes !== e.fileSize)
    throw new Error(`export ${id} (${format}): downloaded ${got.bytes} bytes, the job says ${e.fileSize}`)
  const head = got.head.toString('latin1')
  if (format === 'csv' && got.lines !== e.rows + 1)
    throw new Error(`export ${id} (csv): ${got.lines} lines, expected ${e.rows} rows + 1 header`)
  if (format === 'xlsx' && !(got.bytes > 0 && head.startsWith('PK\x03\x04')))
    throw new Error(`export ${id} (xlsx) is not a zip file (starts ${JSON.stringify(head.slice(0, 8))})`)
  if (format === 'pdf' && !(head.startsWith('%PDF-') && got.tail.toString('latin1').includes('%%EOF')))
    throw new Error(`export ${id} (pdf) does not look like a PDF (starts ${JSON.stringify(head.slice(0, 8))})`)
  return { downloadMs }
}

/** Streams a download to `path`; counts CSV records (line feeds outside quotes) on the way. */
async function download(
  url: string,
  path: string,
  countLines: boolean
): Promise<{ bytes: number; lines: number; head: Buffer; tail: Buffer }> {
  const res = await fetch(url)
  if (res.status !== 200 || !res.body)
    throw new Error(`download ${url} answered ${res.status}: ${(await res.text()).slice(0, 300)}`)
  const out = createWriteStream(path)
  let bytes = 0
  let lines = 0
  let quoted = false
  let head = Buffer.alloc(0)
  let tail = Buffer.alloc(0)
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    const b = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    bytes += b.length
    if (head.length < 16) head = Buffer.concat([head, b]).subarray(0, 16)
    tail = Buffer.concat([tail, b]).subarray(-1024)
    if (countLines) {
      for (let i = 0; i < b.length; i++) {
        const c = b[i]
        if (c === 0x22) quoted = !quoted
        else if (c === 0x0a && !quoted) lines++
      }
    }
    if (!out.write(b)) await once(out, 'drain')
  }
  out.end()
  await finished(out)
  return { bytes, lines, head, tail }
}

const sha256 = async (path: string) => {
  const h = createHash('sha256')
  for await (const chunk of createReadStream(path)) h.update(chunk)
  return h.digest('hex')
}

/** `identical`, or where two text files first differ (1-based line, both lines cut to 200 characters). */
export async function compareFiles(
  a: string,
  b: string
): Promise<{ identical: boolean; line?: number; a?: string; b?: string }> {
  if ((await sha256(a)) === (await sha256(b))) return { identical: true }
  const ia = createInterface({ input: createReadStream(a), crlfDelay: Infinity })[Symbol.asyncIterator]()
  const ib = createInterface({ input: createReadStream(b), crlfDelay: Infinity })[Symbol.asyncIterator]()
  try {
    for (let line = 1; ; line++) {
      const [x, y] = await Promise.all([ia.next(), ib.next()])
      if (x.done && y.done)
        return { identical: false, line, a: '(same lines; line endings or final bytes differ)', b: '' }
      if (x.done || y.done || x.value !== y.value)
        return {
          identical: false,
          line,
          a: x.done ? '(end of file)' : x.value.slice(0, 200),
          b: y.done ? '(end of file)' : y.value.slice(0, 200)
        }
    }
  } finally {
    await ia.return?.()
    await ib.return?.()
  }
}
