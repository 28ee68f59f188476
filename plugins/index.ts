import type { Plugin } from '../core/plugin.ts'
import { apiDocsPlugin } from './api-docs/api-docs.ts'
import { attachmentsPlugin } from './attachments/attachments.ts'
import { auditLogPlugin } from './audit-log/audit-log.ts'
import { bulkPlugin } from './bulk/bulk.ts'
import { eventsFeedPlugin } from './events-feed/events-feed.ts'
import { exportsPlugin } from './exports/exports.ts'
import { graphqlPlugin } from './graphql/graphql.ts'
import { idempotencyPlugin } from './idempotency/idempotency.ts'
import { mePlugin } from './me/me.ts'
import { modulesPlugin } from './modules/modules.ts'
import { recordReportPlugin } from './record-report/record-report.ts'
import { recordsPlugin } from './records/records.ts'
import { recurrencePlugin } from './recurrence/recurrence.ts'
import { scimPlugin } from './scim/scim.ts'
import { settingsPlugin } from './settings/settings.ts'
import { tokensPlugin } from './tokens/tokens.ts'
import { webhooksPlugin } from './webhooks/webhooks.ts'
import { workspacePlugin } from './workspace/workspace.ts'

/**
 * Every feature, in the order it is migrated, configured and described in the OpenAPI
 * document: the one list core receives (bin/server.ts, bin/records.js, the tests and
 * benchmarks). A plugin comes after those it declares in `dependsOn`; start-up refuses a list
 * where one is missing or later (core/plugin.ts checkDependencies).
 */
export const plugins: readonly Plugin[] = [
  idempotencyPlugin,
  recordsPlugin,
  recurrencePlugin,
  bulkPlugin,
  attachmentsPlugin,
  exportsPlugin,
  recordReportPlugin,
  modulesPlugin,
  auditLogPlugin,
  tokensPlugin,
  mePlugin,
  settingsPlugin,
  graphqlPlugin,
  scimPlugin,
  apiDocsPlugin,
  eventsFeedPlugin,
  webhooksPlugin,
  workspacePlugin
]
