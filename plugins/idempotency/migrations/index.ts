import type { Migration } from '../../../core/plugin.ts'
import * as keys from './001-keys.ts'

/** The idempotency plugin's tables, in order (recorded as `idempotency/<name>`). */
export const idempotencyMigrations: readonly Migration[] = [{ name: '001-keys', replaces: '001-initial', ...keys }]
