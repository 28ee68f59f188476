import feathers from '@feathersjs/feathers'
import t from '../helpers/tap.ts'
import { userWithToken } from '../helpers/identity.ts'
import { incidentPayload, startTestServer } from '../helpers/server.ts'

const server = await startTestServer({ webhooks: { allowedCidrs: ['203.0.113.0/24'] } })
t.teardown(() => server.close())

// An action owner has rights in corrective actions only: no read right on incidents.
const outsider = await userWithToken(server, 'acme', ['action-owner'])
const incident = (
  await server.request('POST', '/api/v1/records', {
    body: { moduleKey: 'incident', payload: incidentPayload({ title: 'Solvent spill in bay 7' }) }
  })
).body
// Another user's token, for the token endpoints (their 404 echoes the id asked for).
const someToken = (await server.request('GET', '/api/v1/tokens')).body.items[0].id
// An attachment of the incident, uploaded by the tenant's key.
const attachmentBody = Buffer.from('%PDF-1.4 secret report')
const upload = (
  await server.request('POST', '/api/v1/attachments', {
    body: {
      recordId: incident.id,
      fileName: 'secret-report.pdf',
      contentType: 'application/pdf',
      size: attachmentBody.length
    }
  })
).body
await fetch(upload.upload.url, { method: 'PUT', headers: upload.upload.headers, body: new Uint8Array(attachmentBody) })
const incidentAttachment = upload.id
// An export of incidents made by the tenant's key (it stays queued: this server runs no jobs).
const incidentExport = (
  await server.request('POST', '/api/v1/exports', { body: { moduleKey: 'incident', format: 'csv' } })
).body.id
// A provisioned user and group (SCIM needs the scim scope and the admin role: the tenant's key has both).
const scim = (path: string, body: unknown) =>
  server.request('POST', `/api/scim/v2/${path}`, { body, headers: { 'content-type': 'application/scim+json' } })
const scimUser = (
  await scim('Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'hidden.person@example.com'
  })
).body.id
const scimGroup = (
  await scim('Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'reporter' })
).body.id
// A webhook subscription of the tenant (a public documentation address: created, never called, as it takes test pings only).
const webhook = (
  await server.request('POST', '/api/v1/webhooks', {
    body: { url: 'https://203.0.113.10/hook', kinds: ['webhook.test'] }
  })
).body.id
const secrets = [
  'secret-report.pdf',
  incident.id,
  incident.number,
  'Solvent spill in bay 7',
  'hidden.person@example.com',
  scimUser
]

const { getServiceOptions } = feathers

type Call = {
  method: string
  path: string
  body?: unknown
  raw?: string
  headers?: Record<string, string>
  expect: number[]
}

/**
 * Every method of every registered service, as the outsider would call it over HTTP,
 * aimed at the incident. The test fails if a service gains a method not listed here.
 */
const calls: Record<string, Call[]> = {
  'api/v1/records.find': [
    { method: 'GET', path: '/api/v1/records?moduleKey=incident', expect: [403] },
    { method: 'GET', path: '/api/v1/records?moduleKey=incident&includeDeleted=true', expect: [403] },
    { method: 'GET', path: `/api/v1/records?moduleKey=incident&updatedSince=2000-01-01T00:00:00Z`, expect: [403] }
  ],
  'api/v1/records.get': [{ method: 'GET', path: `/api/v1/records/${incident.id}`, expect: [403] }],
  'api/v1/records.create': [
    {
      method: 'POST',
      path: '/api/v1/records',
      body: { moduleKey: 'incident', payload: incidentPayload() },
      expect: [403]
    }
  ],
  'api/v1/records.patch': [
    { method: 'PATCH', path: `/api/v1/records/${incident.id}`, body: { payload: { title: 'x' } }, expect: [403] }
  ],
  'api/v1/records.transition': [
    {
      method: 'POST',
      path: `/api/v1/records/${incident.id}:transition`,
      body: { transition: 'dismiss' },
      expect: [403]
    }
  ],
  'api/v1/records.remove': [{ method: 'DELETE', path: `/api/v1/records/${incident.id}`, expect: [403] }],
  'api/modules/:moduleKey/bulk.create': [
    {
      method: 'POST',
      path: '/api/modules/incident/bulk',
      raw: JSON.stringify({ payload: incidentPayload(), externalRef: 'X' }) + '\n',
      headers: { 'content-type': 'application/x-ndjson' },
      expect: [403]
    },
    {
      method: 'POST',
      path: '/api/modules/incident/bulk?dryRun=true',
      raw: JSON.stringify({ payload: incidentPayload() }) + '\n',
      headers: { 'content-type': 'application/x-ndjson' },
      expect: [403]
    }
  ],
  'api/v1/attachments.create': [
    {
      method: 'POST',
      path: '/api/v1/attachments',
      body: { recordId: incident.id, fileName: 'a.pdf', contentType: 'application/pdf', size: 10 },
      expect: [403]
    }
  ],
  'api/v1/attachments.get': [{ method: 'GET', path: `/api/v1/attachments/${incidentAttachment}`, expect: [403] }],
  'api/v1/attachments.complete': [
    { method: 'POST', path: `/api/v1/attachments/${incidentAttachment}:complete`, expect: [403] }
  ],
  'api/v1/exports.create': [
    { method: 'POST', path: '/api/v1/exports', body: { moduleKey: 'incident', format: 'csv' }, expect: [403] }
  ],
  'api/v1/exports.get': [{ method: 'GET', path: `/api/v1/exports/${incidentExport}`, expect: [404] }],
  // Rights before the definition: whether incident has a recurrence is not told to a caller who may not read it.
  'api/v1/record-series.find': [{ method: 'GET', path: '/api/v1/record-series?moduleKey=incident', expect: [403] }],
  'api/v1/record-series.get': [
    { method: 'GET', path: '/api/v1/record-series/00000000-0000-4000-8000-000000000000', expect: [404] }
  ],
  'api/v1/record-series.patch': [
    {
      method: 'PATCH',
      path: '/api/v1/record-series/00000000-0000-4000-8000-000000000000',
      body: { state: 'paused' },
      expect: [404]
    }
  ],
  'api/v1/modules.find': [{ method: 'GET', path: '/api/v1/modules', expect: [200] }],
  'api/v1/modules.get': [{ method: 'GET', path: '/api/v1/modules/incident', expect: [403] }],
  // What the deployment offers (modules, not records): every caller with modules:read sees it.
  'api/v1/module-catalogue.find': [{ method: 'GET', path: '/api/v1/module-catalogue', expect: [200] }],
  'api/v1/audit-log.find': [
    { method: 'GET', path: `/api/v1/audit-log?recordId=${incident.id}`, expect: [403] },
    { method: 'GET', path: '/api/v1/audit-log?moduleKey=incident', expect: [403] }
  ],
  'api/v1/tokens.find': [{ method: 'GET', path: '/api/v1/tokens?all=true', expect: [200] }],
  'api/v1/tokens.get': [{ method: 'GET', path: `/api/v1/tokens/${someToken}`, expect: [404] }],
  'api/v1/tokens.create': [
    {
      method: 'POST',
      path: '/api/v1/tokens',
      body: { type: 'service-account', name: 'x', scopes: ['records:read:incident'] },
      expect: [403]
    }
  ],
  'api/v1/tokens.remove': [{ method: 'DELETE', path: `/api/v1/tokens/${someToken}`, expect: [404] }],
  'api/v1/me.find': [{ method: 'GET', path: '/api/v1/me', expect: [200] }],
  'api/v1/identity-log.find': [{ method: 'GET', path: '/api/v1/identity-log', expect: [403] }],
  // The action owner reads the feed of its corrective actions, never the incident's events.
  'api/v1/events.find': [
    { method: 'GET', path: '/api/v1/events', expect: [200] },
    { method: 'GET', path: '/api/v1/events?moduleKey=incident', expect: [403] },
    { method: 'GET', path: '/api/v1/events?types=record.created,user.provisioned', expect: [200] }
  ],
  // Webhooks are admins' only: every call is refused before the subscription is looked up.
  'api/v1/webhooks.find': [{ method: 'GET', path: '/api/v1/webhooks', expect: [403] }],
  'api/v1/webhooks.get': [{ method: 'GET', path: `/api/v1/webhooks/${webhook}`, expect: [403] }],
  'api/v1/webhooks.create': [
    {
      method: 'POST',
      path: '/api/v1/webhooks',
      body: { url: 'https://203.0.113.10/x', kinds: ['record.created'], modules: ['incident'] },
      expect: [403]
    }
  ],
  'api/v1/webhooks.patch': [
    { method: 'PATCH', path: `/api/v1/webhooks/${webhook}`, body: { enabled: false }, expect: [403] }
  ],
  'api/v1/webhooks.remove': [{ method: 'DELETE', path: `/api/v1/webhooks/${webhook}`, expect: [403] }],
  'api/v1/webhooks.rotate-secret': [
    { method: 'POST', path: `/api/v1/webhooks/${webhook}:rotate-secret`, expect: [403] }
  ],
  'api/v1/webhooks.test': [{ method: 'POST', path: `/api/v1/webhooks/${webhook}:test`, expect: [403] }],
  'api/v1/webhooks.replay': [
    {
      method: 'POST',
      path: `/api/v1/webhooks/${webhook}:replay`,
      body: { from: '2000-01-01T00:00:00Z', to: '2100-01-01T00:00:00Z' },
      expect: [403]
    }
  ],
  'api/v1/webhooks/:webhookId/deliveries.find': [
    { method: 'GET', path: `/api/v1/webhooks/${webhook}/deliveries`, expect: [403] }
  ],
  ...Object.fromEntries(
    (['Users', 'Groups'] as const).flatMap((kind) => {
      const id = kind === 'Users' ? scimUser : scimGroup
      const schema = `urn:ietf:params:scim:schemas:core:2.0:${kind.slice(0, -1)}`
      const patch = {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', path: 'externalId', value: 'x' }]
      }
      const headers = { 'content-type': 'application/scim+json' }
      return [
        [`api/scim/v2/${kind}.find`, [{ method: 'GET', path: `/api/scim/v2/${kind}`, expect: [403] }]],
        [`api/scim/v2/${kind}.get`, [{ method: 'GET', path: `/api/scim/v2/${kind}/${id}`, expect: [403] }]],
        [
          `api/scim/v2/${kind}.create`,
          [
            {
              method: 'POST',
              path: `/api/scim/v2/${kind}`,
              raw: JSON.stringify({ schemas: [schema], userName: 'x', displayName: 'x' }),
              headers,
              expect: [403]
            }
          ]
        ],
        [
          `api/scim/v2/${kind}.update`,
          [
            {
              method: 'PUT',
              path: `/api/scim/v2/${kind}/${id}`,
              raw: JSON.stringify({ schemas: [schema], userName: 'x', displayName: 'x' }),
              headers,
              expect: [403]
            }
          ]
        ],
        [
          `api/scim/v2/${kind}.patch`,
          [{ method: 'PATCH', path: `/api/scim/v2/${kind}/${id}`, raw: JSON.stringify(patch), headers, expect: [403] }]
        ],
        [`api/scim/v2/${kind}.remove`, [{ method: 'DELETE', path: `/api/scim/v2/${kind}/${id}`, expect: [403] }]]
      ]
    })
  ),
  'api/scim/v2/ServiceProviderConfig.find': [
    { method: 'GET', path: '/api/scim/v2/ServiceProviderConfig', expect: [403] }
  ],
  'api/scim/v2/ResourceTypes.find': [{ method: 'GET', path: '/api/scim/v2/ResourceTypes', expect: [403] }],
  'api/scim/v2/ResourceTypes.get': [{ method: 'GET', path: '/api/scim/v2/ResourceTypes/User', expect: [403] }],
  'api/scim/v2/Schemas.find': [{ method: 'GET', path: '/api/scim/v2/Schemas', expect: [403] }],
  'api/scim/v2/Schemas.get': [
    {
      method: 'GET',
      path: '/api/scim/v2/Schemas/urn%3Aietf%3Aparams%3Ascim%3Aschemas%3Acore%3A2.0%3AUser',
      expect: [403]
    }
  ]
}

t.test('the list covers every method of every registered service', async (t) => {
  const app = server.running.app as any
  const all = Object.keys(app.services).flatMap((path: string) =>
    (getServiceOptions(app.service(path))?.methods ?? []).map((m: string) => `${path}.${m}`)
  )
  t.same([...all].sort(), Object.keys(calls).sort(), 'one entry per service method')
})

t.test('a user without the read right on incidents gets nothing about one from any endpoint', async (t) => {
  for (const [name, list] of Object.entries(calls)) {
    for (const c of list) {
      const res = await server.request(c.method, c.path, {
        token: outsider.token,
        body: c.body,
        raw: c.raw,
        headers: c.headers
      })
      t.ok(c.expect.includes(res.status), `${name} ${c.method} ${c.path}: ${res.status}`)
      for (const s of secrets)
        t.notOk(res.text.includes(s), `${name} ${c.method} ${c.path}: reveals nothing of the incident`)
    }
  }
  const modules = await server.request('GET', '/api/v1/modules', { token: outsider.token })
  t.same(
    modules.body.items.map((m: any) => m.key),
    ['corrective-action'],
    'only modules where the user has rights are listed'
  )
  const me = await server.request('GET', '/api/v1/me', { token: outsider.token })
  t.same(Object.keys(me.body.modules), ['corrective-action'])
})

t.test('and nothing changed', async (t) => {
  const now = await server.request('GET', `/api/v1/records/${incident.id}`)
  t.equal(now.status, 200)
  t.equal(now.body.version, 1)
  t.equal(now.body.state, 'reported')
  const count = await server.platform.db.system.query(
    "SELECT count(*)::int AS n FROM records WHERE tenant_id = 'acme' AND module_key = 'incident'"
  )
  t.equal(count.rows[0].n, 1, 'no incident was created')
})
