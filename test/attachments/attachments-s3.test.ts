import { createHash } from 'node:crypto'
import t from '../helpers/tap.ts'
import { startS3 } from '../helpers/s3.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

// The S3 driver against a real S3-compatible server (s3rver, in-process): the bytes go
// between the client and that server only; the service signs, checks and records.
const s3 = await startS3()
const server = await startTestServer({ attachments: { driver: 's3', s3: s3.config } } as any)
t.teardown(async () => {
  await server.close()
  await s3.close()
})
const { storage } = server.platform
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')
const photo = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
  Buffer.from('JFIF photo of the spill at bay 7'.repeat(200))
])

async function newAttachment(body: Buffer, overrides: Record<string, unknown> = {}) {
  const incident = (
    await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
  ).body
  const created = await server.request('POST', '/api/v1/attachments', {
    body: {
      recordId: incident.id,
      fileName: 'spill-bay-7.jpg',
      contentType: 'image/jpeg',
      size: body.length,
      sha256: sha(body),
      ...overrides
    }
  })
  return { incident, created }
}
const put = (upload: any, body: Buffer) =>
  fetch(upload.url, { method: 'PUT', headers: upload.headers, body: new Uint8Array(body) })

t.test('upload then download round-trip with the S3 driver: presigned URLs straight to the S3 server', async (t) => {
  t.equal(storage.name, 's3')
  const { incident, created } = await newAttachment(photo)
  t.equal(created.status, 201)
  t.ok(
    created.body.upload.url.startsWith(`${s3.endpoint}/${s3.bucket}/acme/${incident.id}/${created.body.id}?`),
    'the upload URL points at the S3 server, not the API'
  )
  t.match(created.body.upload.url, /X-Amz-Signature=/)
  t.equal((await put(created.body.upload, photo)).status, 200)
  t.same(
    (await server.request('GET', `/api/v1/records/${incident.id}`)).body.attachments,
    [],
    'pending until completed'
  )
  const completed = await server.request('POST', `/api/v1/attachments/${created.body.id}:complete`)
  t.equal(completed.status, 200)
  t.match(completed.body, { state: 'ready', size: photo.length, sha256: sha(photo) })
  t.equal((await server.request('GET', `/api/v1/records/${incident.id}`)).body.attachments.length, 1)

  const got = await server.request('GET', `/api/v1/attachments/${created.body.id}`)
  t.ok(got.body.download.url.startsWith(s3.endpoint), 'so does the download URL')
  const file = await fetch(got.body.download.url)
  t.equal(file.status, 200)
  t.same(Buffer.from(await file.arrayBuffer()), photo)
  t.match(file.headers.get('content-disposition'), /filename="spill-bay-7.jpg"/)
  t.equal(file.headers.get('content-type'), 'image/jpeg')
})

t.test(
  'completing before the upload is 409; a wrong file (size or checksum) leaves the attachment pending and is not kept',
  async (t) => {
    const { incident, created } = await newAttachment(photo)
    const key = `acme/${incident.id}/${created.body.id}`
    const early = await server.request('POST', `/api/v1/attachments/${created.body.id}:complete`)
    t.equal(early.status, 409)
    t.equal(early.body.code, 'attachment.not_uploaded')

    const tampered = Buffer.from(photo)
    tampered[100] ^= 0xff
    await put(created.body.upload, tampered)
    const checksum = await server.request('POST', `/api/v1/attachments/${created.body.id}:complete`)
    t.equal(checksum.status, 422)
    t.equal(checksum.body.code, 'attachment.checksum_mismatch')
    t.equal(await storage.stat(key), undefined, 'the wrong file was removed')
    t.equal((await server.request('GET', `/api/v1/attachments/${created.body.id}`)).body.code, 'attachment.pending')

    // Real S3 refuses a body of another length than the signed Content-Length; s3rver stores it, so the service catches it.
    await put(created.body.upload, Buffer.concat([photo, photo]))
    const size = await server.request('POST', `/api/v1/attachments/${created.body.id}:complete`)
    t.equal(size.status, 422)
    t.equal(size.body.code, 'attachment.size_mismatch')
    t.equal(await storage.stat(key), undefined, 'an over-size upload leaves nothing')

    await put(created.body.upload, photo)
    t.equal(
      (await server.request('POST', `/api/v1/attachments/${created.body.id}:complete`)).status,
      200,
      'the right file completes it'
    )
  }
)

t.test('an expired S3 URL is refused by the S3 server', async (t) => {
  const { incident, created } = await newAttachment(photo)
  await put(created.body.upload, photo)
  await server.request('POST', `/api/v1/attachments/${created.body.id}:complete`)
  const expired = await storage.signDownload({
    key: `acme/${incident.id}/${created.body.id}`,
    contentType: 'image/jpeg',
    fileName: 'x.jpg',
    expiresAt: new Date(Date.now() + 1000)
  })
  await new Promise((r) => setTimeout(r, 2100))
  const res = await fetch(expired.url)
  t.equal(res.status, 403)
  t.match(await res.text(), /expired/i)
})

t.test('cross-tenant access to an S3 attachment is 404', async (t) => {
  const { created } = await newAttachment(photo)
  t.equal(
    (await server.request('GET', `/api/v1/attachments/${created.body.id}`, { token: server.keys.globex })).status,
    404
  )
  t.equal(
    (await server.request('POST', `/api/v1/attachments/${created.body.id}:complete`, { token: server.keys.globex }))
      .status,
    404
  )
})
