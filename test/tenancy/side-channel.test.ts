// tap: own process (Agenda leaves a timer behind, so its teardown ends the process)
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import t from '../helpers/tap.ts'
import type { Lease } from '../../core/limits/limiter.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'
import { covers, doors, exportGate, normalise, relative, Steps, type Answer } from '../helpers/side-channel.ts'
import { eventsSettled } from '../helpers/events.ts'

/*
 * Tenant B (globex) must learn nothing about tenant A (acme) from any figure it is shown.
 * B runs one fixed probe set (every service method, documented route and settings page;
 * A's ids in every path parameter; A's values as filters, cursors and references), A's
 * data then changes, B runs the same set again: the answers must be identical once
 * per-call values (trace ids, rate-limit counters, signed-URL expiry) are taken out, and
 * an answer about one of A's ids must read exactly like one about a random id. B's own
 * writes, run once before and once after A's changes, must count as if A did nothing.
 *
 * One file on purpose: the probe table is the test, and a door without a row fails it.
 */

const server = await startTestServer({
  jobs: { enabled: true, processEverySeconds: 1 },
  webhooks: { allowedCidrs: ['203.0.113.0/24'] }
})
const { limiter } = server.platform
const gate = exportGate(server.platform.storage)
const leases: Lease[] = []
t.teardown(async () => {
  gate.releaseAll()
  for (const l of leases) await l.release()
  await server.close()
  // Agenda leaves a referenced timer behind job runs (see test/exports/exports.test.ts).
  setTimeout(() => process.exit(), 200).unref()
})

const A = server.keys.acme
const B = server.keys.globex
const aOnly = 'Ammonia release at the chiller plant' // a title only A uses
const shared = incidentPayload().title // a title both tenants use
const aRefs = ['ACME-SAP-7731', 'ACME-SAP-7732'] // A's external references; the second appears when A's data changes
const stepTitle = 'Globex step probe'

/** Values of A's that no answer to B may carry unless B sent them in that request (A's references are B's too, once B loads them). */
const aSecrets = new Map<string, string>([[aOnly, "A's title"]])
const leaks: string[] = []
function scan(sent: string, reply: { body: unknown; text: string }) {
  // An export job repeats the filters its requester chose.
  const body =
    reply.body && typeof reply.body === 'object'
      ? JSON.stringify(reply.body, (k, v) => (k === 'filters' ? undefined : v))
      : reply.text
  for (const [value, label] of aSecrets)
    if (body.includes(value) && !sent.includes(value))
      leaks.push(`${label} ${value} in the answer to ${sent.slice(0, 120)}`)
}

async function req(
  method: string,
  path: string,
  o: { token?: string; body?: unknown; headers?: Record<string, string> } = {}
): Promise<Reply> {
  const reply = await server.request(method, path, { token: o.token ?? B, body: o.body, headers: o.headers })
  if ((o.token ?? B) === B) scan(`${method} ${path} ${JSON.stringify(o.body ?? '')}`, reply)
  return reply
}
function must(reply: Reply, status: number, what: string) {
  if (reply.status !== status) throw new Error(`setup: ${what} answered ${reply.status} ${reply.text.slice(0, 300)}`)
  return reply.body
}
const create = async (token: string, moduleKey: string, payload: Record<string, unknown>, externalRef?: string) =>
  must(
    await req('POST', '/api/v1/records', {
      token,
      body: { moduleKey, payload, ...(externalRef ? { externalRef } : {}) }
    }),
    201,
    `create ${moduleKey}`
  )
const remove = async (token: string, id: string) =>
  must(await req('DELETE', `/api/v1/records/${id}`, { token }), 200, 'delete')
async function attach(token: string, recordId: string, upload = true) {
  const bytes = Buffer.from(`photo of ${recordId}`)
  const a = must(
    await req('POST', '/api/v1/attachments', {
      token,
      body: { recordId, fileName: 'photo.txt', contentType: 'text/plain', size: bytes.length }
    }),
    201,
    'attachment'
  )
  if (upload && (await fetch(a.upload.url, { method: 'PUT', headers: a.upload.headers, body: bytes })).status !== 200)
    throw new Error('setup: upload failed')
  return a
}
const startExport = async (token: string, body: Record<string, unknown>) =>
  must(await req('POST', '/api/v1/exports', { token, body }), 202, 'export')
async function exportIn(token: string, id: string, statuses: string[]): Promise<Reply> {
  for (const deadline = Date.now() + 20_000; ; await sleep(50)) {
    const r = await server.request('GET', `/api/v1/exports/${id}`, { token })
    if (statuses.includes(r.body?.status) || Date.now() > deadline) return r
  }
}
/** Takes every free export slot of a tenant, so its next exports queue. */
async function holdExportSlots(tenantId: string) {
  const limit = server.platform.limitsFor(tenantId).exportConcurrency
  const held: Lease[] = []
  for (let lease; (lease = (await limiter!.acquire(`exports:${tenantId}`, limit, 300_000)).lease);) held.push(lease)
  leases.push(...held)
  return held
}

// ---- Tenant A: records of each module, a deleted one, attachments, exports running and queued, a token, cursors.
const aInc = await create(A, 'incident', incidentPayload({ title: aOnly }), aRefs[0])
const aInc2 = await create(A, 'incident', incidentPayload({ title: aOnly }))
for (let i = 0; i < 2; i++) await create(A, 'incident', incidentPayload())
const aAction = await create(A, 'corrective-action', {
  title: 'Fit a leak detector',
  incident: aInc.id,
  kind: 'preventive'
})
const aInspection = await create(A, 'inspection', {
  title: 'Chiller plant walk-round',
  kind: 'workplace',
  site: 'Hull',
  scheduledFor: '2026-12-01'
})
const aDeleted = await create(A, 'incident', incidentPayload({ title: aOnly }))
await remove(A, aDeleted.id)
const aFile = await attach(A, aInc.id)
const aPending = await attach(A, aInc2.id, false)
const aToken = must(
  await req('POST', '/api/v1/tokens', { token: A, body: { type: 'api-key', name: 'Acme ERP sync' } }),
  201,
  'token'
)
aSecrets.set(aToken.prefix, "A's token prefix")
const aCursor = (await req('GET', '/api/v1/records?moduleKey=incident&limit=1', { token: A })).body.nextCursor
const aFeedCursor = (await req('GET', '/api/v1/audit-log?moduleKey=incident&limit=1', { token: A })).body.nextCursor
const aEventsCursor = (await req('GET', '/api/v1/events?limit=1', { token: A })).body.nextCursor
gate.hold('acme')
const aExports = [await startExport(A, { moduleKey: 'incident', format: 'csv' })]
await exportIn(A, aExports[0].id, ['running'])
await holdExportSlots('acme')
aExports.push(await startExport(A, { moduleKey: 'incident', format: 'csv', filters: { payload: { title: aOnly } } }))

// A's SCIM user (its userName a secret too) and a group with it as member.
const scimUrn = 'urn:ietf:params:scim:api:messages:2.0:PatchOp'
const aScimName = 'ammonia.lead@acme.example'
const aScimUser = must(
  await req('POST', '/api/scim/v2/Users', {
    token: A,
    body: { userName: aScimName, name: { givenName: 'Ammonia', familyName: 'Lead' } }
  }),
  201,
  'scim user'
)
const aScimGroup = must(
  await req('POST', '/api/scim/v2/Groups', {
    token: A,
    body: { displayName: 'Acme chiller crew', members: [{ value: aScimUser.id }] }
  }),
  201,
  'scim group'
)
aSecrets.set(aScimName, "A's SCIM userName")
aSecrets.set('Acme chiller crew', "A's SCIM group name")
// A's webhook (a public documentation address, test pings only: nothing is ever sent to it here).
const aHook = must(
  await req('POST', '/api/v1/webhooks', {
    token: A,
    body: { url: 'https://203.0.113.10/acme-hooks', kinds: ['webhook.test'], description: 'Acme chiller alerts' }
  }),
  201,
  'webhook'
)
aSecrets.set('acme-hooks', "A's webhook URL")
aSecrets.set('Acme chiller alerts', "A's webhook description")

/** A's ids by kind, each under a label. */
type Pool = Record<
  'records' | 'attachments' | 'exports' | 'tokens' | 'scimUsers' | 'scimGroups' | 'webhooks',
  Record<string, string>
>
const aIds: Pool = {
  records: {
    'acme incident': aInc.id,
    'acme corrective action': aAction.id,
    'acme inspection': aInspection.id,
    'acme deleted incident': aDeleted.id
  },
  attachments: { 'acme attachment': aFile.id, 'acme pending attachment': aPending.id },
  exports: { 'acme running export': aExports[0].id, 'acme queued export': aExports[1].id },
  tokens: { 'acme token': aToken.id },
  scimUsers: { 'acme scim user': aScimUser.id },
  scimGroups: { 'acme scim group': aScimGroup.id },
  webhooks: { 'acme webhook': aHook.id }
}
const secretIds = (pool: Pool) =>
  Object.values(pool).forEach((ids) => Object.entries(ids).forEach(([label, id]) => aSecrets.set(id, label)))
secretIds(aIds)

// ---- Tenant B: its own records (numbered from 1 although A numbered first), files, a finished export, tokens, a signed-in admin.
const bInc = await create(B, 'incident', incidentPayload({ title: 'Pallet fell from a mezzanine' }), 'GLOBEX-0001')
const bAction = await create(B, 'corrective-action', {
  title: 'Fence the mezzanine edge',
  incident: bInc.id,
  kind: 'corrective'
})
await create(B, 'incident', incidentPayload({ title: 'Dock leveller trapped a foot', severity: 'high' }))
for (let i = 0; i < 2; i++) await create(B, 'incident', incidentPayload())
await create(B, 'inspection', {
  title: 'Racking check',
  kind: 'workplace',
  site: 'Leeds DC',
  scheduledFor: '2026-12-01'
})
const bDeleted = await create(B, 'incident', incidentPayload({ title: 'Duplicate report' }))
await remove(B, bDeleted.id)
const bFile = await attach(B, bInc.id)
const bPending = await attach(B, bInc.id, false)
const bToken = must(
  await req('POST', '/api/v1/tokens', {
    body: { type: 'service-account', name: 'Globex BI', scopes: ['records:read'] }
  }),
  201,
  'token'
)
const bDone = await startExport(B, { moduleKey: 'incident', format: 'csv' })
must(await exportIn(B, bDone.id, ['succeeded']), 200, 'export')
const password = 'globex-admin-password-1'
const bUser = await server.platform.users.create('globex', { userName: 'dana', roles: ['admin'], password })
const bSession = await server.platform.sessions.create('globex', bUser.id)
// The records workspace is for people of the tenant who work with its records: a safety manager of B's.
const bManager = await server.platform.users.create('globex', { userName: 'sol', roles: ['safety-manager'], password })
const bManagerSession = await server.platform.sessions.create('globex', bManager.id)
const bScimUser = must(
  await req('POST', '/api/scim/v2/Users', {
    body: {
      userName: 'globex.scim@globex.example',
      name: { givenName: 'Globex', familyName: 'Scim' },
      displayName: 'Globex Scim'
    }
  }),
  201,
  'scim user'
)
const bScimGroup = must(
  await req('POST', '/api/scim/v2/Groups', {
    body: { displayName: 'Globex dock crew', members: [{ value: bScimUser.id }] }
  }),
  201,
  'scim group'
)
const bDownload = must(await req('GET', `/api/v1/attachments/${bFile.id}`), 200, 'attachment').download.url as string
const bUpload = bPending.upload.url as string
const bHook = must(
  await req('POST', '/api/v1/webhooks', {
    body: { url: 'https://203.0.113.20/globex-hooks', kinds: ['webhook.test'] }
  }),
  201,
  'webhook'
)

/** A browser request of B's signed-in admin (no redirects followed). */
async function page(method: string, path: string, form?: Record<string, string>, cookie = true): Promise<Reply> {
  const headers: Record<string, string> = cookie ? { cookie: `records_session=${bSession.cookieValue}` } : {}
  let body: string | undefined
  if (form) {
    body = new URLSearchParams(form).toString()
    headers['content-type'] = 'application/x-www-form-urlencoded'
  }
  const res = await fetch(server.url + path, { method, headers, body, redirect: 'manual' })
  const reply = { status: res.status, headers: res.headers, body: undefined, text: await res.text() }
  scan(`${method} ${path} ${body ?? ''}`, reply)
  return reply
}
/** A workspace page as B's safety manager opens it (their session, their CSRF token in a form). */
function desk(method: string, path: string, form?: Record<string, string>): Promise<Reply> {
  const headers: Record<string, string> = { cookie: `records_session=${bManagerSession.cookieValue}` }
  const body = form ? new URLSearchParams({ csrf: bManagerSession.csrfToken, ...form }).toString() : undefined
  if (body) headers['content-type'] = 'application/x-www-form-urlencoded'
  return fetch(server.url + path, { method, headers, body, redirect: 'manual' }).then(async (res) => {
    const reply = { status: res.status, headers: res.headers, body: undefined, text: await res.text() }
    // What B sent, as the page reads it (decoded): a value B typed may come back in the answer.
    const sent = `${method} ${decodeURIComponent(path)} ${form ? Object.values(form).join(' ') : ''}`
    scan(sent, reply)
    return reply
  })
}

/**
 * A workspace form as B's safety manager opens and sends it, with a fresh submit key: one reply holding both answers
 * (the form's status and headers, both texts), so a probe scans what either said.
 */
async function deskForm(path: string, fields: Record<string, string>): Promise<Reply> {
  const form = await desk('GET', path)
  const sent = await desk('POST', path, { submitKey: randomUUID(), ...fields })
  return {
    status: form.status,
    headers: form.headers,
    body: undefined,
    text: `${form.text}\n${sent.status}\n${sent.text}`
  }
}

/** A signed storage URL of B's, sent to another object key (and method). */
async function storage(signed: string, key: string, method = 'GET'): Promise<Reply> {
  const url = new URL(signed)
  url.pathname = `/storage/${key}`
  const res = await fetch(url, {
    method,
    headers: method === 'PUT' ? { 'content-type': 'text/plain' } : {},
    body: method === 'PUT' ? 'x' : undefined
  })
  const text = await res.text()
  const reply = {
    status: res.status,
    headers: res.headers,
    body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text,
    text
  }
  scan(`${method} ${url.pathname}`, reply)
  return reply
}
async function bulk(path: string, rows: unknown[]): Promise<Reply> {
  const r = await bulkCall(server.url, path, B, ndjson(rows))
  const reply = {
    status: r.status,
    headers: r.headers,
    body: r.body ?? r.lines,
    text: JSON.stringify(r.body ?? r.lines)
  }
  scan(`POST ${path} ${JSON.stringify(rows)}`, reply)
  return reply
}
const enc = encodeURIComponent

/** A probe: one request (or a short fixed sequence) of B's, and the doors it goes through. */
interface Probe {
  name: string
  covers: string[]
  run(): Promise<Answer | Record<string, Answer>>
}
/** A group: the same request of B's with each of A's values, and with a random value of the same shape, in one position. */
interface Group {
  name: string
  covers: string[]
  /** A's values for this position, by label. */
  values(ids: Pool): Record<string, string>
  run(value: string): Promise<Reply>
  /** What to blank out besides the value itself (default: the value wherever it appears). */
  labels?(value: string): Array<[string, string]>
}
const get = async (path: string, digest = false) => normalise(await req('GET', path), undefined, digest)
const bRow = (externalRef: string) => ({ externalRef, payload: incidentPayload({ title: 'From the Globex ERP' }) })

const probes: Probe[] = [
  {
    name: 'B lists its SCIM users and groups, reads them and the discovery endpoints',
    covers: [
      'api/scim/v2/Users#find',
      'api/scim/v2/Users#get',
      'api/scim/v2/Groups#find',
      'api/scim/v2/Groups#get',
      'api/scim/v2/ServiceProviderConfig#find',
      'api/scim/v2/ResourceTypes#find',
      'api/scim/v2/ResourceTypes#get',
      'api/scim/v2/Schemas#find',
      'api/scim/v2/Schemas#get'
    ],
    run: async () => ({
      users: await get('/api/scim/v2/Users'),
      firstUser: await get('/api/scim/v2/Users?count=1&startIndex=2'),
      groups: await get('/api/scim/v2/Groups'),
      user: await get(`/api/scim/v2/Users/${bScimUser.id}`),
      group: await get(`/api/scim/v2/Groups/${bScimGroup.id}`),
      config: await get('/api/scim/v2/ServiceProviderConfig'),
      types: await get('/api/scim/v2/ResourceTypes'),
      type: await get('/api/scim/v2/ResourceTypes/User'),
      schemas: await get('/api/scim/v2/Schemas', true),
      schema: await get(`/api/scim/v2/Schemas/${enc('urn:ietf:params:scim:schemas:core:2.0:Group')}`, true)
    })
  },
  {
    name: 'B provisions a SCIM user and a group whose names it already has',
    covers: ['api/scim/v2/Users#create', 'api/scim/v2/Groups#create'],
    run: async () => ({
      user: normalise(await req('POST', '/api/scim/v2/Users', { body: { userName: 'GLOBEX.SCIM@globex.example' } })),
      group: normalise(await req('POST', '/api/scim/v2/Groups', { body: { displayName: 'Globex dock crew' } }))
    })
  },
  {
    name: 'B replaces and patches its SCIM user and group to what they are, and deletes them with a stale If-Match',
    covers: [
      'api/scim/v2/Users#update',
      'api/scim/v2/Users#patch',
      'api/scim/v2/Users#remove',
      'api/scim/v2/Groups#update',
      'api/scim/v2/Groups#patch',
      'api/scim/v2/Groups#remove'
    ],
    run: async () => ({
      putUser: normalise(
        await req('PUT', `/api/scim/v2/Users/${bScimUser.id}`, {
          body: {
            userName: 'globex.scim@globex.example',
            name: { givenName: 'Globex', familyName: 'Scim' },
            displayName: 'Globex Scim'
          }
        })
      ),
      patchUser: normalise(
        await req('PATCH', `/api/scim/v2/Users/${bScimUser.id}`, {
          body: { schemas: [scimUrn], Operations: [{ op: 'replace', path: 'displayName', value: 'Globex Scim' }] }
        })
      ),
      deleteUser: normalise(
        await req('DELETE', `/api/scim/v2/Users/${bScimUser.id}`, { headers: { 'if-match': 'W/"99"' } })
      ),
      putGroup: normalise(
        await req('PUT', `/api/scim/v2/Groups/${bScimGroup.id}`, {
          body: { displayName: 'Globex dock crew', members: [{ value: bScimUser.id }] }
        })
      ),
      patchGroup: normalise(
        await req('PATCH', `/api/scim/v2/Groups/${bScimGroup.id}`, {
          body: { schemas: [scimUrn], Operations: [{ op: 'add', path: 'members', value: [{ value: bScimUser.id }] }] }
        })
      ),
      deleteGroup: normalise(
        await req('DELETE', `/api/scim/v2/Groups/${bScimGroup.id}`, { headers: { 'if-match': 'W/"99"' } })
      )
    })
  },
  {
    name: 'B reads its identity log, a page at a time',
    covers: ['api/v1/identity-log#find'],
    run: async () => {
      const first = await req('GET', '/api/v1/identity-log?limit=1')
      return {
        first: normalise(first),
        next: await get(`/api/v1/identity-log?limit=1&cursor=${enc(first.body.nextCursor)}`),
        user: await get(`/api/v1/identity-log?subjectId=${bScimUser.id}`)
      }
    }
  },
  {
    name: 'B lists its incidents two at a time',
    covers: ['api/v1/records#find'],
    run: async () => {
      const first = await req('GET', '/api/v1/records?moduleKey=incident&limit=2')
      return {
        first: normalise(first),
        next: await get(`/api/v1/records?moduleKey=incident&limit=2&cursor=${enc(first.body.nextCursor)}`)
      }
    }
  },
  {
    name: "B pages through the incidents titled as some of A's are",
    covers: ['api/v1/records#find'],
    run: async () => {
      const first = await req('GET', `/api/v1/records?moduleKey=incident&payload[title]=${enc(shared)}&limit=1`)
      return {
        first: normalise(first),
        next: await get(
          `/api/v1/records?moduleKey=incident&payload[title]=${enc(shared)}&limit=1&cursor=${enc(first.body.nextCursor)}`
        )
      }
    }
  },
  {
    name: "B lists incidents in a state only A's records reach",
    covers: ['api/v1/records#find'],
    run: () => get('/api/v1/records?moduleKey=incident&state=investigating')
  },
  {
    name: 'B lists every incident by change, deleted ones included',
    covers: ['api/v1/records#find'],
    run: () => get('/api/v1/records?moduleKey=incident&includeDeleted=true&updatedSince=2020-01-01T00:00:00Z&limit=200')
  },
  {
    name: 'B lists its corrective actions and inspections',
    covers: ['api/v1/records#find'],
    run: async () => ({
      actions: await get('/api/v1/records?moduleKey=corrective-action'),
      inspections: await get('/api/v1/records?moduleKey=inspection')
    })
  },
  {
    name: 'B reads its incident and its corrective action',
    covers: ['api/v1/records#get'],
    run: async () => ({
      incident: await get(`/api/v1/records/${bInc.id}`),
      action: await get(`/api/v1/records/${bAction.id}`)
    })
  },
  {
    name: 'B creates an incident that breaks the schema',
    covers: ['api/v1/records#create'],
    run: async () =>
      normalise(await req('POST', '/api/v1/records', { body: { moduleKey: 'incident', payload: { title: aOnly } } }))
  },
  {
    name: 'B patches its incident to the value it has',
    covers: ['api/v1/records#patch'],
    run: async () =>
      normalise(
        await req('PATCH', `/api/v1/records/${bInc.id}`, {
          body: { payload: { site: bInc.payload.site } },
          headers: { 'if-match': '"1"' }
        })
      )
  },
  {
    name: 'B fires a transition its corrective action cannot take',
    covers: ['api/v1/records#transition'],
    run: async () =>
      normalise(await req('POST', `/api/v1/records/${bAction.id}:transition`, { body: { transition: 'complete' } }))
  },
  {
    name: 'B deletes its incident with a stale If-Match',
    covers: ['api/v1/records#remove'],
    run: async () => normalise(await req('DELETE', `/api/v1/records/${bInc.id}`, { headers: { 'if-match': '"7"' } }))
  },
  {
    name: "B dry-runs a bulk load keyed on A's external references and its own",
    covers: ['api/modules/:moduleKey/bulk#create'],
    run: async () =>
      normalise(
        await bulk('/api/modules/incident/bulk?dryRun=true', [bRow(aRefs[0]), bRow(aRefs[1]), bRow('GLOBEX-0001')])
      )
  },
  {
    name: 'B reads its attachment and completes it again',
    covers: ['api/v1/attachments#get', 'api/v1/attachments#complete'],
    run: async () => ({
      read: await get(`/api/v1/attachments/${bFile.id}`),
      complete: normalise(await req('POST', `/api/v1/attachments/${bFile.id}:complete`)),
      pending: normalise(await req('POST', `/api/v1/attachments/${bPending.id}:complete`))
    })
  },
  {
    name: 'B asks to attach a file type that is not allowed',
    covers: ['api/v1/attachments#create'],
    run: async () =>
      normalise(
        await req('POST', '/api/v1/attachments', {
          body: { recordId: bInc.id, fileName: 'x.exe', contentType: 'application/x-msdownload', size: 10 }
        })
      )
  },
  {
    name: 'B downloads its file from storage',
    covers: ['GET /storage/{tenantId}/{recordId}/{fileId}'],
    run: async () => normalise(await storage(bDownload, new URL(bDownload).pathname.slice('/storage/'.length)))
  },
  {
    name: "B reads its exports: finished, running while A's run, and queued while A's queue",
    covers: ['api/v1/exports#get'],
    run: async () =>
      Object.fromEntries(await Promise.all(bExports().map(async ([k, id]) => [k, await get(`/api/v1/exports/${id}`)])))
  },
  {
    name: 'B asks to export a column that does not exist',
    covers: ['api/v1/exports#create'],
    run: async () =>
      normalise(
        await req('POST', '/api/v1/exports', {
          body: { moduleKey: 'incident', format: 'csv', columns: ['number', 'noSuchColumn'] }
        })
      )
  },
  {
    name: "B asks for record series of a module without a recurrence, and for a series that is not B's",
    covers: ['api/v1/record-series#find', 'api/v1/record-series#get', 'api/v1/record-series#patch'],
    run: async () => ({
      list: normalise(await req('GET', '/api/v1/record-series?moduleKey=incident')),
      one: normalise(await req('GET', '/api/v1/record-series/00000000-0000-4000-8000-000000000000')),
      patch: normalise(
        await req('PATCH', '/api/v1/record-series/00000000-0000-4000-8000-000000000000', { body: { state: 'paused' } })
      )
    })
  },
  {
    name: 'B reads its module list, a module schema and the module catalogue',
    covers: ['api/v1/modules#find', 'api/v1/modules#get', 'api/v1/module-catalogue#find'],
    run: async () => ({
      list: await get('/api/v1/modules'),
      incident: await get('/api/v1/modules/incident', true),
      catalogue: await get('/api/v1/module-catalogue')
    })
  },
  {
    name: 'B pages through its incident audit feed and its deletions',
    covers: ['api/v1/audit-log#find'],
    run: async () => {
      const first = await req('GET', '/api/v1/audit-log?moduleKey=incident&limit=3')
      return {
        first: normalise(first),
        next: await get(`/api/v1/audit-log?moduleKey=incident&limit=3&cursor=${enc(first.body.nextCursor)}`),
        deletions: await get('/api/v1/audit-log?moduleKey=incident&action=deleted'),
        deleted: await get(`/api/v1/audit-log?recordId=${bDeleted.id}`)
      }
    }
  },
  {
    name: 'B pages through its events feed, and reads its attachment and inspection events',
    covers: ['api/v1/events#find'],
    run: async () => {
      // Positions count every tenant's events: B's cursors must not move when A writes (they carry only B's own places, sealed).
      const first = await req('GET', '/api/v1/events?limit=3')
      return {
        first: normalise(first),
        next: await get(`/api/v1/events?limit=3&after=${enc(first.body.nextCursor)}`),
        attachments: await get('/api/v1/events?types=attachment.added'),
        inspections: await get('/api/v1/events?moduleKey=inspection')
      }
    }
  },
  {
    name: 'B lists its tokens, all of them and the revoked ones, and reads one',
    covers: ['api/v1/tokens#find', 'api/v1/tokens#get'],
    run: async () => ({
      mine: await get('/api/v1/tokens'),
      all: await get('/api/v1/tokens?all=true'),
      revoked: await get('/api/v1/tokens?all=true&includeRevoked=true'),
      one: await get(`/api/v1/tokens/${bToken.id}`)
    })
  },
  {
    name: 'B asks for a token with an Idempotency-Key',
    covers: ['api/v1/tokens#create'],
    run: async () =>
      normalise(
        await req('POST', '/api/v1/tokens', {
          body: { type: 'api-key', name: 'x' },
          headers: { 'idempotency-key': 'k-1' }
        })
      )
  },
  { name: 'B asks who it is', covers: ['api/v1/me#find'], run: () => get('/api/v1/me') },
  {
    name: 'B lists its webhooks, reads one and its delivery log',
    covers: ['api/v1/webhooks#find', 'api/v1/webhooks#get', 'api/v1/webhooks/:webhookId/deliveries#find'],
    run: async () => ({
      list: await get('/api/v1/webhooks'),
      one: await get(`/api/v1/webhooks/${bHook.id}`),
      log: await get(`/api/v1/webhooks/${bHook.id}/deliveries`)
    })
  },
  {
    name: 'B subscribes an internal address, and changes, rotates, pings and replays its webhook with bodies that are refused',
    covers: [
      'api/v1/webhooks#create',
      'api/v1/webhooks#patch',
      'api/v1/webhooks#rotate-secret',
      'api/v1/webhooks#test',
      'api/v1/webhooks#replay'
    ],
    run: async () => ({
      create: normalise(
        await req('POST', '/api/v1/webhooks', { body: { url: 'https://10.0.0.1/hooks', kinds: ['record.created'] } })
      ),
      patch: normalise(await req('PATCH', `/api/v1/webhooks/${bHook.id}`, { body: { kinds: ['record.exploded'] } })),
      rotate: normalise(await req('POST', `/api/v1/webhooks/${bHook.id}:rotate-secret`, { body: { keep: true } })),
      test: normalise(await req('POST', `/api/v1/webhooks/${bHook.id}:test`, { body: { loud: true } })),
      replay: normalise(
        await req('POST', `/api/v1/webhooks/${bHook.id}:replay`, { body: { from: '2020-01-01T00:00:00Z' } })
      ),
      replayAll: normalise(
        await req('POST', `/api/v1/webhooks/${bHook.id}:replay`, {
          body: { from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z' }
        })
      )
    })
  },
  {
    name: 'B fetches its OpenAPI document, conditionally too, its Postman collection and the reference page',
    covers: ['GET /api/docs/spec.json', 'GET /api/docs/postman.json', 'GET /api/docs', 'GET /api/docs/assets/{file}'],
    run: async () => {
      const spec = await req('GET', '/api/docs/spec.json')
      const reference = await req('GET', '/api/docs')
      const asset = /\/api\/docs\/assets\/[^"']+/.exec(reference.text)![0]
      return {
        spec: normalise(spec, undefined, true),
        unchanged: normalise(
          await req('GET', '/api/docs/spec.json', { headers: { 'if-none-match': spec.headers.get('etag')! } })
        ),
        postman: await get('/api/docs/postman.json', true),
        reference: normalise(reference, undefined, true),
        asset: await get(asset, true)
      }
    }
  },
  {
    name: 'B lists its incidents through GraphQL two at a time, asks who it is by GET and fetches its SDL',
    covers: ['POST /api/graphql', 'GET /api/graphql', 'GET /api/graphql/schema.graphql'],
    run: async () => {
      const page =
        '{ edges { cursor node { id number state version payload { title site } } } pageInfo { hasNextPage endCursor } }'
      const first = await req('POST', '/api/graphql', { body: { query: `{ incidents(first: 2) ${page} }` } })
      if (first.body?.errors || first.body?.data?.incidents?.edges?.length !== 2)
        throw new Error(`setup: the GraphQL probe answered ${first.text.slice(0, 300)}`)
      const after = first.body?.data?.incidents?.pageInfo?.endCursor
      return {
        first: normalise(first),
        next: normalise(
          await req('POST', '/api/graphql', {
            body: {
              query: `query($after: String) { incidents(first: 2, after: $after) ${page} }`,
              variables: { after }
            }
          })
        ),
        me: await get(`/api/graphql?query=${enc('{ me { tenantId roles } }')}`),
        sdl: await get('/api/graphql/schema.graphql', true)
      }
    }
  },
  {
    name: 'B reads the error pages',
    covers: ['GET /errors'],
    run: async () => ({ all: await get('/errors', true), one: await get('/errors/not-found', true) })
  },
  {
    name: "B's admin opens the token settings page and sends a token form without a name",
    covers: ['page GET /settings/api-keys', 'page POST /settings/api-keys'],
    run: async () => ({
      list: normalise(await page('GET', '/settings/api-keys')),
      refused: normalise(
        await page('POST', '/settings/api-keys', {
          csrf: bSession.csrfToken,
          name: '',
          type: 'api-key',
          expires: 'never'
        })
      )
    })
  },
  {
    name: "B's admin opens the GraphQL console and loads its script",
    covers: ['page GET /settings/graphql'],
    run: async () => {
      const consolePage = await page('GET', '/settings/graphql')
      const script = /\/settings\/graphql\/assets\/console\.js\?v=[^"]+/.exec(consolePage.text)?.[0]
      if (consolePage.status !== 200 || !script)
        throw new Error(`setup: the console answered ${consolePage.status} ${consolePage.text.slice(0, 300)}`)
      return { console: normalise(consolePage), script: normalise(await page('GET', script), undefined, true) }
    }
  },
  {
    name: "B's admin opens the webhooks settings page",
    covers: ['page GET /settings/webhooks'],
    run: async () => ({ list: normalise(await page('GET', '/settings/webhooks')) })
  },
  {
    name: "B's admin sends the webhook create form with a refused URL",
    covers: ['page POST /settings/webhooks'],
    run: async () => ({
      refused: normalise(
        await page('POST', '/settings/webhooks', {
          csrf: bSession.csrfToken,
          url: 'not a url',
          kinds: 'record.created'
        })
      )
    })
  },
  {
    name: "B's safety manager opens the workspace: home, lists (one searched for A's title), the report form, a refused report and a refused export",
    covers: [
      'page GET /records',
      'page GET /records/incident',
      'page GET /records/incident/new',
      'page POST /records/incident/new',
      'page POST /records/incident/export'
    ],
    run: async () => ({
      home: normalise(await desk('GET', '/records')),
      list: normalise(await desk('GET', '/records/incident')),
      searched: normalise(await desk('GET', `/records/incident?q=${enc(aOnly)}`)),
      shared: normalise(await desk('GET', `/records/incident?q=${enc(shared)}&count=true`)),
      form: normalise(await desk('GET', '/records/incident/new')),
      refused: normalise(await desk('POST', '/records/incident/new', { submitKey: randomUUID(), title: aOnly })),
      export: normalise(await desk('POST', '/records/incident/export', { submitKey: randomUUID(), format: 'bogus' }))
    })
  },
  {
    name: 'B opens the sign-in page and signs out without a session',
    covers: ['page GET /sign-in', 'page POST /sign-out'],
    run: async () => ({
      signIn: normalise(await page('GET', '/sign-in', undefined, false)),
      signOut: normalise(await page('POST', '/sign-out', {}, false))
    })
  }
]

const ref = (value: string) => ({
  moduleKey: 'corrective-action',
  payload: { title: 'Borrowed incident', incident: value, kind: 'corrective' }
})
const groups: Group[] = [
  {
    name: 'B reads a SCIM user by id',
    covers: ['api/scim/v2/Users#get'],
    values: (a) => a.scimUsers,
    run: (id) => req('GET', `/api/scim/v2/Users/${id}`)
  },
  {
    name: 'B replaces a SCIM user by id',
    covers: ['api/scim/v2/Users#update'],
    values: (a) => a.scimUsers,
    run: (id) => req('PUT', `/api/scim/v2/Users/${id}`, { body: { userName: 'hijacked@globex.example' } })
  },
  {
    name: 'B deactivates a SCIM user by id',
    covers: ['api/scim/v2/Users#patch'],
    values: (a) => a.scimUsers,
    run: (id) =>
      req('PATCH', `/api/scim/v2/Users/${id}`, {
        body: { schemas: [scimUrn], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] }
      })
  },
  {
    name: 'B deletes a SCIM user by id',
    covers: ['api/scim/v2/Users#remove'],
    values: (a) => a.scimUsers,
    run: (id) => req('DELETE', `/api/scim/v2/Users/${id}`)
  },
  {
    name: 'B filters its SCIM users and groups on the id',
    covers: ['api/scim/v2/Users#find'],
    values: (a) => ({ ...a.scimUsers, ...a.scimGroups }),
    run: (id) => req('GET', `/api/scim/v2/Users?filter=${enc(`id eq "${id}" or groups.value eq "${id}"`)}`)
  },
  {
    name: 'B adds the id to its SCIM group as a member',
    covers: ['api/scim/v2/Groups#patch'],
    values: (a) => a.scimUsers,
    run: (id) =>
      req('PATCH', `/api/scim/v2/Groups/${bScimGroup.id}`, {
        body: { schemas: [scimUrn], Operations: [{ op: 'add', path: 'members', value: [{ value: id }] }] }
      })
  },
  {
    name: 'B reads a SCIM group by id',
    covers: ['api/scim/v2/Groups#get'],
    values: (a) => a.scimGroups,
    run: (id) => req('GET', `/api/scim/v2/Groups/${id}`)
  },
  {
    name: 'B replaces a SCIM group by id',
    covers: ['api/scim/v2/Groups#update'],
    values: (a) => a.scimGroups,
    run: (id) => req('PUT', `/api/scim/v2/Groups/${id}`, { body: { displayName: 'Hijacked' } })
  },
  {
    name: 'B empties a SCIM group by id',
    covers: ['api/scim/v2/Groups#patch'],
    values: (a) => a.scimGroups,
    run: (id) =>
      req('PATCH', `/api/scim/v2/Groups/${id}`, {
        body: { schemas: [scimUrn], Operations: [{ op: 'remove', path: 'members' }] }
      })
  },
  {
    name: 'B deletes a SCIM group by id',
    covers: ['api/scim/v2/Groups#remove'],
    values: (a) => a.scimGroups,
    run: (id) => req('DELETE', `/api/scim/v2/Groups/${id}`)
  },
  {
    name: 'B reads the identity log of the id',
    covers: ['api/v1/identity-log#find'],
    values: (a) => ({ ...a.scimUsers, ...a.scimGroups }),
    run: (id) => req('GET', `/api/v1/identity-log?subjectId=${id}`)
  },
  {
    name: "B filters its SCIM users on A's userName",
    covers: ['api/scim/v2/Users#find'],
    values: () => ({ "acme's SCIM userName": aScimName }),
    run: (v) => req('GET', `/api/scim/v2/Users?filter=${enc(`userName eq "${v}"`)}`)
  },
  {
    name: 'B reads a record by id',
    covers: ['api/v1/records#get'],
    values: (a) => a.records,
    run: (id) => req('GET', `/api/v1/records/${id}`)
  },
  {
    name: 'B patches a record by id',
    covers: ['api/v1/records#patch'],
    values: (a) => a.records,
    run: (id) => req('PATCH', `/api/v1/records/${id}`, { body: { payload: { title: 'hijacked' } } })
  },
  {
    name: 'B fires a transition by id',
    covers: ['api/v1/records#transition'],
    values: (a) => a.records,
    run: (id) => req('POST', `/api/v1/records/${id}:transition`, { body: { transition: 'cancel' } })
  },
  {
    name: 'B deletes a record by id',
    covers: ['api/v1/records#remove'],
    values: (a) => a.records,
    run: (id) => req('DELETE', `/api/v1/records/${id}`)
  },
  {
    name: "B reads a record's audit log by id",
    covers: ['api/v1/audit-log#find'],
    values: (a) => a.records,
    run: (id) => req('GET', `/api/v1/audit-log?recordId=${id}`)
  },
  {
    name: 'B creates a corrective action whose incident is the id',
    covers: ['api/v1/records#create'],
    values: (a) => a.records,
    run: (id) => req('POST', '/api/v1/records', { body: ref(id) })
  },
  {
    name: "B points its corrective action's incident at the id",
    covers: ['api/v1/records#patch'],
    values: (a) => a.records,
    run: (id) => req('PATCH', `/api/v1/records/${bAction.id}`, { body: { payload: { incident: id } } })
  },
  {
    name: 'B cancels its corrective action with the id as its incident',
    covers: ['api/v1/records#transition'],
    values: (a) => a.records,
    run: (id) =>
      req('POST', `/api/v1/records/${bAction.id}:transition`, {
        body: { transition: 'cancel', payload: { incident: id } }
      })
  },
  {
    name: 'B filters corrective actions on the id as their incident',
    covers: ['api/v1/records#find'],
    values: (a) => a.records,
    run: (id) => req('GET', `/api/v1/records?moduleKey=corrective-action&payload[incident]=${enc(id)}`)
  },
  {
    name: 'B reads an attachment by id',
    covers: ['api/v1/attachments#get'],
    values: (a) => a.attachments,
    run: (id) => req('GET', `/api/v1/attachments/${id}`)
  },
  {
    name: 'B completes an attachment by id',
    covers: ['api/v1/attachments#complete'],
    values: (a) => a.attachments,
    run: (id) => req('POST', `/api/v1/attachments/${id}:complete`)
  },
  {
    name: 'B attaches a file to the id',
    covers: ['api/v1/attachments#create'],
    values: (a) => a.records,
    run: (id) =>
      req('POST', '/api/v1/attachments', {
        body: { recordId: id, fileName: 'a.txt', contentType: 'text/plain', size: 3 }
      })
  },
  {
    name: 'B reads an export by id',
    covers: ['api/v1/exports#get'],
    values: (a) => a.exports,
    run: (id) => req('GET', `/api/v1/exports/${id}`)
  },
  {
    name: 'B reads a webhook by id',
    covers: ['api/v1/webhooks#get'],
    values: (a) => a.webhooks,
    run: (id) => req('GET', `/api/v1/webhooks/${id}`)
  },
  {
    name: "B reads a webhook's delivery log by id",
    covers: ['api/v1/webhooks/:webhookId/deliveries#find'],
    values: (a) => a.webhooks,
    run: (id) => req('GET', `/api/v1/webhooks/${id}/deliveries`)
  },
  {
    name: 'B disables a webhook by id',
    covers: ['api/v1/webhooks#patch'],
    values: (a) => a.webhooks,
    run: (id) => req('PATCH', `/api/v1/webhooks/${id}`, { body: { enabled: false } })
  },
  {
    name: 'B deletes a webhook by id',
    covers: ['api/v1/webhooks#remove'],
    values: (a) => a.webhooks,
    run: (id) => req('DELETE', `/api/v1/webhooks/${id}`)
  },
  {
    name: "B rotates a webhook's secret by id",
    covers: ['api/v1/webhooks#rotate-secret'],
    values: (a) => a.webhooks,
    run: (id) => req('POST', `/api/v1/webhooks/${id}:rotate-secret`)
  },
  {
    name: 'B pings a webhook by id',
    covers: ['api/v1/webhooks#test'],
    values: (a) => a.webhooks,
    run: (id) => req('POST', `/api/v1/webhooks/${id}:test`)
  },
  {
    name: 'B replays events to a webhook by id',
    covers: ['api/v1/webhooks#replay'],
    values: (a) => a.webhooks,
    run: (id) =>
      req('POST', `/api/v1/webhooks/${id}:replay`, {
        body: { from: '2020-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' }
      })
  },
  {
    name: "B replays one of A's events to its own webhook",
    covers: ['api/v1/webhooks#replay'],
    values: (a) => a.records,
    run: (id) => req('POST', `/api/v1/webhooks/${bHook.id}:replay`, { body: { eventId: id } })
  },
  {
    name: 'B reads a token by id',
    covers: ['api/v1/tokens#get'],
    values: (a) => a.tokens,
    run: (id) => req('GET', `/api/v1/tokens/${id}`)
  },
  {
    name: 'B revokes a token by id',
    covers: ['api/v1/tokens#remove'],
    values: (a) => a.tokens,
    run: (id) => req('DELETE', `/api/v1/tokens/${id}`)
  },
  {
    name: "B's admin revokes a token by id on the settings page",
    covers: ['page POST /settings/api-keys/x/revoke'],
    values: (a) => a.tokens,
    run: (id) => page('POST', `/settings/api-keys/${id}/revoke`, { csrf: bSession.csrfToken })
  },
  {
    name: "B's admin sends a test event to a webhook by id on the settings page",
    covers: ['page POST /settings/webhooks/x/test'],
    values: (a) => a.webhooks,
    run: (id) => page('POST', `/settings/webhooks/${id}/test`, { csrf: bSession.csrfToken })
  },
  {
    name: "B's admin resumes a webhook by id on the settings page",
    covers: ['page POST /settings/webhooks/x/resume'],
    values: (a) => a.webhooks,
    run: (id) => page('POST', `/settings/webhooks/${id}/resume`, { csrf: bSession.csrfToken })
  },
  {
    name: "B's admin opens a webhook's edit page by id",
    covers: ['page GET /settings/webhooks/x/edit'],
    values: (a) => a.webhooks,
    run: (id) => page('GET', `/settings/webhooks/${id}/edit`)
  },
  {
    name: "B's admin saves a webhook's edit form by id",
    covers: ['page POST /settings/webhooks/x/edit'],
    values: (a) => a.webhooks,
    run: (id) =>
      page('POST', `/settings/webhooks/${id}/edit`, {
        csrf: bSession.csrfToken,
        url: 'https://example.com/hook',
        kinds: 'record.created'
      })
  },
  {
    name: "B's admin rotates a webhook's secret by id on the settings page",
    covers: ['page POST /settings/webhooks/x/rotate-secret'],
    values: (a) => a.webhooks,
    run: (id) => page('POST', `/settings/webhooks/${id}/rotate-secret`, { csrf: bSession.csrfToken })
  },
  {
    name: "B's admin opens a webhook's delete confirmation by id",
    covers: ['page GET /settings/webhooks/x/delete'],
    values: (a) => a.webhooks,
    run: (id) => page('GET', `/settings/webhooks/${id}/delete`)
  },
  {
    name: "B's admin deletes a webhook by id on the settings page",
    covers: ['page POST /settings/webhooks/x/delete'],
    values: (a) => a.webhooks,
    run: (id) => page('POST', `/settings/webhooks/${id}/delete`, { csrf: bSession.csrfToken })
  },
  {
    name: "B's safety manager opens a record page by id",
    covers: ['page GET /records/incident/00000000-0000-4000-8000-000000000000'],
    values: (a) => a.records,
    run: (id) => desk('GET', `/records/incident/${id}`)
  },
  {
    name: "B's safety manager opens a record's report by id",
    covers: ['page GET /records/incident/00000000-0000-4000-8000-000000000000/report.pdf'],
    values: (a) => a.records,
    run: (id) => desk('GET', `/records/incident/${id}/report.pdf`)
  },
  {
    name: "B's safety manager opens and sends a record's edit form by id",
    covers: [
      'page GET /records/incident/00000000-0000-4000-8000-000000000000/edit',
      'page POST /records/incident/00000000-0000-4000-8000-000000000000/edit'
    ],
    values: (a) => a.records,
    run: (id) => deskForm(`/records/incident/${id}/edit`, { version: '1', title: 'x' })
  },
  {
    name: "B's safety manager opens and sends a record's transition form by id",
    covers: [
      'page GET /records/incident/00000000-0000-4000-8000-000000000000/transition/close',
      'page POST /records/incident/00000000-0000-4000-8000-000000000000/transition/close'
    ],
    values: (a) => a.records,
    run: (id) => deskForm(`/records/incident/${id}/transition/close`, { version: '1' })
  },
  {
    name: "B's safety manager opens and sends a record's delete confirmation by id",
    covers: [
      'page GET /records/incident/00000000-0000-4000-8000-000000000000/delete',
      'page POST /records/incident/00000000-0000-4000-8000-000000000000/delete'
    ],
    values: (a) => a.records,
    run: (id) => deskForm(`/records/incident/${id}/delete`, { version: '1' })
  },
  {
    name: "B's safety manager downloads an attachment by id under one of B's records",
    covers: [
      'page GET /records/incident/00000000-0000-4000-8000-000000000000/attachments/00000000-0000-4000-8000-000000000000'
    ],
    values: (a) => a.attachments,
    run: (id) => desk('GET', `/records/incident/${bInc.id}/attachments/${id}`)
  },
  {
    name: "B's safety manager follows an export's progress page and download by id",
    covers: [
      'page GET /exports/00000000-0000-4000-8000-000000000000',
      'page GET /exports/00000000-0000-4000-8000-000000000000/download'
    ],
    values: (a) => a.exports,
    run: async (id) => {
      const progress = await desk('GET', `/exports/${id}`)
      const download = await desk('GET', `/exports/${id}/download`)
      return {
        status: progress.status,
        headers: progress.headers,
        body: undefined,
        text: `${progress.text}\n${download.status}\n${download.text}`
      }
    }
  },
  {
    name: 'B reads the id as a module',
    covers: ['api/v1/modules#get'],
    values: (a) => ({ 'acme incident': a.records['acme incident'] }),
    run: (id) => req('GET', `/api/v1/modules/${id}`)
  },
  {
    name: 'B bulk-loads into the id as a module',
    covers: ['api/modules/:moduleKey/bulk#create'],
    values: (a) => ({ 'acme incident': a.records['acme incident'] }),
    run: (id) => bulk(`/api/modules/${id}/bulk?dryRun=true`, [bRow('GLOBEX-0001')])
  },
  {
    name: "B sends its signed download URL to the id's storage key",
    covers: ['GET /storage/{tenantId}/{recordId}/{fileId}'],
    values: (a) => a.attachments,
    run: (id) => storage(bDownload, `acme/${aInc.id}/${id}`)
  },
  {
    name: "B sends its signed upload URL to the id's storage key",
    covers: ['PUT /storage/{tenantId}/{recordId}/{fileId}'],
    values: (a) => a.attachments,
    run: (id) => storage(bUpload, `acme/${aInc.id}/${id}`, 'PUT')
  },
  {
    name: 'B reads a record by id through GraphQL',
    covers: ['POST /api/graphql'],
    values: (a) => a.records,
    run: (id) =>
      req('POST', '/api/graphql', {
        body: { query: 'query($id: ID!) { record(id: $id) { id number state } }', variables: { id } }
      })
  },
  {
    name: 'B deletes a record by id through GraphQL',
    covers: ['POST /api/graphql'],
    values: (a) => a.records,
    run: (id) =>
      req('POST', '/api/graphql', {
        body: { query: 'mutation($id: ID!) { deleteRecord(id: $id) { id } }', variables: { id } }
      })
  },
  {
    name: 'B pages its incidents through GraphQL with the cursor',
    covers: ['POST /api/graphql'],
    values: () => ({ "acme's cursor": aCursor, "acme's feed cursor": aFeedCursor }),
    run: (v) =>
      req('POST', '/api/graphql', {
        body: {
          query: 'query($after: String) { incidents(first: 1, after: $after) { nodes { id } } }',
          variables: { after: v }
        }
      })
  },
  // A's values that are no ids: titles, external references, cursors, numbers, the tenant id.
  {
    name: 'B filters incidents on the title',
    covers: ['api/v1/records#find'],
    values: () => ({ "acme's title": aOnly }),
    run: (v) => req('GET', `/api/v1/records?moduleKey=incident&payload[title]=${enc(v)}`)
  },
  {
    name: 'B filters incidents on the title, one at a time',
    covers: ['api/v1/records#find'],
    values: () => ({ "acme's title": aOnly }),
    run: (v) => req('GET', `/api/v1/records?moduleKey=incident&payload[title]=${enc(v)}&limit=1`)
  },
  {
    name: 'B filters incidents on the title among others',
    covers: ['api/v1/records#find'],
    values: () => ({ "acme's title": aOnly }),
    run: (v) =>
      req(
        'GET',
        `/api/v1/records?moduleKey=incident&payload[title][in]=${enc(`${v},Dock leveller trapped a foot`)}&limit=1`
      )
  },
  {
    name: 'B filters incidents on the external reference',
    covers: ['api/v1/records#find'],
    values: () => ({ "acme's reference": aRefs[0], "acme's later reference": aRefs[1] }),
    run: (v) => req('GET', `/api/v1/records?moduleKey=incident&externalRef=${enc(v)}`)
  },
  {
    name: 'B pages its incidents with the cursor',
    covers: ['api/v1/records#find'],
    values: () => ({ "acme's cursor": aCursor, "acme's feed cursor": aFeedCursor }),
    run: (v) => req('GET', `/api/v1/records?moduleKey=incident&limit=1&cursor=${enc(v)}`)
  },
  {
    name: 'B pages its events feed with the cursor',
    covers: ['api/v1/events#find'],
    values: () => ({ "acme's cursor": aCursor, "acme's events cursor": aEventsCursor }),
    run: (v) => req('GET', `/api/v1/events?limit=1&after=${enc(v)}`)
  },
  {
    name: 'B pages its audit feed with the cursor',
    covers: ['api/v1/audit-log#find'],
    values: () => ({ "acme's cursor": aCursor, "acme's feed cursor": aFeedCursor }),
    run: (v) => req('GET', `/api/v1/audit-log?moduleKey=incident&limit=1&cursor=${enc(v)}`)
  },
  // One group per module: the 404 for a number names the module whose number pattern the text has (B's own modules, the text's shape; no data).
  {
    name: 'B asks for a record by an incident number',
    covers: ['api/v1/records#get'],
    values: () => ({ "acme's number": aInc.number }),
    run: (v) => req('GET', `/api/v1/records/${v}`)
  },
  {
    name: 'B asks for a record by a corrective action number',
    covers: ['api/v1/records#get'],
    values: () => ({ "acme's corrective action number": aAction.number }),
    run: (v) => req('GET', `/api/v1/records/${v}`)
  },
  {
    name: 'B signs in to the tenant with its own name and password',
    covers: ['page POST /sign-in'],
    values: () => ({ 'acme as tenant': 'acme' }),
    labels: (v) => [[`value="${v}"`, 'value="<value>"']],
    run: (v) => page('POST', '/sign-in', { tenant: v, userName: 'dana', password, next: '/settings/api-keys' }, false)
  },
  {
    name: 'B starts single sign-on for the tenant',
    covers: ['page GET /sign-in/oidc/acme'],
    values: () => ({ 'acme as tenant': 'acme' }),
    run: (v) => page('GET', `/sign-in/oidc/${v}?next=/settings/api-keys`, undefined, false)
  },
  {
    name: "B sends an IdP answer to the tenant's sign-in callback",
    covers: ['page GET /sign-in/oidc/acme/callback'],
    values: () => ({ 'acme as tenant': 'acme' }),
    run: (v) => page('GET', `/sign-in/oidc/${v}/callback?code=c&state=s`, undefined, false)
  }
]
const randomOf = (values: Record<string, string>): string => {
  const sample = Object.values(values)[0]
  if (sample === aOnly) return `Title ${randomUUID()}`
  if (aRefs.includes(sample)) return `REF-${randomUUID().slice(0, 8)}`
  if (sample === aCursor)
    return `${Buffer.from(JSON.stringify({ s: '[]', p: [1] })).toString('base64url')}.${randomUUID().slice(0, 16)}`
  if (sample === 'acme') return `t${randomUUID().slice(0, 8)}`
  const number = /^([A-Z]+)-(\d{4})-(\d+)$/.exec(sample)
  if (number) return `${number[1]}-${number[2]}-${'9'.repeat(number[3].length)}`
  return randomUUID()
}

let bExports = (): Array<[string, string]> => [['finished', bDone.id]]

/** B's whole probe set: answers by name; a group's answers by name and value label. */
async function probeAll(ids: Pool): Promise<Map<string, Answer | Record<string, Answer>>> {
  await eventsSettled(server.platform.db.system)
  const out = new Map<string, Answer | Record<string, Answer>>()
  for (const p of probes) out.set(p.name, await p.run())
  for (const g of groups) {
    const values = g.values(ids)
    for (const [label, value] of [...Object.entries(values), ['random', randomOf(values)]]) {
      const reply = await g.run(value)
      out.set(
        `${g.name} (${label})`,
        normalise(
          reply,
          new Map(
            g.labels?.(value) ?? [
              [value, '<value>'],
              [enc(value), '<value>']
            ]
          )
        )
      )
    }
  }
  return out
}

/**
 * B's own writes, one step: two incidents and a page of them, an incident with A's later
 * external reference, a bulk load of A's references, an export of A's title (seen while
 * it runs and once done), a token created and revoked, then everything deleted again.
 */
const steps = new Steps()
async function bStep(): Promise<Record<string, Answer>> {
  const fresh = new Map<string, string>()
  const out: Record<string, Answer> = {}
  const keep = (name: string, reply: Reply) => ((out[name] = relative(normalise(reply), steps, fresh)), reply.body)
  const made = [
    keep(
      'B creates an incident',
      await req('POST', '/api/v1/records', {
        body: { moduleKey: 'incident', payload: incidentPayload({ title: stepTitle }) }
      })
    ),
    keep(
      'B creates another incident',
      await req('POST', '/api/v1/records', {
        body: { moduleKey: 'incident', payload: incidentPayload({ title: stepTitle }) }
      })
    )
  ]
  keep(
    'B pages through the incidents it just created',
    await req('GET', `/api/v1/records?moduleKey=incident&payload[title]=${enc(stepTitle)}&limit=1`)
  )
  made.push(
    keep(
      'B creates an incident with the external reference A later uses',
      await req('POST', '/api/v1/records', {
        body: { moduleKey: 'incident', payload: incidentPayload({ title: stepTitle }), externalRef: aRefs[1] }
      })
    )
  )
  keep('B deletes that incident again', await req('DELETE', `/api/v1/records/${made.pop().id}`))
  const loaded = await bulk('/api/modules/incident/bulk', [bRow(aRefs[0]), bRow(aRefs[1])])
  keep("B bulk-loads rows keyed on A's external references", loaded)
  made.push(...(loaded.body as any[]).filter((l) => l.id))
  gate.hold('globex')
  const job = await req('POST', '/api/v1/exports', {
    body: { moduleKey: 'incident', format: 'csv', filters: { payload: { title: aOnly } } }
  })
  keep("B starts an export of A's title", job)
  await gate.arrived('globex')
  keep("B's export while it runs", await exportIn(B, job.body.id, ['running', 'failed']))
  gate.release('globex')
  keep("B's export once done", await exportIn(B, job.body.id, ['succeeded', 'failed']))
  const token = keep(
    'B creates a token',
    await req('POST', '/api/v1/tokens', { body: { type: 'api-key', name: 'Globex step key' } })
  )
  keep('B revokes it', await req('DELETE', `/api/v1/tokens/${token.id}`))
  for (const [i, r] of made.entries())
    keep(`B deletes its new record ${i + 1}`, await req('DELETE', `/api/v1/records/${r.id}`))
  return out
}

/** A's data changes: more records with B's filter values, transitions, deletions, exports, files, tokens. */
async function changeA(): Promise<Pool> {
  const more = [
    await create(A, 'incident', incidentPayload({ title: aOnly }), aRefs[1]),
    await create(A, 'incident', incidentPayload({ title: aOnly }))
  ]
  for (let i = 0; i < 3; i++) more.push(await create(A, 'incident', incidentPayload()))
  const loaded = await bulkCall(
    server.url,
    '/api/modules/incident/bulk',
    A,
    ndjson([1, 2, 3, 4].map((i) => ({ externalRef: `ACME-BULK-${i}`, payload: incidentPayload() })))
  )
  if (loaded.status !== 200) throw new Error('setup: A bulk load failed')
  must(
    await req('POST', `/api/v1/records/${aInc.id}:transition`, {
      token: A,
      body: { transition: 'start-investigation', payload: { investigationLead: randomUUID() } }
    }),
    200,
    'transition'
  )
  must(
    await req('PATCH', `/api/v1/records/${aInc2.id}`, { token: A, body: { payload: { severity: 'high' } } }),
    200,
    'patch'
  )
  await remove(A, more[2].id)
  await create(A, 'corrective-action', { title: 'Second detector', incident: more[0].id, kind: 'corrective' })
  for (let i = 0; i < 2; i++)
    aExports.push(
      await startExport(A, { moduleKey: 'incident', format: 'csv', filters: { payload: { title: shared } } })
    )
  const file = await attach(A, more[0].id)
  await attach(A, more[1].id, false)
  const tokens = [0, 1].map(async (i) =>
    must(
      await req('POST', '/api/v1/tokens', { token: A, body: { type: 'api-key', name: `Acme key ${i}` } }),
      201,
      'token'
    )
  )
  const [kept, revoked] = await Promise.all(tokens)
  must(await req('DELETE', `/api/v1/tokens/${revoked.id}`, { token: A }), 200, 'revoke')
  for (let i = 0; i < 5; i++) await req('GET', '/api/v1/records?moduleKey=incident&limit=1', { token: A })
  const scimUser = must(
    await req('POST', '/api/scim/v2/Users', { token: A, body: { userName: 'second.lead@acme.example' } }),
    201,
    'scim user'
  )
  const scimGone = must(
    await req('POST', '/api/scim/v2/Users', { token: A, body: { userName: 'gone.lead@acme.example' } }),
    201,
    'scim user'
  )
  must(
    await req('PATCH', `/api/scim/v2/Groups/${aScimGroup.id}`, {
      token: A,
      body: {
        schemas: [scimUrn],
        Operations: [{ op: 'add', path: 'members', value: [{ value: scimUser.id }, { value: scimGone.id }] }]
      }
    }),
    204,
    'scim members'
  )
  must(
    await req('PATCH', `/api/scim/v2/Users/${aScimUser.id}`, {
      token: A,
      body: { schemas: [scimUrn], Operations: [{ op: 'replace', path: 'title', value: 'Chiller lead' }] }
    }),
    204,
    'scim patch'
  )
  must(await req('DELETE', `/api/scim/v2/Users/${scimGone.id}`, { token: A }), 204, 'scim delete')
  const scimGroup = must(
    await req('POST', '/api/scim/v2/Groups', {
      token: A,
      body: { displayName: 'reporter', members: [{ value: scimUser.id }] }
    }),
    201,
    'scim group'
  )
  const hook = must(
    await req('POST', '/api/v1/webhooks', {
      token: A,
      body: { url: 'https://203.0.113.10/acme-hooks-2', kinds: ['webhook.test'] }
    }),
    201,
    'webhook'
  )
  must(await req('POST', `/api/v1/webhooks/${aHook.id}:rotate-secret`, { token: A }), 200, 'rotate')
  must(
    await req('PATCH', `/api/v1/webhooks/${aHook.id}`, {
      token: A,
      body: { kinds: ['webhook.test', 'record.created'], enabled: false }
    }),
    200,
    'webhook patch'
  )
  const pool: Pool = {
    scimUsers: { ...aIds.scimUsers, 'acme new scim user': scimUser.id, 'acme deleted scim user': scimGone.id },
    scimGroups: { ...aIds.scimGroups, 'acme new scim group': scimGroup.id },
    records: { ...aIds.records, 'acme new incident': more[0].id, 'acme new deleted incident': more[2].id },
    attachments: { ...aIds.attachments, 'acme new attachment': file.id },
    exports: { ...aIds.exports, 'acme new export': aExports[aExports.length - 1].id },
    tokens: { ...aIds.tokens, 'acme new token': kept.id, 'acme revoked token': revoked.id },
    webhooks: { ...aIds.webhooks, 'acme new webhook': hook.id }
  }
  secretIds(pool)
  aSecrets.set(kept.prefix, "A's token prefix")
  return pool
}

// ---- The runs. B's steps 0 and 1 bracket nothing of A's; steps 1 and 2 bracket all of A's changes.
await bStep()
const step1 = await bStep()
// While B probes: one export of B's running (held before its file is stored), two queued behind B's busy slots.
gate.hold('globex')
const bRunning = await startExport(B, { moduleKey: 'incident', format: 'csv', filters: { payload: { title: shared } } })
await gate.arrived('globex')
const bSlots = await holdExportSlots('globex')
const bQueued = [
  await startExport(B, { moduleKey: 'corrective-action', format: 'csv', filters: { payload: { incident: aInc.id } } }),
  await startExport(B, { moduleKey: 'incident', format: 'csv', filters: { externalRef: aRefs[0] } })
]
bExports = () => [
  ['finished', bDone.id],
  ['running', bRunning.id],
  ['first queued', bQueued[0].id],
  ['second queued', bQueued[1].id]
]
const before = await probeAll(aIds)
const aLater = await changeA()
const after = await probeAll(aLater)
gate.release('globex')
for (const l of bSlots) await l.release()
const bFinished = await Promise.all(
  [bRunning, ...bQueued].map(async (e) => (await exportIn(B, e.id, ['succeeded', 'failed'])).body)
)
const step2 = await bStep()
// A's exports go too, so that the server closes without waiting on them.
gate.release('acme')
for (const l of leases.splice(0)) await l.release()
await Promise.all(aExports.map((e) => exportIn(A, e.id, ['succeeded', 'failed'])))

t.test('every service method, documented route and settings page has a probe in the table', async (t) => {
  const table = [...probes, ...groups].flatMap((p) => p.covers)
  for (const door of doors(server.running.app)) {
    t.ok(
      table.some((entry) => covers(door, entry)),
      `${door}: add a probe for it to the probe table of test/tenancy/side-channel.test.ts`
    )
  }
})

t.test("B's answers to its whole probe set are the same before and after A's data changes", async (t) => {
  for (const [name, answer] of before) t.same(after.get(name), answer, name)
})

t.test(
  "A's ids, numbers, titles, references, cursors and tenant id read to B exactly like random values",
  async (t) => {
    for (const [run, answers] of [
      ['before', before],
      ['after', after]
    ] as const) {
      for (const g of groups) {
        const random = answers.get(`${g.name} (random)`) as Answer
        t.ok(random.status >= 200 && random.status < 500, `${g.name}: a random value is answered (${random.status})`)
        for (const label of Object.keys(g.values(run === 'before' ? aIds : aLater))) {
          t.same(answers.get(`${g.name} (${label})`), random, `${run}: ${g.name} (${label}) reads like a random value`)
        }
      }
    }
  }
)

t.test(
  "B's own writes get the same numbers, activity ids, cursor positions and outcomes whether or not A wrote in between",
  async (t) => {
    for (const [name, answer] of Object.entries(step1)) t.same(step2[name], answer, name)
  }
)

t.test("B's bulk loads keyed on A's external references create B's records, never update or conflict", async (t) => {
  const dryRun = "B dry-runs a bulk load keyed on A's external references and its own"
  const planned = [
    { status: 'valid', action: 'create' },
    { status: 'valid', action: 'create' },
    { status: 'valid', action: 'update' },
    { summary: { valid: 3, errors: 0 } }
  ]
  for (const [run, answers] of [
    ['before', before],
    ['after', after]
  ] as const)
    t.match((answers.get(dryRun) as Answer).body, planned, `${run}: a dry run plans to create`)
  for (const step of [step1, step2]) {
    t.match(
      step["B bulk-loads rows keyed on A's external references"].body,
      [{ status: 'created' }, { status: 'created' }, { summary: { created: 2, updated: 0, errors: 0 } }],
      'a load creates'
    )
    t.match(step['B creates an incident with the external reference A later uses'], { status: 201 })
  }
})

t.test(
  "B's export progress and queue positions count only B's records and jobs while A's exports run and queue",
  async (t) => {
    for (const [run, answers] of [
      ['before', before],
      ['after', after]
    ] as const) {
      const exports = answers.get(
        "B reads its exports: finished, running while A's run, and queued while A's queue"
      ) as Record<string, Answer>
      t.match(
        exports.running.body,
        { status: 'running', progress: { rowsDone: 2, rowsTotal: 2 }, queuePosition: null },
        `${run}: the running export counts B's two records titled as A's are (both read into its chunks, its file held before it is stored)`
      )
      t.match(
        exports['first queued'].body,
        { status: 'queued', queuePosition: 1, progress: { rowsTotal: null } },
        `${run}: first in B's queue`
      )
      t.match(exports['second queued'].body, { status: 'queued', queuePosition: 2 }, `${run}: second in B's queue`)
    }
    t.same(
      bFinished.map((e) => [e.status, e.progress]),
      [
        ['succeeded', { rowsDone: 2, rowsTotal: 2 }],
        ['succeeded', { rowsDone: 0, rowsTotal: 0 }],
        ['succeeded', { rowsDone: 0, rowsTotal: 0 }]
      ]
    )
    for (const step of [step1, step2])
      t.match(
        step["B's export while it runs"].body,
        { status: 'running', progress: { rowsDone: 0, rowsTotal: 0 } },
        "an export of A's title counts nothing while it runs"
      )
  }
)

t.test("B's first records are numbered from 1 although A numbered its own first", async (t) => {
  t.match(bInc.number, /^INC-\d{4}-00001$/)
  t.match(bAction.number, /^CA-\d{4}-0001$/)
})

t.test("no answer to B carries an id, title, reference or token prefix of A's that B did not send", async (t) => {
  t.same(leaks, [])
})

t.test("A's requests do not move B's rate-limit count", async (t) => {
  // A key of B's with a window of its own, so that no earlier hit leaves the window meanwhile.
  const bKey = (
    await server.platform.credentials.create({ tenantId: 'globex', kind: 'api_key', name: 'rate-limit probe' })
  ).token
  const remaining = async (token: string) =>
    Number((await req('GET', '/api/v1/me', { token })).headers.get('x-ratelimit-remaining'))
  const limit = server.platform.limitsFor('globex').requestsPerMinute
  t.equal(await remaining(bKey), limit - 1)
  for (let i = 0; i < 5; i++) await remaining(A)
  t.equal(await remaining(bKey), limit - 2, "only B's own requests counted")
})
