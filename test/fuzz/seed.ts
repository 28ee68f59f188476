import type { Test } from '../helpers/tap.ts'
import { startTestServer, type TestServer } from '../helpers/server.ts'
import { Snapshots } from './snapshot.ts'
import { pascal, sample, type SampleContext } from './samples.ts'
import type { Schema } from './operations.ts'
import { obj, type JsonLike } from './wire.ts'

/**
 * The real objects requests point at: records of each module, a deleted record, another
 * tenant's record, attachments (pending and ready), an export, disposable tokens, and the
 * signed storage URLs. A request names them symbolically (`record:incident:0`) and they are
 * looked up when it is sent, so a record deleted by one request is replaced for the next.
 */
export interface SignedUrl {
  params: Record<string, string>
  query: Array<[string, string]>
}

export class Pools {
  readonly ids = new Map<string, string>()
  private download?: { url: SignedUrl; at: number }
  private upload?: { url: SignedUrl; at: number }
  /** The tenant's modules, those whose payloads refer to other records last. */
  modules: string[] = []

  constructor(
    private readonly server: TestServer,
    private readonly doc: Schema,
    /** The tenant's second tenant, for cross-tenant ids. */
    private readonly otherKey: string
  ) {}

  /** The id a symbolic reference stands for (the reference itself when unknown). */
  id(ref: string): string {
    return this.ids.get(ref) ?? ref
  }

  /** A sample context whose uuids are real: `x-ref: record:<module>` and `recordId` take seeded records. */
  context(module?: string, full = false): SampleContext {
    return {
      doc: this.doc,
      module,
      full,
      uuid: (s, key) => {
        const target =
          typeof s['x-ref'] === 'string' && s['x-ref'].startsWith('record:')
            ? s['x-ref'].slice(7)
            : key === 'recordId'
              ? 'incident'
              : undefined
        return target ? this.id(`record:${target}:0`) : '6d1f3c52-3b7e-4c55-9d1e-0c5b8a1f2e11'
      }
    }
  }

  private async must(method: string, path: string, body?: unknown, token?: string, expect = [200, 201, 202]) {
    const res = await this.server.request(method, path, { body, token })
    if (!expect.includes(res.status))
      throw new Error(`seeding: ${method} ${path} answered ${res.status}: ${res.text.slice(0, 500)}`)
    return res.body
  }

  async createRecord(module: string, token?: string): Promise<string> {
    return (
      await this.must(
        'POST',
        '/api/v1/records',
        {
          moduleKey: module,
          payload: sample(this.context(module), { $ref: `#/components/schemas/${pascal(module)}Payload` })
        },
        token
      )
    ).id
  }

  async seed(modules: string[]) {
    // A module whose payload refers to records of another (x-ref) is seeded after it.
    const refs = (m: string) =>
      [...JSON.stringify(this.doc.components.schemas[`${pascal(m)}Payload`]).matchAll(/"x-ref":"record:([a-z0-9-]+)"/g)]
        .length
    this.modules = [...modules].sort((a, b) => refs(a) - refs(b) || a.localeCompare(b))
    for (const m of this.modules)
      for (const slot of [0, 1]) this.ids.set(`record:${m}:${slot}`, await this.createRecord(m))
    const deleted = await this.createRecord('incident')
    await this.must('DELETE', `/api/v1/records/${deleted}`)
    this.ids.set('record:deleted', deleted)
    this.ids.set('record:other-tenant', await this.createRecord('incident', this.otherKey))
    // Attachments hang off a record no operation's base deletes, so their URLs stay good.
    this.ids.set('record:attachments', await this.createRecord('incident'))
    this.ids.set('attachment:pending', (await this.newUpload()).id)
    const ready = await this.newUpload()
    await this.put(ready.url, 'hello')
    this.ids.set('attachment:ready', ready.id)
    this.upload = { url: (await this.newUpload()).url, at: Date.now() }
    this.ids.set('export', (await this.must('POST', '/api/v1/exports', { moduleKey: 'incident', format: 'csv' })).id)
    for (const slot of [0, 1])
      this.ids.set(
        `token:${slot}`,
        (await this.must('POST', '/api/v1/tokens', { type: 'api-key', name: `fuzz disposable ${slot}` })).id
      )
    await this.scimUser()
    await this.scimGroup()
  }

  /** A SCIM user and a group with it as member, for the SCIM item operations (made again when one deletes them). */
  private async scimUser() {
    this.ids.set(
      'scim-user',
      (
        await this.must('POST', '/api/scim/v2/Users', {
          userName: `fuzz.user.${Date.now()}.${Math.random().toString(36).slice(2)}`,
          name: { givenName: 'Fuzz', familyName: 'User' }
        })
      ).id
    )
  }

  private async scimGroup() {
    this.ids.set(
      'scim-group',
      (
        await this.must('POST', '/api/scim/v2/Groups', {
          displayName: `fuzz group ${Date.now()} ${Math.random().toString(36).slice(2)}`,
          members: [{ value: this.id('scim-user') }]
        })
      ).id
    )
  }

  private async newUpload(): Promise<{ id: string; url: SignedUrl }> {
    const body = { recordId: this.id('record:attachments'), fileName: 'fuzz.txt', contentType: 'text/plain', size: 5 }
    const res = await this.must('POST', '/api/v1/attachments', body)
    return { id: res.id, url: signed(res.upload.url) }
  }

  private async put(url: SignedUrl, text: string) {
    const target = `/storage/${url.params.tenantId}/${url.params.recordId}/${url.params.fileId}?${url.query.map(([k, v]) => `${k}=${v}`).join('&')}`
    const res = await this.server.request('PUT', target, {
      raw: text,
      headers: { 'content-type': 'text/plain' },
      token: null
    })
    if (res.status !== 200) throw new Error(`seeding: upload answered ${res.status}: ${res.text}`)
  }

  /** The signed URL a storage operation starts from: a pending attachment's upload, or a ready one's download. */
  async signedUrl(kind: 'upload' | 'download'): Promise<SignedUrl> {
    // Upload URLs live 900 s, download URLs 300 s; a long run refreshes them.
    if (kind === 'upload') {
      if (Date.now() - this.upload!.at > 600_000) this.upload = { url: (await this.newUpload()).url, at: Date.now() }
      return this.upload!.url
    }
    if (!this.download || Date.now() - this.download.at > 60_000) {
      const res = await this.must('GET', `/api/v1/attachments/${this.id('attachment:ready')}`)
      this.download = { url: signed(res.download.url), at: Date.now() }
    }
    return this.download.url
  }

  /** After a request succeeded: put back what it used up (a deleted record, an uploaded file). */
  async replenish(opId: string, _refs: string[]) {
    // A deleted record, or one a transition moved on, is replaced by a new one in its initial state. Which
    // records that are is asked of the database, not read from the request: a mutation may have put another
    // seeded record's id in the path. Replaced in seeding order, so a record another refers to comes first.
    if (opId === 'deleteRecord' || opId === 'transitionRecord') {
      const seeded = [...this.ids.keys()].filter((r) => /^record:[a-z0-9-]+:\d$/.test(r))
      const { rows } = await this.server.platform.db.system.query(
        'SELECT id FROM records WHERE id = ANY($1::uuid[]) AND deleted_at IS NULL AND version = 1',
        [seeded.map((r) => this.ids.get(r))]
      )
      const fresh = new Set(rows.map((r) => r.id))
      for (const ref of seeded)
        if (!fresh.has(this.ids.get(ref))) this.ids.set(ref, await this.createRecord(ref.split(':')[1]))
    }
    if (opId === 'uploadStoredFile') this.upload = { url: (await this.newUpload()).url, at: Date.now() }
    // A deleted SCIM user or group (the pooled one, or another a mutation pointed at) is made again.
    if (
      opId === 'deleteScimUser' &&
      (await this.server.request('GET', `/api/scim/v2/Users/${this.id('scim-user')}`)).status === 404
    )
      await this.scimUser()
    if (
      opId === 'deleteScimGroup' &&
      (await this.server.request('GET', `/api/scim/v2/Groups/${this.id('scim-group')}`)).status === 404
    )
      await this.scimGroup()
  }
}

/** `http://host/storage/acme/<record>/<file>?method=PUT&…` → its path parameters and raw query pairs. */
function signed(url: string): SignedUrl {
  const u = new URL(url)
  const [, , tenantId, recordId, fileId] = u.pathname.split('/')
  const query = u.search
    .slice(1)
    .split('&')
    .map((pair) => pair.split('=') as [string, string])
  return { params: { tenantId, recordId, fileId }, query }
}

/** Full valid payload of a module (every field), for `__proto__` smuggling. */
export function fullPayload(pools: Pools, module: string | undefined): JsonLike {
  if (!module) return obj([['polluted', 'yes']])
  return sample(pools.context(module, true), { $ref: `#/components/schemas/${pascal(module)}Payload` })
}

/**
 * A fuzz campaign's server: started, seeded with records of every module (tenant acme, globex's
 * for cross-tenant ids), and a snapshot reader of its database; both closed when `t` ends.
 */
export async function seededFuzzServer(
  t: Test
): Promise<{ server: TestServer; token: string; spec: any; snapshots: Snapshots; pools: Pools }> {
  const server = await startTestServer()
  let snapshots: Snapshots | undefined
  t.teardown(async () => {
    await snapshots?.close()
    await server.close()
  })
  const token = server.keys.acme
  const spec = (await server.request('GET', '/api/docs/spec.json', { token })).body
  const modules: string[] = (await server.request('GET', '/api/v1/modules')).body.items.map(
    (m: { key: string }) => m.key
  )
  const pools = new Pools(server, spec, server.keys.globex)
  await pools.seed(modules)
  snapshots = await Snapshots.open(server.platform.config.database.url!)
  return { server, token, spec, snapshots, pools }
}
