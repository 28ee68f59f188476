/**
 * What the project's conformance scripts (scripts/graphql-audit.ts, scripts/scim-peers.ts)
 * share: output, cleanups that run whatever happens (also on Ctrl-C), a PostgreSQL to
 * start the service on, and the contract check of every response they got. Imports only
 * Node and core at load time, so a script can decide to skip before loading the service.
 */
import type { EmbeddedServer } from '../core/db/embedded.ts'

export const say = (line: string) => process.stdout.write(`${line}\n`)

const cleanups: Array<() => unknown> = []
/** Something to undo when the script ends, last registered first. */
export const onCleanUp = (step: () => unknown) => void cleanups.push(step)

/** Runs the cleanups, last registered first; one that fails does not stop the others. */
async function cleanUp() {
  for (const step of cleanups.splice(0).reverse()) {
    await Promise.resolve()
      .then(step)
      .catch((err) => say(`cleanup: ${(err as Error).message}`))
  }
}

/**
 * The PostgreSQL the script's service runs on: DATABASE_URL's server, else the tests'
 * embedded cluster (data/test), started here if it is not running and then stopped at the end.
 */
export async function databaseServer(): Promise<'DATABASE_URL' | 'embedded PostgreSQL'> {
  if (process.env.DATABASE_URL) return 'DATABASE_URL'
  const [{ startEmbedded }, { testCluster }] = await Promise.all([
    import('../core/db/embedded.ts'),
    import('../test/suite/cluster.ts')
  ])
  const embedded: EmbeddedServer = await startEmbedded({ ...testCluster, database: 'postgres' })
  onCleanUp(() => embedded.startedHere && embedded.stop())
  return 'embedded PostgreSQL'
}

/** Whether responses broke the service's OpenAPI document (said, and then forgotten so that closing the server does not throw them again). */
export async function contractBroken(violations: Array<unknown>): Promise<boolean> {
  const { assertContract } = await import('../test/helpers/server.ts')
  try {
    assertContract(violations as Parameters<typeof assertContract>[0])
    return false
  } catch (err) {
    say((err as Error).message)
    violations.splice(0)
    return true
  }
}

/** Runs the script's main and exits with its code (1 if it threw), after the cleanups; Ctrl-C and SIGTERM clean up too. */
export async function runScript(name: string, main: () => Promise<number>): Promise<never> {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143]
  ] as const) {
    process.once(signal, () => void cleanUp().finally(() => process.exit(code)))
  }
  let code = 1
  try {
    code = await main()
  } catch (err) {
    say(`${name}: ${(err as Error).stack ?? String(err)}`)
  } finally {
    await cleanUp()
  }
  process.exit(code)
}
