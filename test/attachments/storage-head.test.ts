import { randomUUID } from 'node:crypto'
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const { storage } = server.platform

const pdf = Buffer.from('%PDF-1.4\n% Inspection certificate, crane 2\n%%EOF\n')
const incident = (
  await server.request('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: incidentPayload() } })
).body
const created = (
  await server.request('POST', '/api/v1/attachments', {
    body: {
      recordId: incident.id,
      fileName: 'Certificate – crane 2.pdf',
      contentType: 'application/pdf',
      size: pdf.length
    }
  })
).body
await fetch(created.upload.url, { method: 'PUT', headers: created.upload.headers, body: new Uint8Array(pdf) })
const download = (await server.request('GET', `/api/v1/attachments/${created.id}`)).body.download

/** The headers a GET and a HEAD must agree on. */
const described = (res: Response) =>
  Object.fromEntries(
    [
      'content-type',
      'content-length',
      'content-disposition',
      'cache-control',
      'x-content-type-options',
      'etag',
      'allow'
    ].map((h) => [h, res.headers.get(h)])
  )

t.test('HEAD on a signed download URL answers as GET does, without the body', async (t) => {
  const get = await fetch(download.url)
  t.equal(get.status, 200)
  t.equal(Buffer.from(await get.arrayBuffer()).length, pdf.length)
  const head = await fetch(download.url, { method: 'HEAD' })
  t.equal(head.status, 200, 'not 204')
  t.same(
    described(head),
    described(get),
    'the same Content-Type, Content-Length, Content-Disposition, caching and ETag (none)'
  )
  t.equal(head.headers.get('content-type'), 'application/pdf')
  t.equal(head.headers.get('content-length'), String(pdf.length))
  t.equal((await head.arrayBuffer()).byteLength, 0, 'no body')
})

t.test("HEAD on an export's download URL gives the file's size and type", async (t) => {
  const key = `acme/exports/${randomUUID()}`
  const file = join(tmpdir(), `records-head-${randomUUID()}.csv`)
  writeFileSync(file, 'Number,State\r\nINC-2026-00001,reported\r\n')
  await storage.putFile(key, file, 'text/csv; charset=utf-8')
  rmSync(file)
  const url = (
    await storage.signDownload({
      key,
      contentType: 'text/csv; charset=utf-8',
      fileName: 'incident-export-2026-11-22.csv',
      expiresAt: new Date(Date.now() + 60_000)
    })
  ).url
  const get = await fetch(url)
  await get.arrayBuffer()
  const head = await fetch(url, { method: 'HEAD' })
  t.equal(head.status, 200)
  t.same(described(head), described(get))
  t.equal(head.headers.get('content-length'), '39')
})

t.test('HEAD on an upload URL, an expired URL or a removed file answers what GET answers', async (t) => {
  const pending = (
    await server.request('POST', '/api/v1/attachments', {
      body: { recordId: incident.id, fileName: 'later.pdf', contentType: 'application/pdf', size: 10 }
    })
  ).body
  const expired = await storage.signDownload({
    key: `acme/${incident.id}/${created.id}`,
    contentType: 'application/pdf',
    fileName: 'x.pdf',
    expiresAt: new Date(Date.now() - 1000)
  })
  const gone = await storage.signDownload({
    key: `acme/exports/${randomUUID()}`,
    contentType: 'text/csv',
    fileName: 'gone.csv',
    expiresAt: new Date(Date.now() + 60_000)
  })
  for (const [what, url, status, code] of [
    ['an upload URL', pending.upload.url, 403, 'storage.wrong_method'],
    ['an expired download URL', expired.url, 403, 'storage.url_expired'],
    ['a file no longer stored', gone.url, 404, 'attachment.not_found']
  ] as const) {
    const get = await fetch(url)
    t.match({ status: get.status, body: await get.json() }, { status, body: { code } }, `GET on ${what}`)
    const head = await fetch(url, { method: 'HEAD' })
    t.equal(head.status, status, `HEAD on ${what}`)
    t.match(head.headers.get('content-type'), /^application\/problem\+json/)
    t.equal(head.headers.get('allow'), get.headers.get('allow'))
    t.equal((await head.arrayBuffer()).byteLength, 0)
  }
})
