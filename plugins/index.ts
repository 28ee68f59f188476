import type { App } from '../core/declarations.ts'
import { apiDocs } from './api-docs/api-docs.ts'
import { attachments } from './attachments/attachments.ts'
import { auditLog } from './audit-log/audit-log.ts'
import { exportsPlugin } from './exports/exports.ts'
import { bulk } from './bulk/bulk.ts'
import { me } from './me/me.ts'
import { modules } from './modules/modules.ts'
import { records } from './records/records.ts'
import { settings } from './settings/settings.ts'
import { tokens } from './tokens/tokens.ts'

/** Every feature, in the order it is configured. */
export const plugins: Array<(app: App) => void> = [records, bulk, attachments, exportsPlugin, modules, auditLog, tokens, me, settings, apiDocs]
