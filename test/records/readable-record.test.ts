import t from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

/**
 * "May this caller see this record" is one decision (readableRecord, records.access.ts) behind
 * every door that names a record by id: the record itself, its audit trail, its attachments.
 * A record the caller may not see does not exist for it (404, never a 403 that confirms it);
 * a caller without the right to read the module at all is told so (403 about the module).
 */
const server = await startTestServer()
t.teardown(() => server.close())

const [reporterA, reporterB, outsider] = await Promise.all([
  userWithToken(server, 'acme', ['reporter']),
  userWithToken(server, 'acme', ['reporter']),
  // An action owner has rights in corrective actions only: no read right on incidents.
  userWithToken(server, 'acme', ['action-owner'])
])

async function incidentWithAttachment(token?: string) {
  const record = await server.request('POST', '/api/v1/records', {
    token,
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  if (record.status !== 201) throw new Error(`setup: create answered ${record.status} ${record.text}`)
  const attachment = await server.request('POST', '/api/v1/attachments', {
    body: { recordId: record.body.id, fileName: 'photo.png', contentType: 'image/png', size: 3 }
  })
  if (attachment.status !== 201) throw new Error(`setup: attachment answered ${attachment.status} ${attachment.text}`)
  return { id: record.body.id as string, attachmentId: attachment.body.id as string }
}

/** The status and code of each door onto record `id` (and its attachment) for `token`. */
async function doors(token: string, r: { id: string; attachmentId: string }) {
  const answers = {
    record: await server.request('GET', `/api/v1/records/${r.id}`, { token }),
    auditLog: await server.request('GET', `/api/v1/audit-log?recordId=${r.id}`, { token }),
    newAttachment: await server.request('POST', '/api/v1/attachments', {
      token,
      body: { recordId: r.id, fileName: 'more.png', contentType: 'image/png', size: 3 }
    }),
    attachment: await server.request('GET', `/api/v1/attachments/${r.attachmentId}`, { token })
  }
  return Object.fromEntries(Object.entries(answers).map(([door, res]) => [door, [res.status, res.body?.code]]))
}

t.test('a record outside the caller’s row rule is 404 on every door, as one of another tenant is', async (t) => {
  const theirs = await incidentWithAttachment(reporterB.token)
  const unseen = {
    record: [404, 'record.not_found'],
    auditLog: [404, 'record.not_found'],
    newAttachment: [404, 'record.not_found'],
    attachment: [404, 'attachment.not_found']
  }
  t.same(await doors(reporterA.token, theirs), unseen, 'outside the row rule')
  t.same(await doors(server.keys.globex, theirs), unseen, 'another tenant')
  const own = await doors(reporterB.token, theirs)
  t.same(own.record, [200, undefined], 'to its reporter: the record')
  t.same(own.auditLog, [200, undefined], 'its trail')
  t.same(
    own.attachment,
    [409, 'attachment.pending'],
    'and its attachment (not uploaded yet: past the visibility check)'
  )
})

t.test('a deleted record is 404 as a record and readable in the audit log, to whoever saw it', async (t) => {
  const r = await incidentWithAttachment(reporterB.token)
  t.equal((await server.request('DELETE', `/api/v1/records/${r.id}`)).status, 200)
  const seen = await doors(reporterB.token, r)
  t.same(seen.record, [404, 'record.not_found'])
  t.same(seen.auditLog, [200, undefined])
  t.same(seen.attachment, [404, 'attachment.not_found'], "a deleted record's files are reached through the audit log")
  t.same((await doors(reporterA.token, r)).auditLog, [404, 'record.not_found'], 'still not to another reporter')
})

t.test('a caller without the right to read the module is 403 on every door, naming the module', async (t) => {
  const r = await incidentWithAttachment()
  const answers = await doors(outsider.token, r)
  for (const [door, [status, code]] of Object.entries(answers)) {
    t.equal(status, 403, door)
    t.equal(code, 'permission.denied', door)
  }
})
