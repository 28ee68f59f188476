import { randomUUID } from 'node:crypto'
import { createWriteStream, type WriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { finished } from 'node:stream/promises'
import { hiddenFields } from '../../core/auth/access.ts'
import type { App, Platform } from '../../core/declarations.ts'
import { ApiError, problemFields } from '../../core/errors/index.ts'
import { assemble, chunkFormat, tooManyPdfRows, type ChunkFormat, type RenderedPiece } from './exports.render.ts'
import { exportKey } from '../../core/storage/driver.ts'
import { handBack, type JobContext } from '../../core/jobs/index.ts'
import type { Lease } from '../../core/limits/limiter.ts'
import { logger } from '../../core/logger.ts'
import { span } from '../../core/telemetry/tracing.ts'
import {
  exportColumns,
  summaryExportColumns,
  type ExportColumn,
  type ExportRecord
} from '../../core/modules/derive/columns.ts'
import { isUuid } from '../../core/validation.ts'
import { recordsPath, type RecordPage } from '../records/records.shared.ts'
import * as repo from './exports.repository.ts'
import { exportContentTypes } from './exports.shared.ts'
import { systemScope, tenantPool } from '../../core/db/tenant-scope.ts'

/** The list filters as label/value pairs for the report header. */
function describeFilters(filters: Record<string, unknown>): Array<[string, string]> {
  const out: Array<[string, string]> = []
  for (const [k, v] of Object.entries(filters)) {
    if (k === 'payload' && v && typeof v === 'object') {
      for (const [field, cond] of Object.entries(v as Record<string, unknown>)) {
        if (typeof cond === 'string') out.push([field, cond])
        else
          for (const [op, value] of Object.entries(cond as Record<string, string>)) out.push([`${field} ${op}`, value])
      }
    } else out.push([k, String(v)])
  }
  return out
}

/** Rows a chunk gathers at least (pages of exports.pageSize until then): a commit each, and what a crash may cost in reading again. */
const minChunkRows = 500

/**
 * The stored chunks as pieces of the file, in order. A chunk committed before chunks held encoded
 * rows (migration 003) holds its records as JSON: encoded here, as the run that read it would now.
 */
async function* storedPieces(
  chunks: AsyncIterable<repo.StoredChunk>,
  format: ChunkFormat,
  columns: ExportColumn[]
): AsyncGenerator<RenderedPiece> {
  let first = 0
  for await (const c of chunks) {
    yield c.encoded
      ? c
      : { data: await format.encode(columns, JSON.parse(c.data) as ExportRecord[], first), rows: c.rows }
    first += c.rows
  }
}

/** A page's rows as its format encodes them, and their UTF-8. */
interface EncodedPage {
  text: string
  bytes: Buffer
}

const encodedPage = (text: string): EncodedPage => ({ text, bytes: Buffer.from(text, 'utf8') })

/** Thrown inside a run to stop it where it is: the export was handed back, or another run took it over. */
class RunStopped extends Error {}

/**
 * `exports.render`: runs one export with the requester's rights as recorded. It waits
 * (status queued, in creation order) for one of the tenant's concurrent-export slots, then
 * takes the export for this run (a lease on its row, renewed with every chunk). It reads the
 * records page by page through the records service (same filters, row rule and hidden fields
 * as the list endpoint), encodes each page as the file will hold it (exports.render.ts,
 * ChunkFormat) and commits the pages as chunks, with the cursor after them and the progress, in
 * one statement. A run that read every row itself has written the file as it went; after a
 * resume (or for a PDF) the file is assembled from the stored chunks once every page is in. The
 * file is then stored; the chunks go with the export's outcome.
 *
 * Resuming: a run whose process died is taken over once its lease lapses (an attempt); a run
 * told to stop (shutdown) commits its chunk and hands the export back at once (not an attempt).
 * Either way the next run goes on from the last committed chunk's cursor, never from row 0.
 */
export async function renderExport(
  app: App,
  platform: Platform,
  data: { tenantId?: unknown; exportId?: unknown },
  job: JobContext
) {
  const tenantId = String(data.tenantId)
  const id = String(data.exportId)
  const { pool } = platform.db
  const o = platform.config.exports
  let row = await repo.selectExport(pool, tenantId, id)
  if (!row || (row.status !== 'queued' && row.status !== 'running')) return { skipped: row?.status ?? 'missing' }
  // Not started while the instance stops: given back as it is.
  if (job.signal.aborted) return handBack('instance draining before the export started')
  if (row.attempts >= o.maxAttempts && !row.handed_back) {
    await repo.markFailed(pool, tenantId, id, {
      status: 500,
      code: 'export.attempts_exhausted',
      detail: `The export was started ${row.attempts} times without finishing.`
    })
    return { failed: 'attempts' }
  }
  const lockMs = o.lockSeconds * 1000
  let lease: Lease | undefined
  if (platform.limiter) {
    const limit = platform.limitsFor(tenantId).exportConcurrency
    // First in, first out: an export waits while an older one of its tenant is still queued.
    const ahead = row.status === 'queued' ? await repo.olderQueued(pool, tenantId, id) : 0
    const slot = ahead === 0 ? await platform.limiter.acquire(`exports:${tenantId}`, limit, lockMs) : undefined
    if (!slot?.lease) {
      // It waits off the worker, asking again later (sooner near the head of its tenant's queue): a worker held
      // while waiting let one tenant's backlog hold every worker, and another tenant's export sat queued behind it.
      await platform.enqueue(
        'exports.render',
        { tenantId, exportId: id },
        { delayMs: Math.min(1000 * (1 + Math.floor(ahead / limit)), 30_000) }
      )
      return { waiting: ahead }
    }
    lease = slot.lease
  }
  const runId = randomUUID()
  const temp = join(tmpdir(), `records-export-${tenantId}-${id}-${runId}.${row.format}`)
  const records = app.service(recordsPath)
  let keepAlive: NodeJS.Timeout | undefined
  let out: WriteStream | undefined
  try {
    const claimed = await repo.claimRun(pool, tenantId, id, runId, o.lockSeconds)
    if (!claimed) {
      // Another run's lease has not lapsed yet: it runs, or its process died a moment ago (the job's lock and the
      // export's lease lapse at nearly the same time). Asked again once the lease is over, whichever it was.
      const holdMs = await repo.leaseLeftMs(pool, tenantId, id)
      if (holdMs === undefined) return { skipped: 'finished' }
      await platform.enqueue('exports.render', { tenantId, exportId: id }, { delayMs: holdMs + 250 })
      return { waiting: 'lease', ms: holdMs }
    }
    row = claimed
    const module = platform.tenants.module(tenantId, row.module_key)
    const principal = row.principal
    const query = { ...row.filters, moduleKey: row.module_key }
    if (row.rows_total === null) {
      const { total } = await records.find({ principal, countOnly: true, query })
      await repo.setTotal(pool, tenantId, id, runId, total ?? 0)
      row.rows_total = total ?? 0
    }
    // Rows written since the request was checked can take a PDF past its cap: refused before reading any.
    if (row.format === 'pdf' && row.rows_total > o.pdfMaxRows) throw tooManyPdfRows(row.rows_total, o.pdfMaxRows)
    const last = await repo.lastChunk(pool, tenantId, id)
    // One line per run: which instance took the export, and from which row (0: the first run).
    logger.info('export run', {
      tenantId,
      exportId: id,
      runId,
      fromRow: row.resumed_from,
      chunks: last ? last.seq + 1 : 0,
      attempt: row.attempts
    })
    const hidden = hiddenFields(principal, module)
    const userFields = module.definition.fields.filter((f) => f.type === 'user' && !hidden.has(f.key)).map((f) => f.key)
    // The names of the users this run has met: rows are encoded as they are read, with their users' names.
    const names = new Map<string, string>()
    const looked = new Set<string>()
    /** Looks up the names of the page's users not looked up before in this run; returns them, to store with its chunk. */
    const nameUsers = async (items: readonly ExportRecord[]): Promise<Record<string, string>> => {
      const ids = new Set<string>()
      for (const r of items) {
        for (const k of userFields) {
          const v = r.payload[k]
          if (typeof v === 'string' && isUuid(v) && !looked.has(v)) ids.add(v)
        }
      }
      if (!ids.size) return {}
      for (const id of ids) looked.add(id)
      const found = await platform.users.names(tenantId, ids)
      for (const [k, v] of found) names.set(k, v)
      return Object.fromEntries(found)
    }
    const wording = { hidden, values: row.options.values ?? 'keys', userName: (id: string) => names.get(id) }
    // Without chosen columns, a PDF shows the module's summary (a page fits 8 columns); CSV and XLSX carry them all.
    const summary = !row.columns && row.format === 'pdf'
    const columns = summary
      ? summaryExportColumns(module, wording)
      : exportColumns(module, { ...wording, only: row.columns ?? undefined })
    const format = await chunkFormat(row.format)
    const fileInput = {
      title: `${module.definition.title} export`,
      tenantName: platform.tenants.get(tenantId)!.name,
      moduleTitle: module.definition.title,
      filters: describeFilters(row.filters),
      generatedAt: new Date(),
      columns,
      csvBom: row.options.csvBom,
      maxRows: o.pdfMaxRows,
      columnNote: summary
        ? "the module's summary columns (pass columns to choose others; the CSV and XLSX exports contain all columns)"
        : undefined
    }
    // A run that reads every row itself writes them to the file as it commits them (CSV, XLSX): the same pieces
    // in the same order as assembling from the chunks gives, without reading them back. After a resume, or for
    // a PDF, the file is assembled from the chunks once all are in.
    out = createWriteStream(temp)
    // Open for the whole read now: a failed open or write (a full disk) between the renderers' drain waits must not
    // be an unhandled 'error' event (a crash). The error stays on the stream: waiting for its finish rejects with it,
    // and the run fails then, storing nothing.
    out.on('error', (err) => logger.warn('export file write failed', { tenantId, exportId: id, error: err.message }))
    const direct = !last && format.open ? format.open(fileInput, out) : undefined
    let touched = Date.now()
    // Pages past pagination.maxLimit: the export's own reads (exports.pageSize), not a page a client may ask for.
    const page = (cursor: string | null) => {
      const p = records.find({
        principal,
        pageLimit: o.pageSize,
        query: { ...query, ...(cursor ? { cursor } : {}) }
      })
      // A page fetched ahead for a run that has already stopped must not become an unhandled rejection.
      p.catch(() => undefined)
      return p
    }
    // The last chunk holds the last page (no cursor after it): everything is read.
    let seq = last ? last.seq + 1 : 0
    let next: Promise<RecordPage> | undefined = !last
      ? page(null)
      : last.cursor_after
        ? page(last.cursor_after)
        : undefined
    // A chunk gathers pages up to chunkRows rows, or for a third of the lease (which its commit renews).
    const chunkRows = Math.max(o.pageSize, minChunkRows)
    // Each page is encoded as it comes (CSV lines, SpreadsheetML rows); a chunk stores its pages' text.
    let first = last?.rows_through ?? 0
    let rows = 0
    let pieces: Array<Promise<EncodedPage>> = []
    let chunkNames: Record<string, string> = {}
    let committed = Date.now()
    let inFlight: Promise<number | undefined> | undefined
    /** Waits for the chunk in flight; the rows done once it is in. */
    const settled = async () => {
      if (!inFlight) return undefined
      const done = await inFlight
      inFlight = undefined
      if (done === undefined) throw new RunStopped('another run took the export over')
      return done
    }
    while (next) {
      const current: RecordPage = await next
      // The next page is read while this one is encoded and committed: two pages in memory at most.
      next = current.nextCursor ? page(current.nextCursor) : undefined
      // A record as the list gives it has every field the columns read (ExportRecord).
      const items = current.items as unknown as ExportRecord[]
      Object.assign(chunkNames, await nameUsers(items))
      // An XLSX page is deflated on zlib's thread meanwhile; a failure surfaces with its chunk's commit.
      // Made UTF-8 at once (reading it flattens the text): a CSV page's text is a rope of ~50,000 strings until read
      // flat, and held until its commit, after the commit before it and while the next page's rows were parsed, it
      // outlived young-generation collections and was copied and promoted with all its strings.
      const piece = Promise.resolve(format.encode(columns, items, first + rows)).then(encodedPage)
      piece.catch(() => undefined)
      pieces.push(piece)
      rows += items.length
      if (Date.now() - touched > 500) {
        touched = Date.now()
        await job.touch()
        await lease?.extend(lockMs)
      }
      if (next && rows < chunkRows && Date.now() - committed < lockMs / 3 && !job.signal.aborted) continue
      // Committed without waiting for the WAL flush (one fsync per chunk bounded an export by the disk): a crash may
      // lose the last moment's chunks, whose pages the next run reads again; a chunk and its cursor go together.
      const chunk = {
        tenantId,
        id,
        runId,
        seq,
        cursorAfter: current.nextCursor ?? null,
        rows,
        pieces,
        names: chunkNames,
        leaseSeconds: o.lockSeconds
      }
      pieces = []
      // One commit in flight, in order: the next pages are encoded while PostgreSQL stores this chunk.
      await settled()
      inFlight = span('export.chunk', { 'export.id': id, 'export.chunk': seq, 'export.rows': rows }, () =>
        Promise.all(chunk.pieces).then(async (pages) => {
          const text = pages.length === 1 ? pages[0].text : pages.map((p) => p.text).join('')
          // UTF-8 made once, for the file and, deflated on zlib's thread meanwhile (unless compressed already), for the chunk.
          const data = pages.length === 1 ? pages[0].bytes : Buffer.concat(pages.map((p) => p.bytes))
          const [done] = await Promise.all([
            (format.compressed
              ? Promise.resolve({ text: data })
              : repo.deflateChunk(data).then((deflated) => ({ deflated }))
            ).then((stored) => repo.commitChunk(pool, { ...chunk, stored })),
            direct?.write({ data: text, rows: chunk.rows, bytes: data })
          ])
          // The job's lock renewed after the lease the commit renewed: a run killed now has its lock outlive its
          // lease, so whichever instance takes the job over finds the lease lapsed and need not wait for it.
          if (done !== undefined) await job.touch()
          return done
        })
      )
      inFlight.catch(() => undefined)
      seq += 1
      first += rows
      rows = 0
      chunkNames = {}
      committed = Date.now()
      // Stopping: what is committed stays, and the export goes to another instance now.
      if (job.signal.aborted && next) {
        const done = await settled()
        await repo.handBack(pool, tenantId, id, runId)
        logger.info('export handed back', { tenantId, exportId: id, rowsDone: done })
        return handBack(`export handed back after ${done} rows`)
      }
    }
    await settled()
    // Every page is in: the file is assembled from the chunks. That takes seconds for a large XLSX, with no chunk
    // to renew the leases, so a timer keeps the job's lock, the export's lease and the tenant's slot alive meanwhile.
    let fencedOut = false
    keepAlive = setInterval(
      () => {
        void Promise.all([
          job.touch(),
          repo.renewLease(pool, tenantId, id, runId, o.lockSeconds),
          lease?.extend(lockMs)
        ]).then(
          ([, held]) => {
            if (!held) fencedOut = true
          },
          (err) => logger.warn('export lease not renewed', { tenantId, exportId: id, error: (err as Error).message })
        )
      },
      Math.max(100, Math.min(1000, lockMs / 3))
    )
    // A PDF's chunks hold records, and chunks written before chunks were encoded too: their users' names are the
    // ones every chunk looked up. CSV and XLSX chunks of this version need none of them.
    if (row.format === 'pdf' || !(await repo.allEncoded(pool, tenantId, id)))
      for (const [k, v] of await repo.chunkNames(pool, tenantId, id)) names.set(k, v)
    const result = direct
      ? await direct.end()
      : await assemble(row.format, fileInput, storedPieces(repo.chunks(pool, tenantId, id), format, columns), out)
    if (!out.writableFinished) await finished(out)
    // A run that lost its lease while rendering (its chunks may have gone with another run's success) stores nothing;
    // and each run stores under a key of its own, so a fenced-out run racing past this check never overwrites the file
    // the export's row names, and removes its own once it learns it no longer holds the export.
    if (fencedOut) throw new RunStopped('another run took the export over while this one rendered')
    const key = exportKey(tenantId, runId)
    const { size } = await platform.storage.putFile(key, temp, exportContentTypes[row.format])
    if (
      !(await repo.markSucceeded(pool, tenantId, id, runId, { rows: result.rows, key, size, fileHours: o.fileHours }))
    ) {
      await platform.storage.delete(key).catch(() => undefined)
      throw new RunStopped('another run took the export over')
    }
    return { rows: result.rows, size, resumedFrom: row.resumed_from }
  } catch (err) {
    if (err instanceof RunStopped) {
      logger.warn('export run stopped', { tenantId, exportId: id, reason: err.message })
      return { stopped: err.message }
    }
    const problem =
      err instanceof ApiError
        ? problemFields(err)
        : {
            status: 500,
            code: 'export.failed',
            detail:
              'The export could not be produced; nothing was stored. Start a new one, and quote the export id if it fails again.'
          }
    if (!(err instanceof ApiError))
      logger.error('export failed', { tenantId, exportId: id, error: (err as Error)?.stack ?? String(err) })
    await repo.markFailed(pool, tenantId, id, problem, runId)
    return { failed: problem.code as string }
  } finally {
    clearInterval(keepAlive)
    // A run that stopped part-way leaves a half-written file: closed (a write still under way then fails with
    // ERR_STREAM_DESTROYED, to the listener above), then removed.
    if (out && !out.writableFinished) out.destroy()
    await lease?.release().catch(() => undefined)
    await rm(temp, { force: true })
  }
}

/** `exports.purge`: finished exports past their expiry lose their file and become `expired`. */
export async function purgeExpiredExports(platform: Platform): Promise<number> {
  const due = await systemScope('exports.purge', () => repo.expiredFiles(platform.db.pool))
  for (const e of due) {
    await platform.storage.delete(e.file_key)
    await repo.markExpired(tenantPool(platform.db.pool, e.tenant_id), e.tenant_id, e.id)
  }
  return due.length
}
