import { randomUUID } from 'node:crypto'
import t from '../helpers/tap.ts'
import { hiddenFields, rowRule, can } from '../../core/auth/access.ts'
import type { Principal } from '../../core/auth/principal.ts'
import { hasScope, scopeForAction, scopesWithin, unknownScopes } from '../../core/auth/scopes.ts'
import { startTestServer } from '../helpers/server.ts'

const server = await startTestServer()
t.teardown(() => server.close())
const incident = server.platform.registry.get('incident')!
const pool = server.platform.db.system

const users = [randomUUID(), randomUUID(), randomUUID()]
const principal = (roles: string[], userId: string, scopes: Principal['scopes'] = 'all'): Principal => ({
  tenantId: 'acme',
  credentialId: randomUUID(),
  kind: 'personal',
  actor: { type: 'user', id: userId, name: 'u' },
  userId,
  roles,
  scopes
})

// Every combination of creator and investigation lead, plus rows without a lead.
const rows: Array<{ id: string; created_by: { id: string }; payload: Record<string, unknown> }> = []
for (const creator of users)
  for (const lead of [...users, undefined]) {
    rows.push({
      id: randomUUID(),
      created_by: { id: creator },
      payload: lead ? { title: 'x', investigationLead: lead } : { title: 'x' }
    })
  }
let n = 0
for (const r of rows) {
  await pool.query(
    `INSERT INTO records (tenant_id, id, module_key, module_version, number, state, payload, created_by, updated_by) VALUES ('acme', $1, 'incident', '1.0.0', $2, 'reported', $3, $4, $4)`,
    [r.id, `T-${++n}`, r.payload, { type: 'user', name: 'u', ...r.created_by }]
  )
}

t.test('a row rule selects in SQL exactly the rows its in-process check accepts', async (t) => {
  const roleSets = [['reporter'], ['investigator'], ['reporter', 'investigator'], ['investigator', 'reporter']]
  for (const roles of roleSets) {
    for (const user of users) {
      const rule = rowRule(principal(roles, user), incident)!
      t.ok(rule, `${roles.join('+')} is restricted`)
      let i = 0
      const sql = rule.sql.replace(/\?/g, () => `$${++i}`)
      const { rows: found } = await pool.query(
        `SELECT id FROM records r WHERE r.tenant_id = 'acme' AND r.module_key = 'incident' AND r.number LIKE 'T-%' AND ${sql}`,
        rule.bindings
      )
      const inSql = found.map((r) => r.id).sort()
      const inProcess = rows
        .filter((r) => rule.test(r))
        .map((r) => r.id)
        .sort()
      t.same(
        inSql,
        inProcess,
        `${roles.join('+')} as user ${users.indexOf(user)}: SQL and check agree (${inSql.length} rows)`
      )
      t.ok(inSql.length > 0 && inSql.length < rows.length, 'and the rule actually narrows')
    }
  }
})

t.test('a row rule is lifted by any reading role without one, and ignores roles that do not read', async (t) => {
  t.equal(rowRule(principal(['reporter', 'safety-manager'], users[0]), incident), undefined)
  t.equal(rowRule(principal(['reporter', 'auditor'], users[0]), incident), undefined)
  t.equal(rowRule({ ...principal([], users[0]), roles: 'all' }, incident), undefined)
  t.equal(
    rowRule(principal([], users[0]), incident),
    undefined,
    'no reading role: nothing to constrain (read itself is refused)'
  )
  const reporter = rowRule(principal(['reporter'], users[0]), incident)!
  t.same(reporter.bindings, [users[0]])
})

t.test("field visibility follows the field's read roles", async (t) => {
  t.same([...hiddenFields(principal(['safety-manager'], users[0]), incident)], ['medicalDetails'])
  t.same([...hiddenFields(principal(['safety-manager', 'health-officer'], users[0]), incident)], [])
  t.same([...hiddenFields({ ...principal([], users[0]), roles: 'all' }, incident)], [])
})

t.test('scopes: module actions map onto scope names, with an optional module suffix', async (t) => {
  t.equal(scopeForAction('read'), 'records:read')
  t.equal(scopeForAction('update'), 'records:write')
  t.equal(scopeForAction('transition:close'), 'records:transition')
  t.equal(scopeForAction('export'), 'exports:write')
  t.ok(hasScope(['records:read'], 'records:read', 'incident'))
  t.ok(hasScope(['records:read:incident'], 'records:read', 'incident'))
  t.notOk(hasScope(['records:read:incident'], 'records:read', 'inspection'))
  t.notOk(hasScope(['records:read:incident'], 'records:read'), 'a module scope does not grant the unbound scope')
  t.ok(hasScope('all', 'scim'))
  t.ok(can(principal(['safety-manager'], users[0], ['records:read:incident']), incident, 'read'))
  t.notOk(can(principal(['safety-manager'], users[0], ['records:read:incident']), incident, 'create'))
  t.notOk(can(principal(['auditor'], users[0]), incident, 'create'), 'scopes never add to roles')
})

t.test('scopes: unknown names and escalations are caught', async (t) => {
  t.same(unknownScopes(['records:read', 'records:read:incident', 'scim', 'modules:read'], ['incident']), [])
  t.same(
    unknownScopes(
      ['records:fly', 'scim:incident', 'records:read:permit', 'records:read:incident:x', 'records'],
      ['incident']
    ),
    ['records:fly', 'scim:incident', 'records:read:permit', 'records:read:incident:x', 'records']
  )
  t.ok(scopesWithin(['records:read:incident'], ['records:read']))
  t.ok(scopesWithin(['records:read'], 'all'))
  t.notOk(scopesWithin('all', ['records:read']))
  t.notOk(scopesWithin(['records:read'], ['records:read:incident']))
  t.notOk(scopesWithin(['records:write'], ['records:read']))
})
