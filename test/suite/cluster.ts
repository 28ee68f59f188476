/**
 * Where the tests' embedded PostgreSQL lives when DATABASE_URL is not set. Its data is
 * thrown away, so it does not wait for the disk: on a machine busy with other writes,
 * flushing every commit (and every CREATE DATABASE) was most of a test file's time.
 */
export const testCluster = {
  dataDir: 'data/test',
  port: Number(process.env.EMBEDDED_TEST_PG_PORT ?? 54339),
  settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' }
}
