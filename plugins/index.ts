import type { Plugin } from '../core/plugin.ts'
import { apiDocs } from './api-docs/api-docs.ts'
import { attachmentsPlugin } from './attachments/attachments.ts'
import { auditLog } from './audit-log/audit-log.ts'
import { bulkPlugin } from './bulk/bulk.ts'
import { exportsPlugin } from './exports/exports.ts'
import { idempotencyPlugin } from './idempotency/idempotency.ts'
import { me } from './me/me.ts'
import { modules } from './modules/modules.ts'
import { recordReportPlugin } from './record-report/record-report.ts'
import { recordsPlugin } from './records/records.ts'
import { settings } from './settings/settings.ts'
import { tokensPlugin } from './tokens/tokens.ts'

/** Every feature, in the order it is configured: the one list core receives (bin/server.ts, bin/records.js, the tests). */
export const plugins: readonly Plugin[] = [
  recordsPlugin,
  bulkPlugin,
  attachmentsPlugin,
  exportsPlugin,
  recordReportPlugin,
  idempotencyPlugin,
  { name: 'modules', configure: modules },
  { name: 'audit-log', configure: auditLog },
  tokensPlugin,
  { name: 'me', configure: me },
  { name: 'settings', configure: settings },
  { name: 'api-docs', configure: apiDocs }
]
