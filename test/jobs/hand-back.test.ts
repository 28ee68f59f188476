import pg from 'pg'
import t from '../helpers/tap.ts'
import { freshDatabase } from '../helpers/database.ts'
import { handBack, jobsRunning, startJobs, stopJobs, type JobContext } from '../../core/jobs/index.ts'

/** A promise with its resolve, to wait on events rather than on time. */
function marker<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

const db = await freshDatabase()
const pool = new pg.Pool({ connectionString: db.url, max: 6 })
t.teardown(async () => {
  await pool.end()
  await db.drop()
})

// Agenda checks a running job's lock every max(processEvery, lockLifetime) / 2 on a timer that outlives the job: both short here.
const quick = { lockLifetimeMs: 3000 }
/** Waits for the drain signal, touching the lock as a long job does between chunks. */
async function workUntilDrained(context: JobContext) {
  while (!context.signal.aborted) {
    await context.touch()
    await new Promise((r) => setTimeout(r, 100))
  }
}

const row = async (id: string) =>
  (
    await pool.query(
      'SELECT locked_at, next_run_at, fail_count, fail_reason, last_modified_by FROM agenda_jobs WHERE id = $1',
      [id]
    )
  ).rows[0]

t.test(
  'a draining instance hands a running job back: unlocked, due now, no attempt counted, and another instance runs it at once',
  async (t) => {
    const started = marker<JobContext>()
    let runsOnA = 0
    const a = await startJobs(
      pool,
      [
        {
          name: 'test.hand-back',
          ...quick,
          run: async (_data, context) => {
            runsOnA++
            started.resolve(context)
            await workUntilDrained(context)
            return handBack()
          }
        }
      ],
      { process: true, processEverySeconds: 1 }
    )
    await a.now('test.hand-back', { id: 1 })
    const context = await started.promise
    t.equal(context.signal.aborted, false, 'the signal is quiet while the instance runs')
    t.equal(jobsRunning(a), true)

    // B starts while A holds the lock (its start-up scan finds nothing) and scans again only in an hour: only a NOTIFY can wake it.
    const ranOnB = marker<Record<string, unknown>>()
    const b = await startJobs(pool, [{ name: 'test.hand-back', ...quick, run: async (data) => ranOnB.resolve(data) }], {
      process: true,
      processEverySeconds: 1
    })
    t.teardown(() => stopJobs(b, { timeoutMs: 5000 }))

    const listener = await pool.connect()
    const notified = marker<unknown>()
    listener.on('notification', (m) => m.channel === 'agenda:jobs' && notified.resolve(JSON.parse(m.payload!).jobName))
    await listener.query('LISTEN "agenda:jobs"')
    t.teardown(() => listener.release())
    const stopped = await stopJobs(a, { timeoutMs: 30_000 })
    t.equal(await notified.promise, 'test.hand-back', 'other instances are told at once, not at their next scan')
    t.equal(context.signal.aborted, true, 'the running job was signalled')
    t.equal(jobsRunning(a), false)
    t.same(stopped, { handedBack: 1, released: [] }, 'it handed itself back before the deadline')
    t.same(await ranOnB.promise, { id: 1 }, 'the other instance ran it with its data')
    t.equal(runsOnA, 1, 'the stopping instance did not take it again')
  }
)

t.test('a handed-back job keeps its fail count and is left unlocked and due now', async (t) => {
  const definition = {
    name: 'test.counted',
    ...quick,
    run: async (_d: unknown, context: JobContext) => {
      started.resolve()
      await workUntilDrained(context)
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- a job may throw its hand-back marker, not only return it (core/jobs JobContext)
      throw handBack('thrown')
    }
  }
  const started = marker()
  const enqueuer = await startJobs(pool, [definition], { process: false })
  const id = String((await enqueuer.now('test.counted', {})).attrs._id)
  await pool.query('UPDATE agenda_jobs SET fail_count = 2 WHERE id = $1', [id])
  const a = await startJobs(pool, [definition], { process: true, processEverySeconds: 1 })
  await started.promise
  const before = Date.now()
  const stopped = await stopJobs(a, { timeoutMs: 30_000 })
  t.equal(stopped.handedBack, 1, 'a thrown handBack() hands back too')
  const r = await row(id)
  t.equal(r.locked_at, null, 'unlocked')
  t.ok(r.next_run_at.getTime() <= Date.now() && r.next_run_at.getTime() >= before - 1000, 'due now')
  t.equal(r.fail_reason, null, 'not failed')
  t.equal(r.fail_count, 2, 'no attempt counted, none forgotten')
  await pool.query('DELETE FROM agenda_jobs WHERE id = $1', [id])
})

t.test('a job that ignores the signal is released at the deadline, due now, and named', async (t) => {
  const started = marker()
  const finish = marker()
  const a = await startJobs(
    pool,
    [
      {
        name: 'test.stubborn',
        ...quick,
        run: async () => {
          started.resolve()
          await finish.promise
        }
      }
    ],
    { process: true, processEverySeconds: 1 }
  )
  const job = await a.now('test.stubborn', {})
  const id = String(job.attrs._id)
  await started.promise
  t.ok((await row(id)).locked_at, 'locked while it runs')
  const stopped = await stopJobs(a, { timeoutMs: 50 })
  t.same(stopped.released, ['test.stubborn'], 'reported as released')
  const r = await row(id)
  t.equal(r.locked_at, null, 'its lock is released for another instance')
  t.ok(r.next_run_at && r.next_run_at.getTime() <= Date.now(), 'and it is due now')
  finish.resolve()
  await pool.query('DELETE FROM agenda_jobs WHERE id = $1', [id])
})
