import t from '../helpers/tap.ts'
import { referenceOrder, samplePayload, type SampleContext } from '../../core/modules/derive/sample.ts'
import type { ModuleDefinition } from '../../core/modules/types.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * The module conformance suite: every module the registry loads goes through the
 * same life over HTTP: create with only required fields, create with all fields,
 * read, patch, walk its workflow along each transition reachable from the initial
 * state (filling the guards it names), and soft-delete. A new module package passes
 * this suite or is not done.
 */
const server = await startTestServer({ tenants: { conformance: { name: 'Conformance', modules: [] } } })
t.teardown(() => server.close())
const modules = referenceOrder(server.platform.registry.all().map((m) => m.definition))
// Install every loaded module for one tenant.
for (const m of modules) {
  await server.platform.db.system.query(
    'INSERT INTO tenant_modules (tenant_id, module_key, module_version) VALUES ($1, $2, $3)',
    ['conformance', m.key, m.version]
  )
}
await server.platform.tenants.load()
// A second credential of the same tenant, for transitions the record's creator may not fire.
const secondKey = (
  await server.platform.credentials.create({ tenantId: 'conformance', kind: 'api_key', name: 'second pair of eyes' })
).token
const ctx: SampleContext = { recordIds: {}, userId: '6d1f3c52-3b7e-4c55-9d1e-0c5b8a1f2e11' }

/** A path through the workflow that visits as many transitions as possible from the initial state. */
function walk(m: ModuleDefinition): string[] {
  const path: string[] = []
  const used = new Set<string>()
  let state = m.workflow.initial
  for (;;) {
    const next =
      m.workflow.transitions.find(
        (x) => x.from.includes(state) && !used.has(x.key) && !m.workflow.states.find((s) => s.key === x.to)?.final
      ) ?? m.workflow.transitions.find((x) => x.from.includes(state) && !used.has(x.key))
    if (!next) return path
    used.add(next.key)
    path.push(next.key)
    state = next.to
  }
}

for (const m of modules) {
  t.test(`module ${m.key} creates, reads, patches, walks its workflow and soft-deletes`, async (t) => {
    const minimal = samplePayload(m.fields, ctx, false)
    const small = await server.request('POST', '/api/v1/records', { body: { moduleKey: m.key, payload: minimal } })
    t.equal(small.status, 201, 'creates a record with only the required fields')
    ctx.recordIds[m.key] = small.body.id

    const full = samplePayload(m.fields, ctx, true)
    const created = await server.request('POST', '/api/v1/records', { body: { moduleKey: m.key, payload: full } })
    t.equal(created.status, 201, 'creates a record with every field')
    t.equal(created.body.state, m.workflow.initial)
    t.same(created.body.payload, full)
    const id = created.body.id

    const got = await server.request('GET', `/api/v1/records/${id}`)
    t.equal(got.status, 200)
    t.same(got.body.payload, full)

    const textField = m.fields.find((f) => f.type === 'text' && !f.pattern)
    if (textField) {
      const patched = await server.request('PATCH', `/api/v1/records/${id}`, {
        body: { payload: { [textField.key]: 'Changed by the conformance suite' } }
      })
      t.equal(patched.status, 200)
      t.same(patched.body.activity.at(-1).changes, [
        { field: textField.key, from: full[textField.key], to: 'Changed by the conformance suite' }
      ])
    }

    let state = m.workflow.initial
    for (const key of walk(m)) {
      const tr = m.workflow.transitions.find((x) => x.key === key)!
      // The walk starts from the minimal record, so guards must be satisfied through the transition's own payload.
      const path = `/api/v1/records/${small.body.id}:transition`
      if (tr.forbidSelf) {
        const self = await server.request('POST', path, { body: { transition: key, payload: full } })
        t.equal(self.status, 403, `the creator may not fire ${key}`)
        t.equal(self.body.code, 'workflow.self_approval')
      }
      const moved = await server.request('POST', path, {
        body: { transition: key, payload: full },
        token: tr.forbidSelf ? secondKey : undefined
      })
      t.equal(moved.status, 200, `fires ${key} from ${state}`)
      t.equal(moved.body.state, tr.to)
      state = tr.to
    }

    const removed = await server.request('DELETE', `/api/v1/records/${id}`)
    t.equal(removed.status, 200)
    t.equal((await server.request('GET', `/api/v1/records/${id}`)).status, 404)
    const audit = await server.request('GET', `/api/v1/audit-log?recordId=${id}`)
    t.equal(audit.status, 200)
    t.equal(audit.body.items.at(-1).action, 'deleted')
  })
}
