/** Where the tests' embedded PostgreSQL lives when DATABASE_URL is not set. */
export const testCluster = { dataDir: 'data/test', port: Number(process.env.EMBEDDED_TEST_PG_PORT ?? 54339) }
