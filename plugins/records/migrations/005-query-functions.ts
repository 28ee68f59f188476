import type { Knex } from 'knex'

/**
 * The typed values list filters, sorts and indexes read from a payload (core/modules/derive/filters.ts), and the search
 * document text search reads (records.search.ts): IMMUTABLE, so an index may be built on them
 * (plugins/records/records.indexes.ts), and never an error, so one record cannot stop an index build or a write. A
 * value that is not of the type (the same key in another module, a record stored under an older version of its module)
 * is NULL. The casts PostgreSQL makes of text are STABLE (they read DateStyle and TimeZone); these take only what payload
 * validation accepts (ISO dates, date-times with an offset), which no setting reads differently.
 *
 * Row-level security (core/db/row-security.ts) lets PostgreSQL use a condition of the query as an index condition only
 * when every function it applies to the table's columns is LEAKPROOF (it cannot reveal, by an error, a row the policy
 * hides): otherwise the policy's tenant check runs first and the condition is a filter over the tenant's whole module.
 * These functions never fail, so they are declared LEAKPROOF, and so are the built-in functions list conditions apply
 * to a payload (`->>`, `->`, containment, numeric comparison, `lower`, `@@`), none of which raises an error on a value
 * of its type. Only a superuser may declare a function LEAKPROOF: a database user that is not one gets the same
 * functions without it, lists that are correct but scan at scale, and readiness says so (records.indexes.ts).
 * PL/pgSQL, not SQL: PostgreSQL would inline an SQL function into its body, whose own functions are not leakproof.
 */
export async function up(knex: Knex) {
  await knex.raw('CREATE EXTENSION IF NOT EXISTS unaccent')
  // GIN indexes (search text, multiple choice) lead with the tenant, as every index of a tenant-owned table does.
  await knex.raw('CREATE EXTENSION IF NOT EXISTS btree_gin')
  // Functions these call are named with their schema: PostgreSQL 17 evaluates index expressions during maintenance
  // (CREATE INDEX, VACUUM, ANALYZE) with search_path set to pg_catalog alone.
  const own: string = (await knex.raw('SELECT quote_ident(current_schema()) AS schema')).rows[0].schema
  const unaccent: string = (
    await knex.raw(
      `SELECT quote_ident(n.nspname) AS schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'unaccent'`
    )
  ).rows[0].schema
  const superuser: boolean = (await knex.raw('SELECT rolsuper AS s FROM pg_roles WHERE rolname = current_user')).rows[0]
    .s
  const fn = (signature: string, returns: string, body: string, cost = 100) =>
    knex.raw(`CREATE OR REPLACE FUNCTION ${signature} RETURNS ${returns}
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE COST ${cost} AS $fn$ ${body} $fn$`)

  await fn(
    'records_numeric(v jsonb)',
    'numeric',
    `BEGIN IF jsonb_typeof(v) = 'number' THEN RETURN v::numeric; END IF; RETURN NULL; END`
  )
  await fn(
    'records_boolean(v jsonb)',
    'boolean',
    `BEGIN IF jsonb_typeof(v) = 'boolean' THEN RETURN v::boolean; END IF; RETURN NULL; END`
  )
  await fn(
    'records_date(v text)',
    'date',
    `DECLARE y int; m int; d int;
     BEGIN
       IF v !~ '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])$' OR left(v, 4) = '0000' THEN RETURN NULL; END IF;
       y := substr(v, 1, 4)::int; m := substr(v, 6, 2)::int; d := substr(v, 9, 2)::int;
       IF d > extract(day FROM make_date(y, m, 1) + interval '1 month - 1 day') THEN RETURN NULL; END IF;
       RETURN make_date(y, m, d);
     END`
  )
  // RFC 3339 as payload validation takes it (core/validation.ts): a date, T or a space, hh:mm:ss[.frac], Z or an
  // offset of at most 15:59; seconds up to 60 (a leap second), which PostgreSQL reads as the next minute.
  // knex reads ? as a placeholder: \\? is the regular expression's own.
  await fn(
    'records_timestamptz(v text)',
    'timestamptz',
    `BEGIN
       IF v !~ '^\\d{4}-\\d\\d-\\d\\d[Tt ]([01]\\d|2[0-3]):[0-5]\\d:([0-5]\\d|60)(\\.\\d+)\\?([Zz]|[+-](0\\d|1[0-5])(:\\?[0-5]\\d)\\?)$'
          OR ${own}.records_date(substr(v, 1, 10)) IS NULL THEN RETURN NULL; END IF;
       RETURN v::timestamptz;
     END`
  )
  // Lower case without accents: what text search compares (records.search.ts), for the document and the query alike.
  await fn(
    'records_fold(v text)',
    'text',
    `BEGIN RETURN lower(${unaccent}.unaccent('${unaccent}.unaccent'::regdictionary, v)); END`
  )
  // A module's search document: its searchable fields' text, folded, as words (the `simple` configuration). Declared
  // dear (it costs tens of microseconds a record), so that no plan computes it for records an index did not select;
  // a search also runs where only index bitmaps may find rows (records.class.ts, reading).
  await fn(
    'records_document(payload jsonb, keys text[])',
    'tsvector',
    `DECLARE k text; t text := '';
     BEGIN
       FOREACH k IN ARRAY keys LOOP t := t || ' ' || coalesce(payload->>k, ''); END LOOP;
       RETURN to_tsvector('simple'::regconfig, ${own}.records_fold(t));
     END`,
    1000000
  )
  if (superuser) for (const statement of leakproofStatements) await knex.raw(statement)
}

/**
 * What declares the functions list conditions apply to a record leakproof (see above); `records indexes leakproof`
 * runs them as a superuser on a database whose migrations ran as another user.
 */
export const leakproofStatements = [
  'records_numeric(jsonb)',
  'records_boolean(jsonb)',
  'records_date(text)',
  'records_timestamptz(text)',
  'records_fold(text)',
  'records_document(jsonb, text[])'
]
  .map((f) => `ALTER FUNCTION ${f} LEAKPROOF`)
  .concat(
    [
      'jsonb_object_field_text(jsonb, text)',
      'jsonb_object_field(jsonb, text)',
      'jsonb_typeof(jsonb)',
      'jsonb_contains(jsonb, jsonb)',
      'jsonb_exists_any(jsonb, text[])',
      'numeric_eq(numeric, numeric)',
      'numeric_ne(numeric, numeric)',
      'numeric_lt(numeric, numeric)',
      'numeric_le(numeric, numeric)',
      'numeric_gt(numeric, numeric)',
      'numeric_ge(numeric, numeric)',
      'lower(text)',
      'ts_match_vq(tsvector, tsquery)'
    ].map((f) => `ALTER FUNCTION pg_catalog.${f} LEAKPROOF`)
  )

export async function down(knex: Knex) {
  for (const f of [
    'records_numeric(jsonb)',
    'records_boolean(jsonb)',
    'records_timestamptz(text)',
    'records_date(text)',
    'records_document(jsonb, text[])',
    'records_fold(text)'
  ])
    await knex.raw(`DROP FUNCTION IF EXISTS ${f}`)
}
