/**
 * `npm run test:scim-peers`: the SCIM peer suites, Microsoft's reference Postman collection
 * (run with newman) and Okta's SCIM 2.0 spec test (a Runscope export, run by
 * scripts/scim-peers/runscope.ts), against a freshly started instance of the service.
 *
 * The suites are not in this repository: they live in `<PEER_SUITES_DIR>/scim/`, where
 * PEER_SUITES_DIR defaults to `../shared/peer-suites` beside the project root. When that
 * default folder is absent the script says "skipped" and exits 0, so a checkout without it
 * (a CI clone made elsewhere) passes; a PEER_SUITES_DIR named explicitly must hold them.
 *
 * Starts the service on a throwaway database (on DATABASE_URL's server, else on the tests'
 * embedded cluster, data/test) with one fresh tenant per suite, since each suite counts the
 * users it finds (Microsoft's expects exactly its own), and mints each tenant a
 * service-account token with only the `scim` scope, the credential an identity provider is
 * given. Prints each request with its failed assertions and the response they saw, then per
 * suite and in total `N passed, N failed`. Exits 1 when an assertion failed or a response
 * broke the service's OpenAPI document. Whatever happens, it stops what it started.
 * SCIM_PEERS_PAUSES=wait honours the Okta test's pause steps (about a minute in all).
 */
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { projectRoot } from '../core/paths.ts'
import { microsoftFile, oktaFiles } from './scim-peers/files.ts'
import { contractBroken, databaseServer, onCleanUp, runScript, say } from './harness.ts'
import { tally, type SuiteResult } from './scim-peers/results.ts'

export const scimPath = '/api/scim/v2'
const tenants = { microsoft: 'scim-microsoft', okta: 'scim-okta' } as const
/** Where the SCIM suites are, or why there are none (`skip`: the default place is simply absent). */
function suitesFolder(): { dir: string } | { skip: string } | { error: string } {
  const explicit = process.env.PEER_SUITES_DIR
  const root = explicit ? resolve(explicit) : resolve(projectRoot, '../shared/peer-suites')
  const dir = join(root, 'scim')
  if (!existsSync(dir)) {
    return explicit
      ? { error: `PEER_SUITES_DIR=${explicit} has no scim/ folder (${dir})` }
      : {
          skip: `skipped: ../shared/peer-suites/scim not found (looked in ${dir}; set PEER_SUITES_DIR to the peer-suites folder)`
        }
  }
  const missing = [microsoftFile, oktaFiles.test, oktaFiles.initialScript].filter((f) => !existsSync(join(dir, f)))
  return missing.length ? { error: `${dir} lacks ${missing.join(', ')}` } : { dir }
}

async function main(): Promise<number> {
  const where = suitesFolder()
  if ('skip' in where) {
    say(where.skip)
    return 0
  }
  if ('error' in where) {
    say(`scim peers: ${where.error}`)
    return 1
  }

  // Loaded only now: a checkout without the suites skips without loading the service.
  const [{ startTestServer }, { runMicrosoft }, { runOkta }] = await Promise.all([
    import('../test/helpers/server.ts'),
    import('./scim-peers/microsoft.ts'),
    import('./scim-peers/okta.ts')
  ])
  const database = await databaseServer()
  const modules = ['incident', 'corrective-action', 'inspection']
  const server = await startTestServer({
    tenants: {
      [tenants.microsoft]: { name: 'SCIM peer suite: Microsoft', modules },
      [tenants.okta]: { name: 'SCIM peer suite: Okta', modules }
    }
  })
  onCleanUp(() => server.close())
  const tokenOf = async (tenantId: string) =>
    (
      await server.platform.credentials.create({
        tenantId,
        kind: 'service_account',
        name: 'SCIM peer suite',
        scopes: ['scim']
      })
    ).token

  const scimBaseUrl = `${server.url}${scimPath}`
  say(`SCIM peer suites from ${where.dir} against ${scimBaseUrl} (${database})`)
  const results: SuiteResult[] = []
  const runs = [
    {
      title: 'Microsoft SCIM reference collection (newman)',
      tenantId: tenants.microsoft,
      run: async () =>
        runMicrosoft({
          file: join(where.dir, microsoftFile),
          scimBaseUrl,
          token: await tokenOf(tenants.microsoft),
          say
        })
    },
    {
      title: 'Okta SCIM 2.0 spec test (Runscope export)',
      tenantId: tenants.okta,
      run: async () =>
        runOkta({
          dir: where.dir,
          scimBaseUrl,
          token: await tokenOf(tenants.okta),
          say,
          pauses: process.env.SCIM_PEERS_PAUSES === 'wait' ? 'wait' : 'skip'
        })
    }
  ]
  for (const { title, tenantId, run } of runs) {
    say(`\n== ${title}, tenant ${tenantId}`)
    // A suite that cannot run (a file the runner refuses) is one failure; the other still runs.
    const result = await run().catch((err: Error): SuiteResult => {
      say(`could not run: ${err.message}`)
      return {
        suite: title,
        passed: 0,
        failed: 1,
        failures: [{ where: title, assertion: 'run', detail: err.message }],
        notes: []
      }
    })
    results.push(result)
    say(`${result.suite}: ${tally(result)}`)
  }

  const total = results.reduce((sum, r) => ({ passed: sum.passed + r.passed, failed: sum.failed + r.failed }), {
    passed: 0,
    failed: 0
  })
  say('')
  for (const r of results) say(`${r.suite}: ${tally(r)}`)
  say(`total: ${tally(total)}`)

  const broken = await contractBroken(server.violations)
  return total.failed > 0 || broken ? 1 : 0
}

await runScript('scim peers', main)
