import type { Migration } from '../../../core/plugin.ts'
import * as numberingAndActivity from './001-numbering-and-activity.ts'
import * as attachments from './002-attachments.ts'
import * as activityKeyCheck from './003-activity-key-check.ts'
import * as recordMigrations from './004-record-migrations.ts'
import * as queryFunctions from './005-query-functions.ts'
import * as dueDates from './006-due-dates.ts'

/** The records plugin's tables, in order (core/db/migrate.ts runs and records them as `records/<name>`). */
export const recordsMigrations: readonly Migration[] = [
  { name: '001-numbering-and-activity', replaces: '001-initial', ...numberingAndActivity },
  { name: '002-attachments', replaces: '004-attachments', ...attachments },
  { name: '003-activity-key-check', ...activityKeyCheck },
  { name: '004-record-migrations', ...recordMigrations },
  { name: '005-query-functions', ...queryFunctions },
  { name: '006-due-dates', ...dueDates }
]
