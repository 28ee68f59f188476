import { createWriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { finished } from 'node:stream/promises'
import { hiddenFields } from '../../core/auth/access.ts'
import type { App, Platform } from '../../core/declarations.ts'
import { ApiError, problemFields } from '../../core/errors/index.ts'
import { render } from '../../core/exports/render.ts'
import { exportKey } from '../../core/storage/driver.ts'
import type { JobContext } from '../../core/jobs/index.ts'
import type { Lease } from '../../core/limits/limiter.ts'
import { logger } from '../../core/logger.ts'
import { exportColumns, summaryExportColumns } from '../../core/modules/derive/columns.ts'
import { isUuid } from '../../core/validation.ts'
import { recordsPath, type RecordPage } from '../records/records.shared.ts'
import * as repo from './exports.repository.ts'
import { exportContentTypes } from './exports.shared.ts'

/** The list filters as label/value pairs for the report header. */
function describeFilters(filters: Record<string, unknown>): Array<[string, string]> {
  const out: Array<[string, string]> = []
  for (const [k, v] of Object.entries(filters)) {
    if (k === 'payload' && v && typeof v === 'object') {
      for (const [field, cond] of Object.entries(v as Record<string, unknown>)) {
        if (typeof cond === 'string') out.push([field, cond])
        else for (const [op, value] of Object.entries(cond as Record<string, string>)) out.push([`${field} ${op}`, value])
      }
    } else out.push([k, String(v)])
  }
  return out
}

/**
 * `exports.render`: runs one export with the requester's rights as recorded. It waits
 * (status queued, in creation order) for one of the tenant's concurrent-export slots,
 * reads the records page by page through the records service (same filters, row rule
 * and hidden fields as the list endpoint), streams them into the renderer and stores
 * the file. Safe to run again: a run whose process died is picked up when its lock
 * expires, counted as another attempt, and rendered from the start.
 */
export async function renderExport(app: App, platform: Platform, data: { tenantId?: unknown; exportId?: unknown }, job: JobContext) {
  const tenantId = String(data.tenantId)
  const id = String(data.exportId)
  const { pool } = platform.db
  const o = platform.config.exports
  let row = await repo.selectExport(pool, tenantId, id)
  if (!row || (row.status !== 'queued' && row.status !== 'running')) return { skipped: row?.status ?? 'missing' }
  if (row.attempts >= o.maxAttempts) {
    await repo.markFailed(pool, tenantId, id, { status: 500, code: 'export.attempts_exhausted', detail: `The export was started ${row.attempts} times without finishing.` })
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
      await platform.enqueue('exports.render', { tenantId, exportId: id }, { delayMs: Math.min(1000 * (1 + Math.floor(ahead / limit)), 30_000) })
      return { waiting: ahead }
    }
    lease = slot.lease
  }
  const temp = join(tmpdir(), `records-export-${tenantId}-${id}.${row.format}`)
  const records = app.service(recordsPath)
  try {
    const module = platform.tenants.module(tenantId, row.module_key)
    const principal = row.principal
    const query = { ...row.filters, moduleKey: row.module_key }
    const { total } = await records.find({ principal, countOnly: true, query })
    row = (await repo.markRunning(pool, tenantId, id, total ?? 0)) ?? row
    const hidden = hiddenFields(principal, module)
    // User ids read as names: looked up page by page, each id once per export.
    const names = new Map<string, string>()
    const wording = { hidden, values: row.options.values ?? 'keys', userName: (id: string) => names.get(id) }
    // Without chosen columns, a PDF shows the module's summary (a page fits 8 columns); CSV and XLSX carry them all.
    const summary = !row.columns && row.format === 'pdf'
    const columns = summary ? summaryExportColumns(module, wording) : exportColumns(module, { ...wording, only: row.columns ?? undefined })
    const userFields = module.definition.fields.filter((f) => f.type === 'user' && !hidden.has(f.key)).map((f) => f.key)
    const looked = new Set<string>()
    const nameUsers = async (items: RecordPage['items']) => {
      const ids = new Set<string>()
      for (const r of items) {
        for (const k of userFields) {
          const v = (r.payload as Record<string, unknown>)[k]
          if (typeof v === 'string' && isUuid(v) && !looked.has(v)) ids.add(v)
        }
      }
      if (!ids.size) return
      for (const id of ids) looked.add(id)
      for (const [id, name] of await platform.users.names(tenantId, ids)) names.set(id, name)
    }
    let done = 0
    let reported = Date.now()
    const page = (cursor: string | null) => {
      const p = records.find({ principal, query: { ...query, limit: o.pageSize, ...(cursor ? { cursor } : {}) } })
      // A page fetched ahead for a render that has already failed must not become an unhandled rejection.
      p.catch(() => undefined)
      return p
    }
    async function* rows() {
      // The next page is read while the current one is rendered: two pages in memory at most.
      let next: Promise<RecordPage> | undefined = page(null)
      while (next) {
        const current: RecordPage = await next
        next = current.nextCursor ? page(current.nextCursor) : undefined
        await nameUsers(current.items)
        for (const r of current.items) {
          yield { number: r.number, state: r.state, createdAt: r.createdAt, updatedAt: r.updatedAt, createdBy: r.createdBy, updatedBy: r.updatedBy, externalRef: r.externalRef ?? null, payload: r.payload as Record<string, unknown> }
        }
        done += current.items.length
        if (Date.now() - reported > 500) {
          reported = Date.now()
          await repo.setProgress(pool, tenantId, id, done)
          await job.touch()
          await lease?.extend(lockMs)
        }
      }
    }
    const out = createWriteStream(temp)
    const tenant = platform.tenants.get(tenantId)!
    const result = await render(
      row.format,
      {
        title: `${module.definition.title} export`,
        tenantName: tenant.name,
        moduleTitle: module.definition.title,
        filters: describeFilters(row.filters),
        generatedAt: new Date(),
        columns,
        rows: rows(),
        csvBom: row.options.csvBom,
        columnNote: summary ? "the module's summary columns (pass columns to choose others; the CSV and XLSX exports contain all columns)" : undefined
      },
      out
    )
    if (!out.writableFinished) await finished(out)
    const key = exportKey(tenantId, id)
    const { size } = await platform.storage.putFile(key, temp, exportContentTypes[row.format])
    await repo.markSucceeded(pool, tenantId, id, { rows: result.rows, key, size, fileHours: o.fileHours })
    return { rows: result.rows, size }
  } catch (err) {
    const problem = err instanceof ApiError ? problemFields(err) : { status: 500, code: 'export.failed', detail: 'The export could not be produced; nothing was stored. Start a new one, and quote the export id if it fails again.' }
    if (!(err instanceof ApiError)) logger.error('export failed', { tenantId, exportId: id, error: (err as Error)?.stack ?? String(err) })
    await repo.markFailed(pool, tenantId, id, problem)
    return { failed: problem.code as string }
  } finally {
    await lease?.release().catch(() => undefined)
    await rm(temp, { force: true })
  }
}

/** `exports.purge`: finished exports past their expiry lose their file and become `expired`. */
export async function purgeExpiredExports(platform: Platform): Promise<number> {
  const due = await repo.expiredFiles(platform.db.pool)
  for (const e of due) {
    await platform.storage.delete(e.file_key)
    await repo.markExpired(platform.db.pool, e.tenant_id, e.id)
  }
  return due.length
}
