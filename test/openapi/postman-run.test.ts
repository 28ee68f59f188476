import { createRequire } from 'node:module'
import type { EventEmitter } from 'node:events'
import t from '../helpers/tap.ts'
import { startTestServer } from '../helpers/server.ts'

/**
 * The tenant's Postman collection, as downloaded, run by newman (Postman's own runner, a
 * pinned devDependency) against the real service on a fresh tenant: every request in the
 * collection's order, with its scripts. Each must answer its documented status, and the
 * ids the scripts chain must be the ones the service made.
 */
interface RunSummary {
  run: { failures: Array<{ error: { message: string }; source?: { name?: string } }>; executions: unknown[] }
}
interface Newman {
  run(options: Record<string, unknown>, done: (err: Error | null, summary: RunSummary) => void): EventEmitter
}
const newman = createRequire(import.meta.url)('newman') as Newman

// The webhook example targets the documentation address 203.0.113.10, which a real deployment refuses (send your receiver's URL).
const server = await startTestServer({ webhooks: { allowedCidrs: ['203.0.113.0/24'] } })
t.teardown(() => server.close())
const token = server.keys.acme

interface Sent {
  name: string
  method: string
  url: string
  status?: number
  /** The response body, parsed when it is JSON. */
  body?: any
  error?: string
}

function runCollection(collection: unknown): Promise<{ summary: RunSummary; sent: Sent[] }> {
  const sent: Sent[] = []
  return new Promise((resolve, reject) => {
    newman
      .run({ collection, reporters: [], timeoutRequest: 30_000 }, (err, summary) => {
        if (err) return reject(err)
        resolve({ summary, sent })
      })
      .on('request', (err: Error | null, args: any) => {
        let body: unknown
        try {
          body = JSON.parse(args.response?.stream?.toString() ?? '')
        } catch {
          /* not JSON */
        }
        sent.push({
          name: args.item.name,
          method: args.request.method,
          url: args.request.url.toString(),
          status: args.response?.code,
          body,
          error: err?.message
        })
      })
  })
}

const reply = await server.request('GET', '/api/docs/postman.json', { token })
const collection = reply.body
collection.variable.find((v: any) => v.key === 'token').value = token
const requests: any[] = collection.item.flatMap((f: any) => f.item)
const { summary, sent } = await runCollection(collection)

t.test('newman sends every request of the collection once, in its order', async (t) => {
  t.same(
    sent.map((s) => s.name),
    requests.map((r) => r.name)
  )
  t.same(
    sent.filter((s) => s.error),
    [],
    'no request failed to send'
  )
})

t.test('every request answers its documented status, and no script fails', async (t) => {
  t.same(
    summary.run.failures.map((f) => `${f.source?.name}: ${f.error.message}`),
    []
  )
  for (const [i, r] of requests.entries()) {
    const expected = Number(
      /to\.have\.status\((\d+)\)/.exec(r.event.find((e: any) => e.listen === 'test').script.exec.join('\n'))?.[1]
    )
    t.equal(sent[i]?.status, expected, `${r.request.method} ${r.name}`)
  }
})

t.test(
  'the ids the collection chained are those of what it created, and the clean-up removed the record and revoked the token',
  async (t) => {
    const created = (name: string) => sent.find((s) => s.name === name)?.body?.id as string
    const recordId = created('Create a record')
    t.match(recordId, /^[0-9a-f-]{36}$/)
    t.ok(
      sent.some((s) => s.method === 'PATCH' && s.url.endsWith(`/api/v1/records/${recordId}`)),
      'the change went to the created record'
    )
    t.ok(
      sent.some((s) => s.url.includes(`/api/v1/records/${recordId}:transition`)),
      'so did the transition'
    )
    t.equal(
      (await server.request('GET', `/api/v1/records/${recordId}`, { token })).status,
      404,
      'the record is deleted'
    )
    const tokenId = created('Create a token')
    const minted = await server.request('GET', `/api/v1/tokens/${tokenId}`, { token })
    t.equal(minted.status, 200)
    t.equal(minted.body.name, 'ERP sync')
    t.not(minted.body.revokedAt, null, 'the minted token is revoked: no live credential is left behind')
    const attachment = await server.request('GET', `/api/v1/attachments/${created('Ask for an upload URL')}`, { token })
    t.equal(attachment.status, 404, 'the attachment went with its record')
    t.equal(
      (await server.request('GET', `/api/v1/exports/${created('Start an export')}`, { token })).status,
      200,
      'the export was made'
    )
  }
)

t.test('the collection says up front that running it writes to the tenant and mints a token it revokes', async (t) => {
  const description: string = collection.info.description
  t.match(description, /^\*\*Running this collection writes to the tenant of your `token`\.\*\*/)
  for (const name of ['Create a record', 'Create a token']) t.match(description, `“${name}”`)
  t.match(description, /mints a live credential \(“Create a token”\); “Revoke a token” in “Clean up” revokes it/)
})
