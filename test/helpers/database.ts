import pg from 'pg'
import { startEmbedded, type EmbeddedOptions } from '../../core/db/embedded.ts'
import { testCluster } from '../suite/cluster.ts'
import { scratchDatabase } from '../../core/db/scratch.ts'

/**
 * A fresh, empty database for one test file: on the server named by DATABASE_URL
 * (CI uses the machine's PostgreSQL), or else on an embedded cluster (the tests' in data/test).
 */
export async function freshDatabase(
  cluster: Omit<EmbeddedOptions, 'database'> = testCluster
): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = process.env.DATABASE_URL ?? (await startEmbedded({ ...cluster, database: 'postgres' })).url
  return scratchDatabase(serverUrl, 'records_test')
}

/**
 * A pool on `url` as its login user, without the service's `database.role`: for what only the
 * tables' owner may do (a test's DDL: constraints, triggers) and plans read without the
 * row-level security policy. Row-level security does not apply to it (the tests log in as a superuser).
 */
export function ownerPool(url: string): pg.Pool {
  return new pg.Pool({ connectionString: url, max: 2 })
}
