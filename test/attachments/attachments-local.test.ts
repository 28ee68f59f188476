import { createHash } from 'node:crypto'
import t from '../helpers/tap.ts'
import { purgePendingAttachments } from '../../plugins/attachments/attachments.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const { storage, db } = server.platform

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex')
const pdf = Buffer.from('%PDF-1.4\n% Investigation report for the forklift incident\n%%EOF\n')

async function newIncident(token = server.keys.acme) {
  const res = await server.request('POST', '/api/v1/records', {
    token,
    body: { moduleKey: 'incident', payload: incidentPayload() }
  })
  return res.body
}
async function requestUpload(recordId: string, overrides: Record<string, unknown> = {}, token = server.keys.acme) {
  return server.request('POST', '/api/v1/attachments', {
    token,
    body: {
      recordId,
      fileName: 'Report – bay 4.pdf',
      contentType: 'application/pdf',
      size: pdf.length,
      sha256: sha(pdf),
      ...overrides
    }
  })
}
const put = (upload: any, body: Buffer, headers: Record<string, string> = upload.headers) =>
  fetch(upload.url, { method: 'PUT', headers, body: new Uint8Array(body) })
const problem = async (res: Response) => ({
  status: res.status,
  type: res.headers.get('content-type'),
  body: await res.json()
})

t.test('upload then download round-trip through signed URLs; the file joins the record once verified', async (t) => {
  const incident = await newIncident()
  const created = await requestUpload(incident.id)
  t.equal(created.status, 201)
  t.match(created.body, {
    recordId: incident.id,
    state: 'pending',
    fileName: 'Report – bay 4.pdf',
    contentType: 'application/pdf',
    size: pdf.length,
    sha256: sha(pdf)
  })
  t.match(created.body.upload, { method: 'PUT', headers: { 'content-type': 'application/pdf' } })
  t.match(created.body.upload.url, /\/storage\/acme\/[0-9a-f-]{36}\/[0-9a-f-]{36}\?/)
  t.ok(Date.parse(created.body.upload.expiresAt) > Date.now())
  t.same(
    (await server.request('GET', `/api/v1/records/${incident.id}`)).body.attachments,
    [],
    'pending: not part of the record yet'
  )

  const uploaded = await put(created.body.upload, pdf)
  t.equal(uploaded.status, 200)
  t.match(await uploaded.json(), { id: created.body.id, state: 'ready' })
  const record = await server.request('GET', `/api/v1/records/${incident.id}`)
  t.match(record.body.attachments, [
    {
      id: created.body.id,
      fileName: 'Report – bay 4.pdf',
      contentType: 'application/pdf',
      size: pdf.length,
      sha256: sha(pdf),
      uploadedBy: { type: 'api-key' }
    }
  ])
  t.type(record.body.attachments[0].uploadedAt, 'string')

  const got = await server.request('GET', `/api/v1/attachments/${created.body.id}`)
  t.equal(got.status, 200)
  t.match(got.body.download, { method: 'GET' })
  const file = await fetch(got.body.download.url)
  t.equal(file.status, 200)
  t.same(Buffer.from(await file.arrayBuffer()), pdf, 'the same bytes come back')
  t.equal(file.headers.get('content-type'), 'application/pdf')
  t.equal(
    file.headers.get('content-disposition'),
    `attachment; filename="Report _ bay 4.pdf"; filename*=UTF-8''Report%20%E2%80%93%20bay%204.pdf`
  )

  const completed = await server.request('POST', `/api/v1/attachments/${created.body.id}:complete`)
  t.equal(completed.status, 200, 'completing a ready attachment is harmless')
  t.equal(completed.body.state, 'ready')
  const again = await put(created.body.upload, pdf)
  t.equal(again.status, 409, 'a verified file cannot be replaced through its old URL')
})

t.test('expired, tampered and wrong-method URLs are refused with 403 problems', async (t) => {
  const incident = await newIncident()
  const created = (await requestUpload(incident.id)).body
  const expired = await storage.signDownload({
    key: `acme/${incident.id}/${created.id}`,
    contentType: 'application/pdf',
    fileName: 'x.pdf',
    expiresAt: new Date(Date.now() - 1000)
  })
  const e = await problem(await fetch(expired.url))
  t.match(e, { status: 403, type: /^application\/problem\+json/, body: { code: 'storage.url_expired', status: 403 } })
  t.type(e.body.traceId, 'string')

  const url = new URL(created.upload.url)
  const sig = url.searchParams.get('sig')!
  url.searchParams.set('sig', (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1))
  t.match(
    await problem(await put({ ...created.upload, url: String(url) }, pdf)),
    { status: 403, body: { code: 'storage.signature_invalid' } },
    'a changed signature'
  )
  const bigger = new URL(created.upload.url)
  bigger.searchParams.set('size', String(pdf.length * 10))
  t.match(
    await problem(await put({ ...created.upload, url: String(bigger) }, pdf)),
    { status: 403, body: { code: 'storage.signature_invalid' } },
    'a changed constraint'
  )
  const otherKey = created.upload.url.replace(created.id, incident.id)
  t.match(
    await problem(await put({ ...created.upload, url: otherKey }, pdf)),
    { status: 403, body: { code: 'storage.signature_invalid' } },
    'another object'
  )
  t.match(
    await problem(await fetch(created.upload.url)),
    { status: 403, body: { code: 'storage.wrong_method' } },
    'GET on an upload URL'
  )
  const deleted = await fetch(created.upload.url, { method: 'DELETE' })
  t.equal(deleted.headers.get('allow'), 'GET, HEAD, PUT')
  t.match(
    await problem(deleted),
    { status: 405, body: { code: 'http.method_not_allowed' } },
    'DELETE on an upload URL: no signed URL is for DELETE'
  )
  t.match(
    await problem(await put(created.upload, pdf, { 'content-type': 'text/html' })),
    { status: 403, body: { code: 'storage.header_mismatch' } },
    'another content type than signed'
  )
  t.equal(await storage.stat(`acme/${incident.id}/${created.id}`), undefined, 'nothing was stored')
})

t.test('an over-size upload is refused and leaves nothing; limits are checked when the URL is asked for', async (t) => {
  const incident = await newIncident()
  const created = (await requestUpload(incident.id, { size: 10, sha256: undefined })).body
  const res = await problem(await put(created.upload, pdf))
  t.match(res, { status: 413, body: { code: 'attachment.too_large' } })
  t.equal(await storage.stat(`acme/${incident.id}/${created.id}`), undefined, 'no file')
  const still = await server.request('GET', `/api/v1/attachments/${created.id}`)
  t.equal(still.status, 409)
  t.equal(still.body.code, 'attachment.pending')
  const huge = await requestUpload(incident.id, { size: server.platform.config.attachments.maxBytes + 1 })
  t.equal(huge.status, 400)
  t.match(huge.body.detail, /size must be at most/)
  const exe = await requestUpload(incident.id, { contentType: 'application/x-msdownload', fileName: 'tool.exe' })
  t.equal(exe.status, 400, 'a content type off the allow-list')
  t.match(exe.body.errors[0], { field: 'contentType' })
  const image = await requestUpload(incident.id, {
    contentType: 'image/jpeg',
    fileName: 'photo.jpg',
    sha256: undefined
  })
  t.equal(image.status, 201, 'image/* on the allow-list')
  const slash = await requestUpload(incident.id, { fileName: '../../etc/passwd' })
  t.equal(slash.status, 400, 'no path in a file name')
})

t.test('a checksum mismatch leaves the attachment pending, and the right file then completes it', async (t) => {
  const incident = await newIncident()
  const created = (await requestUpload(incident.id)).body
  const wrong = Buffer.from(pdf)
  wrong[10] = 0x21
  t.match(await problem(await put(created.upload, wrong)), {
    status: 422,
    body: { code: 'attachment.checksum_mismatch' }
  })
  t.equal(await storage.stat(`acme/${incident.id}/${created.id}`), undefined)
  t.same((await server.request('GET', `/api/v1/records/${incident.id}`)).body.attachments, [])
  const short = await problem(await put(created.upload, pdf.subarray(0, 5)))
  t.match(short, { status: 422, body: { code: 'attachment.size_mismatch' } })
  const notYet = await server.request('POST', `/api/v1/attachments/${created.id}:complete`)
  t.equal(notYet.status, 409)
  t.equal(notYet.body.code, 'attachment.not_uploaded')
  t.equal((await put(created.upload, pdf)).status, 200)
  t.equal((await server.request('GET', `/api/v1/records/${incident.id}`)).body.attachments.length, 1)
})

t.test("attachments obey the record's tenant and permissions", async (t) => {
  const incident = await newIncident()
  const created = (await requestUpload(incident.id)).body
  await put(created.upload, pdf)
  const globex = server.keys.globex
  t.equal(
    (await server.request('GET', `/api/v1/attachments/${created.id}`, { token: globex })).status,
    404,
    'another tenant: 404'
  )
  t.equal((await server.request('POST', `/api/v1/attachments/${created.id}:complete`, { token: globex })).status, 404)
  t.equal((await requestUpload(incident.id, {}, globex)).status, 404, "no upload URL for another tenant's record")

  const auditor = await userWithToken(server, 'acme', ['auditor'])
  const noRight = await requestUpload(incident.id, {}, auditor.token)
  t.equal(noRight.status, 403, 'reading is not attaching')
  t.equal(noRight.body.missing, 'attachments')
  t.equal(
    (await server.request('GET', `/api/v1/attachments/${created.id}`, { token: auditor.token })).status,
    200,
    'an auditor may download'
  )

  const reporter = await userWithToken(server, 'acme', ['reporter'])
  t.equal(
    (await requestUpload(incident.id, {}, reporter.token)).status,
    404,
    "outside the reporter's row rule the record does not exist"
  )
  t.equal((await server.request('GET', `/api/v1/attachments/${created.id}`, { token: reporter.token })).status, 404)
  const own = await newIncident(reporter.token)
  t.equal((await requestUpload(own.id, {}, reporter.token)).status, 201, 'on their own report they may attach')

  const sa = (
    await server.request('POST', '/api/v1/tokens', {
      body: { type: 'service-account', name: 'reader', scopes: ['records:read'] }
    })
  ).body
  const scoped = await requestUpload(incident.id, {}, sa.token)
  t.equal(scoped.status, 403)
  t.equal(scoped.body.missingScope, 'attachments:write')
  const noRead = await server.request('GET', `/api/v1/attachments/${created.id}`, { token: sa.token })
  t.equal(noRead.body.missingScope, 'attachments:read')
})

t.test("a soft-deleted record's attachments are reachable only through the audit log", async (t) => {
  const incident = await newIncident()
  const created = (await requestUpload(incident.id)).body
  await put(created.upload, pdf)
  t.equal((await server.request('DELETE', `/api/v1/records/${incident.id}`)).status, 200)
  const direct = await server.request('GET', `/api/v1/attachments/${created.id}`)
  t.equal(direct.status, 404)
  t.match(direct.body.detail, /audit-log\?recordId=/)
  t.equal((await requestUpload(incident.id)).status, 404, 'no new uploads to a deleted record')
  const audit = await server.request('GET', `/api/v1/audit-log?recordId=${incident.id}`)
  t.equal(audit.body.record.attachments.length, 1)
  const file = await fetch(audit.body.record.attachments[0].download.url)
  t.same(Buffer.from(await file.arrayBuffer()), pdf, 'downloadable from the audit log')
})

t.test('the 51st signed URL in a minute is 429 with Retry-After', async (t) => {
  const incident = await newIncident()
  const key = (await server.platform.credentials.create({ tenantId: 'acme', kind: 'api_key', name: 'url limit' })).token
  const statuses: number[] = []
  for (let i = 0; i < 51; i++) statuses.push((await requestUpload(incident.id, { sha256: undefined }, key)).status)
  t.same(statuses.filter((s) => s === 201).length, 50)
  t.equal(statuses[50], 429)
  const more = await requestUpload(incident.id, {}, key)
  t.equal(more.status, 429)
  t.equal(more.body.code, 'attachments.url_limit')
  t.ok(Number(more.headers.get('retry-after')) >= 1)
  t.equal(
    (await server.request('GET', `/api/v1/records/${incident.id}`, { token: key })).status,
    200,
    'other calls are not affected'
  )
})

t.test('the purge job removes pending uploads that were never completed', async (t) => {
  const incident = await newIncident()
  const stale = (await requestUpload(incident.id)).body
  const fresh = (await requestUpload(incident.id)).body
  await db.system.query(
    `UPDATE attachments SET created_at = now() - interval '25 hours' WHERE tenant_id = 'acme' AND id = $1`,
    [stale.id]
  )
  t.ok((await purgePendingAttachments(server.platform)) >= 1)
  const { rows } = await db.system.query(
    `SELECT id FROM attachments WHERE tenant_id = 'acme' AND id = ANY($1::uuid[])`,
    [[stale.id, fresh.id]]
  )
  t.same(
    rows.map((r) => r.id),
    [fresh.id]
  )
  t.equal((await put(stale.upload, pdf)).status, 404, 'its URL leads nowhere now')
})
