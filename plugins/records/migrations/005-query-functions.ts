import type { Knex } from 'knex'

/**
 * The typed values list filters, sorts and indexes read from a payload (core/modules/derive/filters.ts), and the folded
 * text search reads: IMMUTABLE, so an index may be built on them (plugins/records/records.indexes.ts), and never an
 * error, so one record cannot stop an index build or a write. A value that is not of the type (the same key in another
 * module, a record stored under an older version of its module) is NULL. The casts PostgreSQL makes of text are STABLE
 * (they read DateStyle and TimeZone); these take only what payload validation accepts (ISO dates, date-times with an
 * offset), which no setting reads differently.
 */
export async function up(knex: Knex) {
  await knex.raw('CREATE EXTENSION IF NOT EXISTS unaccent')
  // GIN indexes (search text, multiple choice) lead with the tenant, as every index of a tenant-owned table does.
  await knex.raw('CREATE EXTENSION IF NOT EXISTS btree_gin')
  // A function one of these calls is named with its schema: PostgreSQL 17 evaluates index expressions during
  // maintenance (CREATE INDEX, VACUUM, ANALYZE) with search_path set to pg_catalog alone.
  const own: string = (await knex.raw('SELECT quote_ident(current_schema()) AS schema')).rows[0].schema
  // Named with its schema: an index expression must not depend on the search_path of whoever evaluates it.
  const { rows } = await knex.raw(
    `SELECT quote_ident(n.nspname) AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'unaccent'`
  )
  const schema: string = rows[0].schema
  await knex.raw(`CREATE OR REPLACE FUNCTION records_numeric(v jsonb) RETURNS numeric
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT CASE WHEN jsonb_typeof(v) = 'number' THEN v::numeric END $$`)
  await knex.raw(`CREATE OR REPLACE FUNCTION records_boolean(v jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT CASE WHEN jsonb_typeof(v) = 'boolean' THEN v::boolean END $$`)
  // Nested CASEs: each test runs only when the one before it held (the order of an AND's operands is not guaranteed).
  await knex.raw(`CREATE OR REPLACE FUNCTION records_date(v text) RETURNS date
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN v ~ '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])$' AND substr(v, 1, 4) <> '0000' THEN
      CASE WHEN substr(v, 9, 2)::int <= extract(day FROM make_date(substr(v, 1, 4)::int, substr(v, 6, 2)::int, 1) + interval '1 month - 1 day')
      THEN make_date(substr(v, 1, 4)::int, substr(v, 6, 2)::int, substr(v, 9, 2)::int) END
    END $$`)
  // knex reads ? as a placeholder: \\? is the regular expression's own.
  // RFC 3339 as payload validation takes it (core/validation.ts): a date, T or a space, hh:mm:ss[.frac], Z or an
  // offset of at most 15:59; seconds up to 60 (a leap second), which PostgreSQL reads as the next minute.
  await knex.raw(`CREATE OR REPLACE FUNCTION records_timestamptz(v text) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN v ~ '^\\d{4}-\\d\\d-\\d\\d[Tt ]([01]\\d|2[0-3]):[0-5]\\d:([0-5]\\d|60)(\\.\\d+)\\?([Zz]|[+-](0\\d|1[0-5])(:\\?[0-5]\\d)\\?)$' THEN
      CASE WHEN ${own}.records_date(substr(v, 1, 10)) IS NOT NULL THEN v::timestamptz END
    END $$`)
  // Lower case without accents: what text search compares (records.search.ts), for the document and the query alike.
  await knex.raw(`CREATE OR REPLACE FUNCTION records_fold(v text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT lower(${schema}.unaccent('${schema}.unaccent'::regdictionary, v)) $$`)
}

export async function down(knex: Knex) {
  for (const f of [
    'records_numeric(jsonb)',
    'records_boolean(jsonb)',
    'records_timestamptz(text)',
    'records_date(text)',
    'records_fold(text)'
  ])
    await knex.raw(`DROP FUNCTION IF EXISTS ${f}`)
}
