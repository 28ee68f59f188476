import type { HookContext, NextFunction } from '@feathersjs/feathers'
import { hiddenFields } from '../../core/auth/access.ts'
import type { Principal } from '../../core/auth/principal.ts'
import type { App } from '../../core/declarations.ts'
import type { Plugin } from '../../core/plugin.ts'
import { recordsPath } from '../records/records.shared.ts'
import { recordReportType } from './record-report.shared.ts'

/** The q-value a media range list gives `type` by its exact entry (wildcards count as 0.001, below any named type). */
function quality(accept: string, type: string): number {
  let best = 0
  for (const part of accept.split(',')) {
    const [range, ...params] = part.trim().toLowerCase().split(';')
    const q = Number(params.map((p) => p.trim()).find((p) => p.startsWith('q='))?.slice(2) ?? 1)
    const weight = Number.isFinite(q) ? q : 0
    if (range === type) best = Math.max(best, weight)
    else if (range === '*/*' || range === `${type.split('/')[0]}/*`) best = Math.max(best, Math.min(weight, 0.001))
  }
  return best
}

/** The client named application/pdf and prefers it to JSON (`Accept: application/pdf`, also beside a wildcard). */
export function wantsReport(accept: string | undefined): boolean {
  if (!accept) return false
  const pdf = quality(accept, recordReportType)
  return pdf >= 0.01 && pdf >= quality(accept, 'application/json')
}

/**
 * Around the records service's `get`: the record is read first, by the records service with
 * the caller's own params (authentication, tenancy, row and field rules as for JSON; any refusal
 * stays a problem response), and only then rendered. Internal callers always get the record.
 */
export function recordReportHook(app: App) {
  const platform = app.get('platform')
  return async (context: HookContext, next: NextFunction) => {
    await next()
    const params = context.params as { provider?: string; principal?: Principal; headers?: Record<string, string | undefined> }
    context.http = { ...context.http, headers: { ...context.http?.headers, Vary: 'Accept' } }
    if (!params.provider || !params.principal || !wantsReport(params.headers?.accept)) return
    const record = context.result
    const principal = params.principal
    const module = platform.tenants.module(principal.tenantId, record.moduleKey)
    const hidden = hiddenFields(principal, module)
    const names = await platform.users.names(principal.tenantId, module.definition.fields.filter((f) => f.type === 'user' && !hidden.has(f.key)).map((f) => record.payload[f.key]))
    const { renderRecordReport } = await import('../../core/exports/render-record.ts')
    const pdf = await renderRecordReport({
      record,
      module,
      hidden,
      tenantName: platform.tenants.get(principal.tenantId)?.name ?? principal.tenantId,
      generatedAt: new Date(),
      userName: (id) => names.get(id)
    })
    context.dispatch = pdf
    context.http.headers = {
      ...context.http.headers,
      'Content-Type': recordReportType,
      'Content-Disposition': `inline; filename="${String(record.number).replace(/[^\w.-]/g, '_')}.pdf"`,
      'Cache-Control': 'private, no-store'
    }
  }
}

/** `GET /api/v1/records/{id}` with `Accept: application/pdf`: the record report. */
export const recordReportPlugin: Plugin = {
  name: 'record-report',
  configure(app) {
    app.service(recordsPath).hooks({ around: { get: [recordReportHook(app)] } })
  }
}
