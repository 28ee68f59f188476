import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { copyFile, mkdir, rename, rm, stat } from 'node:fs/promises'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { projectRoot } from '../paths.ts'
import type { DownloadSpec, SignedRequest, StorageDriver, UploadSpec } from './driver.ts'

/** Storage keys the platform makes: tenant slug, record UUID (or `exports`), then a UUID. Anything else is refused before touching the disk. */
const keyShape = /^[a-z][a-z0-9-]{0,62}\/([0-9a-f-]{36}|exports)\/[0-9a-f-]{36}$/

export interface LocalGrant {
  method: 'PUT' | 'GET'
  key: string
  expires: number
  contentType: string
  size?: number
  sha256?: string
  fileName?: string
}

/**
 * The embedded default: files on local disk, uploaded and downloaded through the
 * service's own `/storage/…` routes at URLs signed with an HMAC over method, key,
 * expiry and every constraint (type, size, checksum, file name), so a URL cannot be
 * reused for another method, object or content, nor after it expires.
 */
export class LocalStorage implements StorageDriver {
  readonly name = 'local'
  readonly dir: string

  constructor(
    dir: string,
    private readonly secret: Buffer,
    private readonly baseUrl: () => string
  ) {
    this.dir = isAbsolute(dir) ? dir : resolve(projectRoot, dir)
  }

  path(key: string): string {
    if (!keyShape.test(key)) throw new Error(`not a storage key: ${key}`)
    return join(this.dir, key)
  }

  private signature(g: LocalGrant): string {
    const text = [g.method, g.key, g.expires, g.contentType, g.size ?? '', g.sha256 ?? '', g.fileName ?? ''].join('\n')
    return createHmac('sha256', this.secret).update(text).digest('base64url')
  }

  private url(g: LocalGrant): string {
    const q = new URLSearchParams({ method: g.method, expires: String(g.expires), type: g.contentType })
    if (g.size !== undefined) q.set('size', String(g.size))
    if (g.sha256) q.set('sha256', g.sha256)
    if (g.fileName !== undefined) q.set('name', g.fileName)
    q.set('sig', this.signature(g))
    return `${this.baseUrl()}/storage/${g.key}?${q}`
  }

  async signUpload(spec: UploadSpec): Promise<SignedRequest> {
    const g: LocalGrant = {
      method: 'PUT',
      key: spec.key,
      expires: Math.floor(spec.expiresAt.getTime() / 1000),
      contentType: spec.contentType,
      size: spec.size,
      sha256: spec.sha256?.toString('hex')
    }
    return {
      method: 'PUT',
      url: this.url(g),
      headers: { 'content-type': spec.contentType },
      expiresAt: new Date(g.expires * 1000).toISOString()
    }
  }

  async signDownload(spec: DownloadSpec): Promise<SignedRequest> {
    const g: LocalGrant = {
      method: 'GET',
      key: spec.key,
      expires: Math.floor(spec.expiresAt.getTime() / 1000),
      contentType: spec.contentType,
      fileName: spec.fileName
    }
    return { method: 'GET', url: this.url(g), headers: {}, expiresAt: new Date(g.expires * 1000).toISOString() }
  }

  /**
   * The grant a request's URL carries, checked: the reason it is refused otherwise
   * (`tampered`, `expired`, `wrong-method`).
   */
  verify(
    method: string,
    key: string,
    query: URLSearchParams,
    now = Date.now()
  ): { grant: LocalGrant } | { refused: 'tampered' | 'expired' | 'wrong-method' } {
    const num = (v: string | null) => (v !== null && /^\d+$/.test(v) ? Number(v) : undefined)
    const g: LocalGrant = {
      method: query.get('method') as 'PUT' | 'GET',
      key,
      expires: num(query.get('expires')) ?? NaN,
      contentType: query.get('type') ?? '',
      size: num(query.get('size')),
      sha256: query.get('sha256') ?? undefined,
      fileName: query.get('name') ?? undefined
    }
    const sig = Buffer.from(query.get('sig') ?? '')
    const expected = Buffer.from(
      keyShape.test(key) && (g.method === 'PUT' || g.method === 'GET') && Number.isFinite(g.expires)
        ? this.signature(g)
        : ''
    )
    if (!expected.length || sig.length !== expected.length || !timingSafeEqual(sig, expected))
      return { refused: 'tampered' }
    if (g.expires * 1000 < now) return { refused: 'expired' }
    if (g.method !== method && !(g.method === 'GET' && method === 'HEAD')) return { refused: 'wrong-method' }
    return { grant: g }
  }

  /** A temporary file in the store's own folder (so the final rename stays on one file system). */
  async tempPath(): Promise<string> {
    const p = join(this.dir, '.incoming', randomUUID())
    await mkdir(dirname(p), { recursive: true })
    return p
  }

  /** Moves a verified upload into place. */
  async commit(temp: string, key: string) {
    const target = this.path(key)
    await mkdir(dirname(target), { recursive: true })
    await rename(temp, target)
  }

  async putFile(key: string, path: string): Promise<{ size: number }> {
    const target = this.path(key)
    await mkdir(dirname(target), { recursive: true })
    await copyFile(path, target)
    return { size: (await stat(target)).size }
  }

  async stat(key: string): Promise<{ size: number } | undefined> {
    try {
      return { size: (await stat(this.path(key))).size }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw err
    }
  }

  async sha256(key: string): Promise<Buffer> {
    const hash = createHash('sha256')
    for await (const chunk of createReadStream(this.path(key))) hash.update(chunk as Buffer)
    return hash.digest()
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true })
  }
}
