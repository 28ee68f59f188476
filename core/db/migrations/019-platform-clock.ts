import type { Knex } from 'knex'

/**
 * The platform's controllable clock (core/clock.ts): one row that moves the time of every instance at once, read only
 * by instances started with `clock.controllable` (never in production). Not tenant-owned: time is the platform's.
 */
export async function up(knex: Knex) {
  await knex.raw(`CREATE TABLE IF NOT EXISTS platform_clock (
    id smallint PRIMARY KEY CHECK (id = 1),
    offset_ms bigint NOT NULL DEFAULT 0,
    fixed_at timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
  )`)
}

export async function down(knex: Knex) {
  await knex.raw('DROP TABLE IF EXISTS platform_clock')
}
