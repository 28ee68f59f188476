/**
 * Okta's SCIM 2.0 spec test (a Runscope export) against a SCIM base URL, set up as Okta's
 * guide sets it up in Runscope: initial variables `SCIMBaseURL` and `auth` (the whole
 * Authorization header value), then the test's initial script (Initial_Script_Spec.txt:
 * random given name, family name, email and userName), run as Runscope ran it.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { runScript } from './runscope-checks.ts'
import { runRunscope, type RunscopeExport } from './runscope.ts'
import { oktaFiles } from './files.ts'
import { excerpt, type Say, type SuiteResult } from './results.ts'

/**
 * The user the first steps read. Okta's test starts with "GET /Users?count=1" and asserts
 * that `Resources[0]` has an id, name.givenName, name.familyName, userName, active and
 * emails[0].value, then reads that user by id: it is written for an app that already has
 * users, which a fresh tenant has not. So one is created through SCIM first.
 */
export const oktaFixtureUser = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: 'okta.fixture@example.com',
  name: { givenName: 'Fixture', familyName: 'Okta' },
  emails: [{ value: 'okta.fixture@example.com', type: 'work', primary: true }],
  displayName: 'Fixture Okta',
  active: true
}

export async function runOkta(options: {
  dir: string
  scimBaseUrl: string
  token: string
  say: Say
  pauses?: 'wait' | 'skip'
}): Promise<SuiteResult> {
  const { dir, scimBaseUrl, token, say } = options
  const test = JSON.parse(readFileSync(join(dir, oktaFiles.test), 'utf8')) as RunscopeExport
  const variables = new Map<string, string>([
    ['SCIMBaseURL', scimBaseUrl],
    ['auth', `Bearer ${token}`]
  ])
  const initial = runScript(readFileSync(join(dir, oktaFiles.initialScript), 'utf8'), variables, {
    filename: oktaFiles.initialScript
  })
  if (initial.error || initial.assertions.some((a) => !a.passed))
    throw new Error(
      `${oktaFiles.initialScript} failed: ${initial.error ?? initial.assertions.find((a) => !a.passed)?.message}`
    )
  const notes = [
    `initial variables: SCIMBaseURL=${scimBaseUrl}, auth=Bearer <a service-account token with the scim scope>; ${oktaFiles.initialScript} set ${[
      ...variables.keys()
    ]
      .filter((k) => k !== 'SCIMBaseURL' && k !== 'auth')
      .map((k) => `${k}=${variables.get(k)}`)
      .join(', ')}`
  ]

  const seeded = await fetch(`${scimBaseUrl}/Users`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/scim+json',
      accept: 'application/scim+json'
    },
    body: JSON.stringify(oktaFixtureUser)
  }).then(
    async (res) => `${res.status} ${excerpt(await res.text(), 200)}`,
    (err: Error) => `no response (${err.message})`
  )
  notes.push(
    `fixture: POST /Users ${oktaFixtureUser.userName} before the test (its first steps read an existing user) → ${seeded}`
  )
  for (const line of notes) say(`note: ${line}`)

  const outcome = await runRunscope(test, { variables, pauses: options.pauses, say })
  return {
    suite: `Okta (${test.name ?? oktaFiles.test})`,
    passed: outcome.passed,
    failed: outcome.failed,
    failures: outcome.failures,
    notes
  }
}
