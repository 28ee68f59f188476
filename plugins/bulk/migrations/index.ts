import type { Migration } from '../../../core/plugin.ts'
import * as outcomes from './001-outcomes.ts'

/** The bulk plugin's tables, in order (recorded as `bulk/<name>`). */
export const bulkMigrations: readonly Migration[] = [{ name: '001-outcomes', replaces: '003-bulk', ...outcomes }]
