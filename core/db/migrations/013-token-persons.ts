import type { Knex } from 'knex'

/**
 * The person behind a token (core/auth/principal.ts personOf), for what existed before
 * tokens carried one:
 * - credentials.created_by: a service account or API key created by another one gets
 *   `onBehalfOf`, the person behind its creator, following chains (a token created by a token
 *   created by a user). Tokens created by a user already name that user; those created by the
 *   CLI or at start-up act for nobody.
 * - records.created_by: a record created through a service account or API key gets the person
 *   behind that token, so that four-eyes transitions (forbidSelf) on records made before this
 *   version also count that person as the creator.
 * Activity entries and events stay as they were written: history is not rewritten.
 */
const personOf = (c: string) => `CASE WHEN ${c}.created_by->>'type' = 'user'
    THEN jsonb_build_object('userId', ${c}.created_by->>'id', 'name', coalesce(${c}.created_by->>'name', ''))
    ELSE ${c}.created_by->'onBehalfOf' END`

const lacksPerson = (x: string) =>
  `${x}.created_by->>'type' IN ('service-account', 'api-key') AND ${x}.created_by->'onBehalfOf' IS NULL`

export async function up(knex: Knex) {
  // Each round settles one more link of a chain; a chain is at most as long as the tokens of its tenant.
  for (;;) {
    const { rowCount } =
      await knex.raw(`UPDATE credentials t SET created_by = t.created_by || jsonb_build_object('onBehalfOf', ${personOf('c')})
        FROM credentials c
       WHERE ${lacksPerson('t')} AND c.tenant_id = t.tenant_id AND c.id::text = t.created_by->>'id' AND ${personOf('c')} IS NOT NULL`)
    if (!rowCount) break
  }
  await knex.raw(`UPDATE records r SET created_by = r.created_by || jsonb_build_object('onBehalfOf', ${personOf('c')})
      FROM credentials c
     WHERE ${lacksPerson('r')} AND c.tenant_id = r.tenant_id AND c.id::text = r.created_by->>'id' AND ${personOf('c')} IS NOT NULL`)
}

/** The added `onBehalfOf` is indistinguishable from one written since; it stays (older code ignores it). */
export async function down(_knex: Knex) {}
