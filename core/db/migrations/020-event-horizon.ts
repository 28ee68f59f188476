import type { Knex } from 'knex'

/**
 * The horizon under which events are final: `records_event_horizon()`, the oldest transaction still running that could
 * write events here, or the next transaction id when none runs. Readers of the events in commit order (the events
 * feed, the webhook dispatcher, the identity log) take only events below it, so an event committed late is never
 * passed over.
 *
 * `pg_snapshot_xmin(pg_current_snapshot())` was that bound, but a snapshot holds the transactions of every database of
 * the cluster: one long transaction of another database (a report, an index build, another service) held back every
 * webhook and feed page of this one for as long as it ran. Transactions known to belong to another database are left
 * out: those pg_stat_activity shows with their database (every session for a superuser or a role with
 * pg_read_all_stats, otherwise the role's own sessions: an unknown transaction still holds the horizon, the safe side)
 * and prepared transactions of another database.
 */
export async function up(knex: Knex) {
  await knex.raw(`CREATE OR REPLACE FUNCTION records_event_horizon() RETURNS xid8 LANGUAGE sql STABLE PARALLEL SAFE AS $$
    WITH s AS (SELECT pg_current_snapshot() AS snap),
    elsewhere AS (
      SELECT backend_xid AS xid FROM pg_stat_activity
       WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database() AND datid IS NOT NULL
      UNION ALL
      SELECT transaction FROM pg_prepared_xacts WHERE database <> current_database()
    )
    SELECT coalesce(
      (SELECT min(x) FROM s, pg_snapshot_xip(s.snap) AS x WHERE x::xid NOT IN (SELECT xid FROM elsewhere)),
      (SELECT pg_snapshot_xmax(snap) FROM s)
    )
  $$`)
}

export async function down(knex: Knex) {
  await knex.raw('DROP FUNCTION IF EXISTS records_event_horizon()')
}
