import type { Params } from '@feathersjs/feathers'
import type pg from 'pg'
import { assertCan, assertScope, hiddenFields } from '../../core/auth/access.ts'
import { isAdmin, requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import { transaction } from '../../core/db/index.ts'
import type { App, Platform } from '../../core/declarations.ts'
import { problems } from '../../core/errors/index.ts'
import { exportColumns } from '../../core/modules/derive/columns.ts'
import { assertValid, isUuid, validationError } from '../../core/validation.ts'
import { recordsPath } from '../records/records.shared.ts'
import * as repo from './exports.repository.ts'
import { tooManyPdfRows } from './exports.render.ts'
import { exportDataValidator, type ExportData, type ExportJob } from './exports.schema.ts'
import { exportContentTypes, exportsPath } from './exports.shared.ts'

interface ExportParams extends Params {
  principal?: Principal
  /** Set by the idempotency hook: stores the response inside the write's own transaction. */
  idempotency?: { complete(db: pg.PoolClient, body: unknown): Promise<void> }
}

/** The file name a download is offered under, e.g. `incident-export-2026-11-22.csv`. */
export const exportFileName = (row: repo.ExportRow) =>
  `${row.module_key}-export-${(row.finished_at ?? row.created_at).slice(0, 10)}.${row.format}`

/**
 * Export jobs. `create` checks everything a render will need (rights, module, filters,
 * columns), records the request with the caller's rights, and enqueues `exports.render`
 * with ids only. `get` reports the state machine: queued (with its queue position) →
 * running (rows done / total) → succeeded (a signed download URL until the file
 * expires) → expired; or failed, with a problem.
 */
export class ExportsService {
  constructor(
    private readonly app: App,
    private readonly platform: Platform & { enqueue(name: string, data: Record<string, unknown>): Promise<void> }
  ) {}

  async create(data: ExportData, params: ExportParams) {
    const principal = requirePrincipal(params, 'An exports call')
    assertValid<ExportData>(exportDataValidator, data)
    const module = this.platform.tenants.module(principal.tenantId, data.moduleKey)
    assertCan(principal, module, 'export')
    assertCan(principal, module, 'read')
    const hidden = hiddenFields(principal, module)
    const forbidden = (data.columns ?? []).filter((c) => hidden.has(c))
    if (forbidden.length) {
      throw problems.forbidden(
        'field.forbidden',
        `This credential may not read field "${forbidden[0]}" of module "${module.definition.key}", so it cannot be exported.`,
        { field: forbidden[0] }
      )
    }
    try {
      exportColumns(module, { hidden, only: data.columns })
    } catch (err) {
      throw validationError([{ pointer: '/columns', field: 'columns', code: 'enum', detail: (err as Error).message }])
    }
    // The list endpoint validates the filters (and the row rule applies) exactly as it will for the render.
    const { total } = await this.app
      .service(recordsPath)
      .find({ principal, countOnly: true, query: { ...(data.filters ?? {}), moduleKey: module.definition.key } })
    const { pdfMaxRows } = this.platform.config.exports
    if (data.format === 'pdf' && (total ?? 0) > pdfMaxRows) throw tooManyPdfRows(total ?? 0, pdfMaxRows)
    const { pool } = this.platform.db
    // The stored Idempotency-Key response commits with the job's row, or neither does.
    const out = await transaction(pool, async (client) => {
      const row = await repo.insertExport(client, {
        tenantId: principal.tenantId,
        moduleKey: module.definition.key,
        format: data.format,
        filters: data.filters ?? {},
        columns: data.columns ?? null,
        options: { csvBom: data.csvBom ?? false, values: data.values ?? (data.format === 'pdf' ? 'labels' : 'keys') },
        principal
      })
      const out = await this.present(row)
      await params.idempotency?.complete(client, out)
      return out
    })
    const id = out.id
    // Agenda writes its job on its own connection, so only after the commit (the job must find the row).
    // Should that fail, the export is marked failed rather than left queued with no job to run it.
    await this.platform.enqueue('exports.render', { tenantId: principal.tenantId, exportId: id }).catch(async (err) => {
      await repo
        .markFailed(pool, principal.tenantId, id, {
          status: 500,
          code: 'export.failed',
          detail: 'The export could not be queued; nothing was stored. Start a new one.'
        })
        .catch(() => undefined)
      throw err
    })
    return out
  }

  async get(id: string, params: ExportParams) {
    const principal = requirePrincipal(params, 'An exports call')
    const row = isUuid(id) ? await repo.selectExport(this.platform.db.pool, principal.tenantId, id) : undefined
    // Exports are their requester's (and the tenant admins').
    if (!row || (row.principal.actor.id !== principal.actor.id && !isAdmin(principal)))
      throw problems.notFound('export.not_found', `No export ${id} that this credential can see.`)
    assertScope(principal, 'exports:read', row.module_key)
    return this.present(row)
  }

  /** The job as `exportJobSchema` (exports.schema.ts) describes it. */
  private async present(row: repo.ExportRow): Promise<ExportJob> {
    const out: ExportJob = {
      id: row.id,
      moduleKey: row.module_key,
      format: row.format,
      status: row.status,
      filters: row.filters,
      columns: row.columns,
      values: row.options.values ?? 'keys',
      progress: { rowsDone: row.rows_done, rowsTotal: row.rows_total },
      queuePosition: row.queue_position ?? null,
      attempts: row.attempts,
      createdAt: row.created_at,
      startedAt: row.started_at,
      finishedAt: row.finished_at,
      expiresAt: row.expires_at,
      links: { self: `/${exportsPath}/${row.id}` }
    }
    if (row.status === 'succeeded' && row.file_key) {
      out.file = { name: exportFileName(row), contentType: exportContentTypes[row.format], size: Number(row.file_size) }
      out.download = (await this.platform.storage.signDownload({
        key: row.file_key,
        contentType: exportContentTypes[row.format],
        fileName: exportFileName(row),
        expiresAt: new Date(
          Math.min(Date.now() + this.platform.config.attachments.downloadUrlSeconds * 1000, Date.parse(row.expires_at!))
        )
      })) as ExportJob['download']
    }
    if (row.status === 'failed') out.problem = row.problem as ExportJob['problem']
    return out
  }
}
