import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t from '../helpers/tap.ts'
import { freshDatabase } from '../helpers/database.ts'
import { startJobs, stopJobs } from '../../core/jobs/index.ts'
import { logger, type Level } from '../../core/logger.ts'

const db = await freshDatabase()
const pool = new pg.Pool({ connectionString: db.url, max: 4 })
const dir = mkdtempSync(join(tmpdir(), 'records-job-log-'))
const logFile = join(dir, 'jobs.ndjson')
logger.setFile({ file: logFile })
t.teardown(async () => {
  logger.setFile({
    file: process.env.LOG_FILE ?? null,
    fileLevel: process.env.LOG_FILE_LEVEL as Level,
    fileMaxBytes: Number(process.env.LOG_FILE_MAX_BYTES) || undefined
  })
  rmSync(dir, { recursive: true, force: true })
  await pool.end()
  await db.drop()
})

const jobLines = () => {
  logger.flush()
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === 'job')
}

t.test('one line per job run: its name, id, outcome and duration; a failed run is an error line', async (t) => {
  // A short lock: Agenda's lock check runs on a timer of half of it that outlives the job.
  const quick = { lockLifetimeMs: 2000 }
  const agenda = await startJobs(
    pool,
    [
      { name: 'logs.done', ...quick, run: async () => ({ rows: 3, token: 'svc_k_' + 'J'.repeat(40) }) },
      {
        name: 'logs.failed',
        ...quick,
        run: async () => Promise.reject(new Error('the receiver at https://x.example/?sig=0123456789abcdef refused'))
      }
    ],
    { process: true, processEverySeconds: 1, logLevel: 'info' }
  )
  t.teardown(() => stopJobs(agenda, { timeoutMs: 2000 }))
  await agenda.now('logs.done', {})
  await agenda.now('logs.failed', {})
  for (let i = 0; i < 200 && jobLines().length < 2; i++) await new Promise((r) => setTimeout(r, 50))
  const lines = jobLines()
  t.equal(lines.length, 2, 'one line per run')
  t.match(
    lines.find((l) => l.job === 'logs.done'),
    { level: 'info', id: String, outcome: 'done', ms: Number, result: { rows: 3, token: '[REDACTED]' } }
  )
  const failed = lines.find((l) => l.job === 'logs.failed')
  t.match(failed, { level: 'error', id: String, outcome: 'failed', ms: Number, error: /refused/ })
  t.match(failed.error, 'sig=[REDACTED]')
})
