import t from '../helpers/tap.ts'
import { userWithToken, type TestUser } from '../helpers/identity.ts'
import { bulkCall, ndjson } from '../helpers/ndjson.ts'
import { incidentPayload, startTestServer, type Reply } from '../helpers/server.ts'

/**
 * One table of writes, each sent once as a single call (POST, or PATCH of the record a
 * row's externalRef names) and once as a bulk row (a create, or an upsert by that
 * externalRef): both must come out the same, because both go through the same rules.
 * Transitions and deletes have no bulk form (bulk loads create and upsert), so they are
 * covered by the single-call tests only.
 */
const server = await startTestServer()
t.teardown(() => server.close())

let n = 0
const ref = () => `PARITY-${process.pid}-${++n}`
type Outcome = { result: string; status: number; code?: string }

/** A single call's answer as an outcome: created / updated / unchanged, or the problem's status and code. */
function single(res: Reply, before?: number): Outcome {
  if (res.status === 201) return { result: 'created', status: 201 }
  if (res.status === 200) return { result: res.body.version === before ? 'unchanged' : 'updated', status: 200 }
  return { result: 'error', status: res.status, code: res.body.code }
}
function row(line: any): Outcome {
  if (line.status === 'error') return { result: 'error', status: line.problem.status, code: line.problem.code }
  return { result: line.status, status: line.status === 'created' ? 201 : 200 }
}

const users: Record<string, TestUser> = {}
async function tokenOf(who: string): Promise<string> {
  if (who === 'key') return server.keys.acme
  if (who === 'read-only-scopes')
    users[who] ??= await userWithToken(server, 'acme', ['safety-manager'], { scopes: ['records:read', 'bulk:write'] })
  else users[who] ??= await userWithToken(server, 'acme', [who])
  return users[who].token
}

async function viaBulk(moduleKey: string, token: string, line: Record<string, unknown>): Promise<Outcome> {
  const res = await bulkCall(server.url, `/api/modules/${moduleKey}/bulk`, token, ndjson([line]))
  // A refusal that holds for every row (no right to create in the module, a missing scope) refuses the call once, with the same problem.
  if (res.status !== 200) return { result: 'error', status: res.status, code: res.body.code }
  return row(res.lines[0])
}

interface CreateCase {
  name: string
  who: string
  moduleKey?: string
  payload: () => Record<string, unknown>
  expect: Outcome
}

const creates: CreateCase[] = [
  { name: 'a valid record', who: 'key', payload: () => incidentPayload(), expect: { result: 'created', status: 201 } },
  {
    name: 'a choice outside its options',
    who: 'key',
    payload: () => incidentPayload({ severity: 'catastrophic' }),
    expect: { result: 'error', status: 400, code: 'field.invalid' }
  },
  {
    name: 'a field the module does not have',
    who: 'key',
    payload: () => incidentPayload({ colour: 'red' }),
    expect: { result: 'error', status: 400, code: 'field.invalid' }
  },
  {
    name: 'a required field missing',
    who: 'key',
    payload: () => ({ ...incidentPayload(), title: undefined }),
    expect: { result: 'error', status: 400, code: 'field.invalid' }
  },
  {
    name: 'a field the role may not write',
    who: 'safety-manager',
    payload: () => incidentPayload({ medicalDetails: 'Fractured wrist' }),
    expect: { result: 'error', status: 403, code: 'field.forbidden' }
  },
  {
    name: 'a role without the create right',
    who: 'auditor',
    payload: () => incidentPayload(),
    expect: { result: 'error', status: 403, code: 'permission.denied' }
  },
  {
    name: 'a token without the write scope',
    who: 'read-only-scopes',
    payload: () => incidentPayload(),
    expect: { result: 'error', status: 403, code: 'scope.missing' }
  },
  {
    name: 'a reference to a record that does not exist',
    who: 'key',
    moduleKey: 'corrective-action',
    payload: () => ({ title: 'Fit a barrier', incident: '00000000-0000-4000-8000-000000000000', kind: 'corrective' }),
    expect: { result: 'error', status: 400, code: 'field.invalid' }
  }
]

for (const c of creates) {
  t.test(`create with ${c.name}: the single call and the bulk row agree`, async (t) => {
    const token = await tokenOf(c.who)
    const moduleKey = c.moduleKey ?? 'incident'
    const payload = JSON.parse(JSON.stringify(c.payload()))
    const one = single(await server.request('POST', '/api/v1/records', { token, body: { moduleKey, payload } }))
    const many = await viaBulk(moduleKey, token, { payload })
    t.same(one, c.expect, 'single call')
    t.same(many, c.expect, 'bulk row')
  })
}

interface UpdateCase {
  name: string
  who: string
  /** Who created the record (default: the tenant key). */
  owner?: string
  patch: Record<string, unknown>
  expect: Outcome
}

const updates: UpdateCase[] = [
  { name: 'a changed title', who: 'key', patch: { title: 'Renamed' }, expect: { result: 'updated', status: 200 } },
  {
    name: 'the values it already has',
    who: 'key',
    patch: { title: 'Forklift clipped racking', site: 'Leeds DC' },
    expect: { result: 'unchanged', status: 200 }
  },
  {
    name: 'a choice outside its options',
    who: 'key',
    patch: { severity: 'catastrophic' },
    expect: { result: 'error', status: 400, code: 'field.invalid' }
  },
  {
    name: 'a required field removed (null)',
    who: 'key',
    patch: { title: null },
    expect: { result: 'error', status: 400, code: 'field.invalid' }
  },
  {
    name: 'a field the role may not write',
    who: 'safety-manager',
    patch: { medicalDetails: 'Fractured wrist' },
    expect: { result: 'error', status: 403, code: 'field.forbidden' }
  },
  {
    name: 'a role without the update right, on its own record',
    who: 'reporter',
    owner: 'reporter',
    patch: { title: 'Mine' },
    expect: { result: 'error', status: 403, code: 'permission.denied' }
  }
]

for (const c of updates) {
  t.test(`update with ${c.name}: PATCH and the bulk upsert agree`, async (t) => {
    const token = await tokenOf(c.who)
    const ownerToken = await tokenOf(c.owner ?? 'key')
    // Two equal records, one per path, each with its own externalRef.
    const refs = [ref(), ref()]
    const made = await Promise.all(
      refs.map((externalRef) =>
        server.request('POST', '/api/v1/records', {
          token: ownerToken,
          body: { moduleKey: 'incident', payload: incidentPayload(), externalRef }
        })
      )
    )
    t.same(
      made.map((m) => m.status),
      [201, 201],
      'set-up'
    )
    const one = single(
      await server.request('PATCH', `/api/v1/records/${made[0].body.id}`, { token, body: { payload: c.patch } }),
      made[0].body.version
    )
    const many = await viaBulk('incident', token, { payload: c.patch, externalRef: refs[1] })
    t.same(one, c.expect, 'PATCH')
    t.same(many, c.expect, 'bulk upsert')
    const after = await Promise.all(made.map((m) => server.request('GET', `/api/v1/records/${m.body.id}`)))
    t.same(after[1].body.payload, after[0].body.payload, 'and leave the same payload behind')
    t.equal(after[1].body.version, after[0].body.version)
  })
}
