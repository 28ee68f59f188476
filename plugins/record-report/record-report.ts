import type { IncomingMessage } from 'node:http'
import accepts from 'accepts'
import type { HookContext, NextFunction } from '@feathersjs/feathers'
import { hiddenFields } from '../../core/auth/access.ts'
import type { Principal } from '../../core/auth/principal.ts'
import type { App } from '../../core/declarations.ts'
import type { Plugin } from '../../core/plugin.ts'
import { recordsPath } from '../records/records.shared.ts'
import { describeRecordReport, recordReportType } from './record-report.shared.ts'

/**
 * The client prefers the PDF to JSON (`Accept: application/pdf`, also beside a wildcard or
 * with JSON at a lower q); a wildcard alone, no Accept or anything else is JSON. The
 * negotiation is the one Koa's `ctx.accepts` uses (the `accepts` package).
 */
export function wantsReport(accept: string | undefined): boolean {
  if (!accept) return false
  return (
    accepts({ headers: { accept } } as IncomingMessage).type(['application/json', recordReportType]) ===
    recordReportType
  )
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
    const params = context.params as {
      provider?: string
      principal?: Principal
      headers?: Record<string, string | undefined>
    }
    context.http = { ...context.http, headers: { ...context.http?.headers, Vary: 'Accept' } }
    if (!params.provider || !params.principal || !wantsReport(params.headers?.accept)) return
    const record = context.result
    const principal = params.principal
    const module = platform.tenants.module(principal.tenantId, record.moduleKey)
    const hidden = hiddenFields(principal, module)
    const names = await platform.users.names(
      principal.tenantId,
      module.definition.fields.filter((f) => f.type === 'user' && !hidden.has(f.key)).map((f) => record.payload[f.key])
    )
    const { renderRecordReport } = await import('./record-report.render.ts')
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
  dependsOn: ['records', 'exports'],
  configure(app) {
    app.service(recordsPath).hooks({ around: { get: [recordReportHook(app)] } })
  },
  describe: describeRecordReport
}
