import type { Migration } from '../../../core/plugin.ts'
import * as webhooks from './001-webhooks.ts'
import * as retriesIndex from './002-retries-index.ts'
import * as owners from './003-owners.ts'

/** The webhooks plugin's tables, in order (recorded as `webhooks/<name>`). */
export const webhooksMigrations: readonly Migration[] = [
  { name: '001-webhooks', replaces: '010-webhooks', ...webhooks },
  { name: '002-retries-index', replaces: '011-webhook-retries-index', ...retriesIndex },
  { name: '003-owners', replaces: '012-webhook-owners', ...owners }
]
