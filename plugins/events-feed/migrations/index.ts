import type { Migration } from '../../../core/plugin.ts'
import * as retention from './001-retention.ts'

/** The events feed's tables, in order (recorded as `events-feed/<name>`). */
export const eventsFeedMigrations: readonly Migration[] = [
  { name: '001-retention', replaces: '009-events-feed', ...retention }
]
