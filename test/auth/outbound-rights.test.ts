// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from '../helpers/tap.ts'
import { fixtureModules } from '../helpers/fixture-modules.ts'
import { userWithToken } from '../helpers/identity.ts'
import { defaultTenants, startTestServer } from '../helpers/server.ts'
import { startReceiver, webhookTestConfig } from '../webhooks/receiver.ts'

/*
 * Every door through which a copy of records leaves the service for someone who is not
 * asking for one record over the API takes the same rights as a read does: a field the
 * caller may not read and a record its row rule hides never leave through any of them.
 * One table of outbound channels (webhook deliveries, events feed, CSV export, the PDF
 * record report); add a row when a channel is added (GraphQL subscriptions later).
 */

// A module whose caseworkers see the cases they opened, and only clinicians the diagnosis.
const caseFile = {
  key: 'case-file',
  version: '1.0.0',
  title: 'Case file',
  numberPattern: 'CF-{YYYY}-{seq:4}',
  fields: [
    { key: 'subject', type: 'text', label: 'Subject', required: true, maxLength: 200 },
    { key: 'clinicalDiagnosis', type: 'longText', label: 'Confidential diagnosis', access: { read: ['clinician'] } }
  ],
  workflow: {
    initial: 'open',
    states: [{ key: 'open' }, { key: 'closed', final: true }],
    transitions: [{ key: 'close', from: ['open'], to: 'closed' }]
  },
  permissions: {
    caseworker: ['read', 'create', 'update', 'export', 'attachments'],
    clinician: ['read', 'create', 'update', 'export', 'attachments']
  },
  rowAccess: { caseworker: [{ createdBy: 'self' }] }
}
const fixtures = fixtureModules([caseFile])
const dir = mkdtempSync(join(tmpdir(), 'records-outbound-'))

const server = await startTestServer({
  ...webhookTestConfig(),
  jobs: { enabled: true, processEverySeconds: 1 },
  exports: { lockSeconds: 3, pageSize: 50 },
  modules: { directories: ['tenant-modules', fixtures.directory], packages: [] },
  tenants: {
    ...defaultTenants,
    acme: { ...defaultTenants.acme, modules: [...defaultTenants.acme.modules, 'case-file'] }
  }
})
t.teardown(async () => {
  await server.close()
  fixtures.remove()
  rmSync(dir, { recursive: true, force: true })
  // Agenda leaves a referenced timer behind job runs (see test/idempotency/purge-job.test.ts).
  setTimeout(() => process.exit(), 200).unref()
})

// The caller lacking the rights: an admin (so it may own a webhook) who is a caseworker.
const [caseworker, clinician] = await Promise.all([
  userWithToken(server, 'acme', ['admin', 'caseworker']),
  userWithToken(server, 'acme', ['clinician'])
])

const receiver = await startReceiver()
t.teardown(() => receiver.close())
const subscription = await server.request('POST', '/api/v1/webhooks', {
  token: caseworker.token,
  body: { url: receiver.url, kinds: ['record.created', 'record.updated', 'attachment.added'], modules: ['case-file'] }
})
const feedStart = (await server.request('GET', '/api/v1/events?limit=1', { token: caseworker.token })).body
  .nextCursor as string

async function create(token: string, payload: Record<string, unknown>) {
  const res = await server.request('POST', '/api/v1/records', { token, body: { moduleKey: 'case-file', payload } })
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`)
  return res.body
}
async function patch(id: string, payload: Record<string, unknown>) {
  const res = await server.request('PATCH', `/api/v1/records/${id}`, { token: clinician.token, body: { payload } })
  if (res.status !== 200) throw new Error(`patch: ${res.status} ${res.text}`)
}
async function attach(recordId: string, fileName: string, token: string) {
  const bytes = Buffer.from(`%PDF-1.4\n% ${fileName}\n%%EOF\n`)
  const res = await server.request('POST', '/api/v1/attachments', {
    token,
    body: {
      recordId,
      fileName,
      contentType: 'application/pdf',
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex')
    }
  })
  if (res.status !== 201) throw new Error(`attach: ${res.status} ${res.text}`)
  const put = await fetch(res.body.upload.url, {
    method: 'PUT',
    headers: res.body.upload.headers,
    body: new Uint8Array(bytes)
  })
  if (put.status !== 200) throw new Error(`upload: ${put.status}`)
}

// The caseworker's own case, whose diagnosis a clinician writes; and a case the caseworker may not see.
const visible = await create(caseworker.token, { subject: 'Visible-Case-V' })
await patch(visible.id, { clinicalDiagnosis: 'Secret-Diagnosis-V' })
await attach(visible.id, 'Visible-File-V.pdf', caseworker.token)
const hidden = await create(clinician.token, { subject: 'Hidden-Case-H', clinicalDiagnosis: 'Secret-Diagnosis-H' })
await patch(hidden.id, { subject: 'Hidden-Case-H, revised' })
await attach(hidden.id, 'Hidden-File-H.pdf', clinician.token)

/** What must never leave for the caseworker: the hidden field (key, label, values) and the hidden record. */
const forbidden = [
  'clinicalDiagnosis',
  'Confidential diagnosis',
  'Secret-Diagnosis',
  'Hidden-Case-H',
  'Hidden-File-H',
  hidden.id,
  hidden.number
]

let files = 0
const pdfText = (bytes: Buffer) => {
  const file = join(dir, `report-${++files}.pdf`)
  writeFileSync(file, bytes)
  return execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' })
}

/** Each outbound channel: what the caseworker gets through it, as text, and what proves it carried the visible case. */
const channels: Array<{ name: string; read(): Promise<string>; carries: string[] }> = [
  {
    name: 'webhook deliveries to a subscription the caseworker owns',
    carries: [visible.id, 'Visible-File-V'],
    async read() {
      // The visible case's created, updated and attachment events.
      await receiver.waitFor(3)
      await sleep(1000)
      return receiver.received.map((r) => r.body).join('\n')
    }
  },
  {
    name: 'the events feed',
    carries: [visible.id, 'Visible-File-V'],
    async read() {
      const res = await server.request(
        'GET',
        `/api/v1/events?moduleKey=case-file&after=${encodeURIComponent(feedStart)}`,
        { token: caseworker.token }
      )
      if (res.status !== 200) throw new Error(`feed: ${res.status} ${res.text}`)
      return res.text
    }
  },
  {
    name: 'a CSV export of the module',
    carries: ['Visible-Case-V', visible.number],
    async read() {
      const created = await server.request('POST', '/api/v1/exports', {
        token: caseworker.token,
        body: { moduleKey: 'case-file', format: 'csv' }
      })
      if (created.status !== 202) throw new Error(`export: ${created.status} ${created.text}`)
      const deadline = Date.now() + 20_000
      for (;;) {
        const job = (await server.request('GET', `/api/v1/exports/${created.body.id}`, { token: caseworker.token }))
          .body
        if (job.status === 'succeeded')
          return Buffer.from(await (await fetch(job.download.url)).arrayBuffer()).toString('utf8')
        if (job.status === 'failed' || Date.now() > deadline) throw new Error(`export ended ${JSON.stringify(job)}`)
        await sleep(100)
      }
    }
  },
  {
    name: 'the PDF record report of the visible case, and of the hidden one',
    carries: ['Visible-Case-V', visible.number, 'Visible-File-V'],
    async read() {
      const ask = (id: string) =>
        fetch(`${server.url}/api/v1/records/${id}`, {
          headers: { accept: 'application/pdf', authorization: `Bearer ${caseworker.token}` }
        })
      const own = await ask(visible.id)
      if (own.status !== 200) throw new Error(`report: ${own.status}`)
      // The hidden case does not exist for the caseworker (the refusal echoes only the id asked for).
      const other = await ask(hidden.id)
      if (other.status !== 404) throw new Error(`the hidden case's report answered ${other.status}`)
      return `${pdfText(Buffer.from(await own.arrayBuffer()))}\n${(await other.text()).replaceAll(hidden.id, '<the id asked for>')}`
    }
  }
]

t.test('no outbound channel lets a field the caller may not read, or a record its row rule hides, leave', async (t) => {
  t.equal(subscription.status, 201)
  for (const channel of channels) {
    const text = await channel.read()
    for (const marker of channel.carries)
      t.ok(text.includes(marker), `${channel.name} carries the visible case (${marker})`)
    for (const secret of forbidden) t.notOk(text.includes(secret), `${channel.name} leaves out ${secret}`)
  }
})

t.test(
  'the hidden field and record do leave for a caller who may read them (the channels carry them at all)',
  async (t) => {
    // The clinician sees every case and the diagnosis: the same feed shows them.
    const res = await server.request(
      'GET',
      `/api/v1/events?moduleKey=case-file&after=${encodeURIComponent(feedStart)}`,
      { token: clinician.token }
    )
    t.ok(res.text.includes(hidden.id) && res.text.includes('clinicalDiagnosis') && res.text.includes('Hidden-File-H'))
    const report = await fetch(`${server.url}/api/v1/records/${hidden.id}`, {
      headers: { accept: 'application/pdf', authorization: `Bearer ${clinician.token}` }
    })
    const text = pdfText(Buffer.from(await report.arrayBuffer()))
    t.ok(text.includes('Secret-Diagnosis-H') && text.includes('Confidential diagnosis'))
  }
)
