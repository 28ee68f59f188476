import type { Migration } from '../../../core/plugin.ts'
import * as series from './001-series.ts'
import * as madeRecords from './002-made-records.ts'

/** The recurrence plugin's tables, in order (recorded as `recurrence/<name>`). */
export const recurrenceMigrations: readonly Migration[] = [
  { name: '001-series', ...series },
  { name: '002-made-records', ...madeRecords }
]
