import { createHash } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import type { Knex } from 'knex'
import type { Queryable } from './index.ts'

interface Compiled {
  name: string | undefined
  text: string
}

const compiled = new Map<string, Compiled>()
const maxShapes = 256

/**
 * A knex query assembled from clauses whose SQL text depends only on their shape (which
 * filters, how many values), not on the values. knex compiles each shape once; later
 * calls of the same shape reuse the text as a named prepared statement, so neither
 * knex nor PostgreSQL's planner runs per request. Clauses must be added in the order
 * their bindings appear in the SQL; the first compile of a shape checks that.
 */
export class ShapedQuery {
  // `apply` mutates the builder; what it returns (knex's chain returns the builder, a thenable that runs only when awaited) is ignored.
  private readonly parts: Array<{ shape: string; values: unknown[]; apply: (b: Knex.QueryBuilder) => unknown }> = []

  constructor(
    private readonly id: string,
    private readonly base: () => Knex.QueryBuilder
  ) {}

  add(shape: string, values: unknown[], apply: (b: Knex.QueryBuilder) => unknown): this {
    this.parts.push({ shape, values, apply })
    return this
  }

  private planned = true

  /**
   * The best plan depends on the values (a filter that matches half the rows or fifty): PostgreSQL plans each call
   * with its own values instead of settling on a generic plan after five calls. A generic plan made for common
   * values reads a whole module for a rare one (a list filtered on a rare site went from 3 ms to a full scan).
   * The text is still compiled once per shape.
   */
  planEachCall(yes = true): this {
    if (yes) this.planned = false
    return this
  }

  async run<T>(db: Queryable): Promise<T[]> {
    const { c, values } = this.compile()
    const name = this.planned ? c.name : undefined
    const { rows } = await db.query(name ? { name, text: c.text, values } : { text: c.text, values })
    return rows as T[]
  }

  /** How many rows the query returns, counted by PostgreSQL (a bounded one: give it a LIMIT), not sent to be counted. */
  async count(db: Queryable): Promise<number> {
    const { c, values } = this.compile()
    const text = `SELECT count(*)::int AS n FROM (${c.text}) AS counted`
    const { rows } = await db.query<{ n: number }>(
      c.name && this.planned ? { name: `${c.name}c`, text, values } : { text, values }
    )
    return rows[0].n
  }

  /**
   * The planner's estimate of how many rows the query returns (EXPLAIN, nothing run): a count too costly to make.
   * Over a table under row-level security, the planner takes the tenant policy's condition (core/db/row-security.ts)
   * for one more filter, independent of the query's own condition on the tenant, and so counts the same selectivity
   * twice (a fifth of the rows with five tenants): with `table`, the estimate is divided by what the policy alone
   * keeps of the table as the planner sees it (its estimate of the bare table against the table's row count).
   */
  async estimate(db: Queryable, table?: string): Promise<number> {
    const { c, values } = this.compile()
    const rows = await planRows(db, c.text, values)
    if (!table) return Math.round(rows)
    const [scanned, total] = await Promise.all([
      planRows(db, `SELECT 1 FROM ${table}`, []),
      db.query<{ n: number }>({
        text: 'SELECT greatest(reltuples, 0)::float8 AS n FROM pg_class WHERE oid = $1::regclass',
        values: [table]
      })
    ])
    const kept = total.rows[0]?.n && scanned > 0 ? Math.min(1, scanned / total.rows[0].n) : 1
    return Math.round(rows / kept)
  }

  private compile(): { c: Compiled; values: unknown[] } {
    const key = `${this.id}|${this.parts.map((p) => p.shape).join('|')}`
    const values = this.parts.flatMap((p) => p.values)
    let c = compiled.get(key)
    if (!c) {
      const builder = this.base()
      for (const p of this.parts) p.apply(builder)
      const native = builder.toSQL().toNative()
      if (!isDeepStrictEqual([...native.bindings], values))
        throw new Error(`ShapedQuery ${this.id}: clause values are not in binding order`)
      c = {
        text: native.sql,
        name:
          compiled.size < maxShapes ? `s${createHash('sha1').update(native.sql).digest('hex').slice(0, 16)}` : undefined
      }
      if (c.name) compiled.set(key, c)
    }
    return { c, values }
  }
}

async function planRows(db: Queryable, text: string, values: unknown[]): Promise<number> {
  const { rows } = await db.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>({
    text: `EXPLAIN (FORMAT JSON) ${text}`,
    values
  })
  return rows[0]['QUERY PLAN'][0].Plan['Plan Rows']
}
