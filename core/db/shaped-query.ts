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

  async run<T>(db: Queryable): Promise<T[]> {
    const { c, values } = this.compile()
    const { rows } = await db.query(c.name ? { name: c.name, text: c.text, values } : { text: c.text, values })
    return rows as T[]
  }

  /** How many rows the query returns, counted by PostgreSQL (a bounded one: give it a LIMIT), not sent to be counted. */
  async count(db: Queryable): Promise<number> {
    const { c, values } = this.compile()
    const text = `SELECT count(*)::int AS n FROM (${c.text}) AS counted`
    const { rows } = await db.query<{ n: number }>(c.name ? { name: `${c.name}c`, text, values } : { text, values })
    return rows[0].n
  }

  /** The planner's estimate of how many rows the query returns (EXPLAIN, nothing run): a count too costly to make. */
  async estimate(db: Queryable): Promise<number> {
    const { c, values } = this.compile()
    const { rows } = await db.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>({
      text: `EXPLAIN (FORMAT JSON) ${c.text}`,
      values
    })
    return Math.round(rows[0]['QUERY PLAN'][0].Plan['Plan Rows'])
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
