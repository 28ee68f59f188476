import t from '../helpers/tap.ts'
import { sql } from '../../core/db/index.ts'
import { ShapedQuery } from '../../core/db/shaped-query.ts'

/** A stand-in connection that records what it was asked to run. */
function recorder() {
  const calls: Array<{ name?: string; text: string; values: unknown[] }> = []
  return { calls, query: async (q: any) => (calls.push(q), { rows: [] }) }
}

const build = (tenant: string, states: string[]) =>
  new ShapedQuery('test.shape', () => sql('records').select('id'))
    .add('tenant', [tenant], (b) => b.where('tenant_id', tenant))
    .add(`state:${states.length}`, states, (b) => b.whereIn('state', states))
    .add('limit', [51], (b) => b.limit(51))

t.test('compiles a shape once and reuses its text as one named statement with new values', async (t) => {
  const db = recorder()
  await build('acme', ['open']).run(db as any)
  await build('globex', ['closed']).run(db as any)
  t.equal(db.calls.length, 2)
  t.equal(db.calls[0].name, db.calls[1].name)
  t.equal(db.calls[0].text, 'select "id" from "records" where "tenant_id" = $1 and "state" in ($2) limit $3')
  t.same(db.calls[1].values, ['globex', 'closed', 51])
})

t.test('gives a different shape its own statement', async (t) => {
  const db = recorder()
  await build('acme', ['open']).run(db as any)
  await build('acme', ['open', 'closed']).run(db as any)
  t.not(db.calls[0].name, db.calls[1].name)
  t.match(db.calls[1].text, /in \(\$2, \$3\) limit \$4$/)
})

t.test('refuses clauses added out of binding order instead of running wrong SQL', async (t) => {
  const db = recorder()
  const q = new ShapedQuery('test.disorder', () => sql('records').select('id'))
    .add('limit', [10], (b) => b.limit(10))
    .add('tenant', ['acme'], (b) => b.where('tenant_id', 'acme'))
  await t.rejects(q.run(db as any), /not in binding order/)
  t.equal(db.calls.length, 0)
})
