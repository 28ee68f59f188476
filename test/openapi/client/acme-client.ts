/**
 * A client generated from a tenant's OpenAPI document: `generated/acme.ts` is written by
 * test/openapi/generated-client.test.ts with openapi-typescript from the live document,
 * then this file is type-checked against it (`tsc -p test/openapi/client`) and run.
 * Kept out of the project's own type check, since the generated file exists only then.
 */
import createClient from 'openapi-fetch'
import type { components, paths } from './generated/acme.ts'

type IncidentPayload = components['schemas']['IncidentPayload']

export async function createListTransition(baseUrl: string, token: string) {
  const client = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token}` } })
  const payload: IncidentPayload = {
    title: 'Pallet fell from racking',
    description: 'A pallet of drums slid off the top beam of bay 12 during a put-away.',
    occurredAt: '2026-11-21T14:05:00Z',
    site: 'Leeds DC',
    category: 'near-miss',
    severity: 'high'
  }
  const created = await client.POST('/api/v1/records', { body: { moduleKey: 'incident', payload } })
  if (!created.data) throw new Error(`create failed: ${created.response.status}`)
  const id: string = created.data.id
  const listed = await client.GET('/api/v1/records', {
    params: { query: { moduleKey: 'incident', limit: 10, state: 'reported' } }
  })
  if (!listed.data) throw new Error(`list failed: ${listed.response.status}`)
  const moved = await client.POST('/api/v1/records/{id}:transition', {
    params: { path: { id } },
    body: {
      transition: 'dismiss',
      comment: 'Not an incident: no load was lost.',
      payload: { closureNote: 'Checked on site; the pallet stayed on the beam.' }
    }
  })
  if (!moved.data) throw new Error(`transition failed: ${moved.response.status} ${JSON.stringify(moved.error)}`)
  const refused = await client.POST('/api/v1/records/{id}:transition', {
    params: { path: { id } },
    body: { transition: 'close' }
  })
  return {
    created: { status: created.response.status, number: created.data.number, state: created.data.state },
    listed: {
      status: listed.response.status,
      numbers: listed.data.items.map((r) => r.number),
      nextCursor: listed.data.nextCursor
    },
    moved: { status: moved.response.status, state: moved.data.state },
    // Problems are typed too: `code` is a member of the documented Problem schema.
    refused: { status: refused.response.status, code: refused.error?.code }
  }
}

/** Never run: it only has to fail to type-check where the document types the module. */
export function typedByTheModule(client: ReturnType<typeof createClient<paths>>) {
  // @ts-expect-error severity is an enum of the incident module: 'catastrophic' is not one of its values
  const badSeverity: IncidentPayload['severity'] = 'catastrophic'
  // @ts-expect-error moduleKey is an enum of the tenant's modules
  void client.GET('/api/v1/records', { params: { query: { moduleKey: 'no-such-module' } } })
  // @ts-expect-error a payload without the required fields is not an incident create body
  void client.POST('/api/v1/records', { body: { moduleKey: 'incident', payload: { title: 'only a title' } } })
  return badSeverity
}
