import type { Migration } from '../../../core/plugin.ts'
import * as jobs from './001-jobs.ts'
import * as chunks from './002-chunks.ts'
import * as encodedChunks from './003-encoded-chunks.ts'
import * as deflatedChunks from './004-deflated-chunks.ts'

/** The exports plugin's tables, in order (recorded as `exports/<name>`). */
export const exportsMigrations: readonly Migration[] = [
  { name: '001-jobs', replaces: '005-exports', ...jobs },
  { name: '002-chunks', replaces: '014-export-chunks', ...chunks },
  { name: '003-encoded-chunks', ...encodedChunks },
  { name: '004-deflated-chunks', ...deflatedChunks }
]
