import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
const dir = mkdtempSync(join(tmpdir(), 'records-report-'))
t.teardown(async () => {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
})

let files = 0
/** The report's text as pdftotext lays it out, and its page count. */
function pdfText(bytes: Buffer): { text: string; pages: number } {
  const file = join(dir, `report-${++files}.pdf`)
  writeFileSync(file, bytes)
  const pages = Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [file], { encoding: 'utf8' }))?.[1])
  if (process.env.REPORT_PNG_DIR)
    execFileSync('pdftoppm', [
      '-png',
      '-r',
      '80',
      '-f',
      '1',
      '-l',
      '1',
      file,
      join(process.env.REPORT_PNG_DIR, `record-report-${files}`)
    ])
  return { text: execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' }), pages }
}
const report = async (id: string, token?: string, accept = 'application/pdf') => {
  const res = await fetch(`${server.url}/api/v1/records/${id}`, {
    headers: {
      accept,
      ...(token === undefined
        ? { authorization: `Bearer ${server.keys.acme}` }
        : token
          ? { authorization: `Bearer ${token}` }
          : {})
    }
  })
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    bytes: Buffer.from(await res.arrayBuffer())
  }
}

// One incident taken through its workflow, with a lead, health data and an attachment.
const lead = await server.platform.users.create('acme', {
  userName: 'sam.patel',
  displayName: 'Sam Patel',
  roles: ['safety-manager']
})
const created = await server.request('POST', '/api/v1/records', {
  body: {
    moduleKey: 'incident',
    externalRef: 'SRC-1042',
    payload: incidentPayload({
      title: 'Pallet fell from height',
      category: 'property-damage',
      severity: 'high',
      medicalDetails: 'Bruised shoulder, first aid only',
      bodyParts: ['arms', 'back']
    })
  }
})
const id: string = created.body.id
await server.request('POST', `/api/v1/records/${id}:transition`, {
  body: { transition: 'start-investigation', comment: 'Assigning Sam', payload: { investigationLead: lead.id } }
})
await server.request('PATCH', `/api/v1/records/${id}`, {
  body: { payload: { rootCause: 'Shrink wrap torn; pallet not inspected before lifting.' } }
})
const file = Buffer.from('%PDF-1.4 photo of the bay\n'.repeat(100))
const attachment = await server.request('POST', '/api/v1/attachments', {
  body: { recordId: id, fileName: 'bay-4-photo.pdf', contentType: 'application/pdf', size: file.length }
})
await fetch(attachment.body.upload.url, {
  method: 'PUT',
  headers: attachment.body.upload.headers,
  body: new Uint8Array(file)
})

t.test('a record asked for with Accept: application/pdf is its report: fields, history and attachments', async (t) => {
  const res = await report(id)
  t.equal(res.status, 200)
  t.equal(res.type, 'application/pdf')
  t.equal(res.bytes.subarray(0, 5).toString(), '%PDF-')
  const { text, pages } = pdfText(res.bytes)
  t.match(text, /INC-\d{4}-\d{5}: Pallet fell from height/)
  t.match(text, 'Acme Chemicals', 'the tenant')
  t.match(text, /Generated\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/, 'the generation time')
  t.match(text, /State\s+Under investigation/, 'the state by its label')
  t.match(text, /External ref\s+SRC-1042/)
  for (const [label, value] of [
    ['Title', 'Pallet fell from height'],
    ['Site', 'Leeds DC'],
    ['Category', 'Property damage'],
    ['Severity', 'High'],
    ['Occurred at', '2026-11-20 08:30 UTC'],
    ['Body parts affected', 'arms, back'],
    ['Investigation lead', 'Sam Patel'],
    ['Medical details', 'Bruised shoulder, first aid only'],
    ['Root cause', 'Shrink wrap torn']
  ])
    t.match(text, new RegExp(`${label}\\s+${value}`), `${label} in the module's order, worded for people`)
  t.ok(
    text.indexOf('Title') < text.indexOf('Site') && text.indexOf('Site') < text.indexOf('Root cause'),
    'fields follow the module order'
  )
  t.match(text, /Start investigation: from Reported to Under investigation — acme test key/, 'the transition, with who')
  t.match(text, /Assigning Sam/, 'and its comment')
  t.match(text, /Changed: Root cause/)
  t.match(text, /\d{4}-\d\d-\d\d \d\d:\d\d UTC\s+Created in state Reported/, 'and when')
  t.match(text, /2\.5 KB\s+bay-4-photo\.pdf \(application\/pdf\)/, 'the attachment with its name and size')
  t.match(text, new RegExp(`Page 1 of ${pages}\\b`))
})

t.test('a report leaves out the fields the caller may not read, label and value', async (t) => {
  const manager = await userWithToken(server, 'acme', ['safety-manager'])
  const json = await server.request('GET', `/api/v1/records/${id}`, { token: manager.token })
  t.notOk('medicalDetails' in json.body.payload, 'hidden from the JSON')
  const res = await report(id, manager.token)
  t.equal(res.status, 200)
  const { text } = pdfText(res.bytes)
  t.notMatch(text, /Medical details|Bruised shoulder/)
  t.match(text, /Root cause\s+Shrink wrap torn/, 'the fields it may read are there')
  const health = await userWithToken(server, 'acme', ['health-officer'])
  t.match(
    pdfText((await report(id, health.token)).bytes).text,
    /Medical details\s+Bruised shoulder/,
    'a role that may read it sees it'
  )
})

t.test("another tenant's record is 404, as for JSON, and the refusal is a problem", async (t) => {
  const res = await report(id, server.keys.globex)
  t.equal(res.status, 404)
  t.match(res.type, /^application\/problem\+json/)
  const body = JSON.parse(res.bytes.toString('utf8'))
  t.equal(body.code, 'record.not_found')
  const json = await server.request('GET', `/api/v1/records/${id}`, { token: server.keys.globex })
  t.equal(json.status, 404)
  t.equal(json.body.code, body.code)
})

t.test('a record the caller may not read is refused exactly as the JSON is', async (t) => {
  const reporter = await userWithToken(server, 'acme', ['reporter'])
  const nobody = await userWithToken(server, 'acme', [])
  for (const [who, token] of [
    ['a reporter outside its row rule', reporter.token],
    ['a user without the read right', nobody.token],
    ['no credential', null]
  ] as const) {
    const json = await server.request('GET', `/api/v1/records/${id}`, { token })
    const res = await report(id, token ?? '')
    t.not(json.status, 200, `${who}: JSON refused`)
    t.equal(res.status, json.status, `${who}: the same status`)
    t.match(res.type, /^application\/problem\+json/, `${who}: a problem, not a PDF`)
    t.equal(JSON.parse(res.bytes.toString('utf8')).code, json.body.code, `${who}: the same code`)
  }
  const missing = await report('00000000-0000-4000-8000-000000000000')
  t.equal(missing.status, 404)
  t.match(missing.type, /^application\/problem\+json/)
})

t.test('JSON stays the answer unless the client prefers application/pdf', async (t) => {
  for (const accept of ['application/json', '*/*', '', 'application/json, application/pdf;q=0.5', 'text/html']) {
    const res = await report(id, undefined, accept)
    t.match(res.type, /^application\/json/, `Accept: ${accept || '(none)'}`)
  }
  t.equal((await report(id, undefined, 'application/pdf, */*;q=0.8')).type, 'application/pdf')
  t.equal((await report(id, undefined, 'application/json;q=0.5, application/pdf')).type, 'application/pdf')
})
