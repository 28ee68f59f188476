// tap: own process (Agenda leaves a timer behind, so its teardown ends the process; it also points TMPDIR elsewhere)
import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * The export file is open for the whole read: a write that fails (here the temporary folder does not exist, as a
 * full or vanished disk would fail it) fails the export, with nothing stored, and never the process.
 */
const server = await startTestServer({ jobs: { enabled: true, processEverySeconds: 1 } })
t.teardown(async () => {
  await server.close()
  setTimeout(() => process.exit(), 200).unref()
})

t.test('a file that cannot be written fails the export, and the service goes on', async (t) => {
  for (let i = 0; i < 3; i++)
    await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
  const tmp = process.env.TMPDIR
  process.env.TMPDIR = '/nonexistent-records-tmp'
  t.teardown(() => {
    if (tmp === undefined) delete process.env.TMPDIR
    else process.env.TMPDIR = tmp
  })
  const started = await server.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'csv' } })
  t.equal(started.status, 202)
  let job = started.body
  for (let i = 0; i < 100 && job.status !== 'succeeded' && job.status !== 'failed'; i++) {
    await new Promise((r) => setTimeout(r, 200))
    job = (await server.request('GET', `/api/v1/exports/${job.id}`)).body
  }
  t.equal(job.status, 'failed')
  t.match(job.problem, { code: 'export.failed' })
  t.equal(job.file ?? null, null, 'nothing stored')
  const after = await server.request('GET', '/api/v1/records?moduleKey=incident')
  t.equal(after.status, 200, 'the service still answers')
})
