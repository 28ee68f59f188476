import { randomUUID } from 'node:crypto'
import type pg from 'pg'
import { assertCan, assertScope } from '../../core/auth/access.ts'
import { requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import { transaction } from '../../core/db/index.ts'
import { ApiError, problems } from '../../core/errors/index.ts'
import type { Limiter } from '../../core/limits/limiter.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import { attachmentKey, type StorageDriver } from '../../core/storage/driver.ts'
import { attachmentsPath } from './attachments.shared.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { assertValid, isUuid, validationError } from '../../core/validation.ts'
import { readableRecord } from '../records/records.shared.ts'
import * as repo from './attachments.repository.ts'
import { attachmentDataValidator, type AttachmentData, type AttachmentOut } from './attachments.schema.ts'
import type { CallParams } from '../../core/hooks/call-params.ts'

interface AttachmentParams extends CallParams {
  /** Set by the idempotency hook: stores the response inside the write's own transaction. */
  idempotency?: { complete(db: pg.PoolClient, body: unknown): Promise<void> }
}

export interface AttachmentsOptions {
  pool: pg.Pool
  tenants: TenantDirectory
  storage: StorageDriver
  limiter?: Limiter
  urlsPerMinute(tenantId: string): number
  maxBytes: number
  contentTypes: string[]
  uploadUrlSeconds: number
  downloadUrlSeconds: number
}

/** Whether a media type is on the allow-list (exact, or a `type/*` entry). */
export function allowedType(list: readonly string[], type: string): boolean {
  const t = type.toLowerCase()
  return list.some((a) => a.toLowerCase() === t || (a.endsWith('/*') && t.startsWith(a.slice(0, -1).toLowerCase())))
}

/**
 * Attachments of records. The service signs URLs and records metadata; the bytes go
 * straight between the client and storage. An attachment is `pending` until its
 * upload is verified (size, and SHA-256 when declared), and only then part of the
 * record. Every call checks the record's tenant, the caller's rights on it (and its
 * row rule), and counts against the signed-URL limit.
 */
export class AttachmentsService {
  constructor(private readonly o: AttachmentsOptions) {}

  private notFound(id: string) {
    return problems.notFound('attachment.not_found', `No attachment ${id} for this tenant.`)
  }

  /** The record and its module when the principal may see it (readableRecord), else 404; 403 without the right to `action`. */
  private async record(
    principal: Principal,
    recordId: string,
    action: 'attachments' | 'read'
  ): Promise<{ module: RegisteredModule; live: boolean }> {
    const found = await readableRecord({ db: this.o.pool, tenants: this.o.tenants }, principal, recordId)
    if (!found) throw problems.notFound('record.not_found', `No record ${recordId} for this tenant.`)
    if (action === 'attachments') assertCan(principal, found.module, 'attachments')
    return { module: found.module, live: !found.row.deleted_at }
  }

  /** 50 signed URLs a minute per credential (configurable per tenant), on the shared limiter. */
  private async countUrl(principal: Principal) {
    if (!this.o.limiter) return
    const limit = this.o.urlsPerMinute(principal.tenantId)
    const r = await this.o.limiter.hit(`urls:${principal.tenantId}:${principal.credentialId}`, limit, 60_000)
    if (!r.allowed) {
      const retryAfter = Math.max(1, Math.ceil(r.retryAfterMs / 1000))
      throw new ApiError(
        'rate-limited',
        'attachments.url_limit',
        `This credential asked for ${limit} signed URLs in the last minute, its limit. The next will be signed at ${new Date(r.resetAt).toISOString()}.`,
        { limit },
        {
          'Retry-After': String(retryAfter),
          'X-RateLimit-Reset': String(Math.ceil(r.resetAt / 1000))
        }
      )
    }
  }

  async create(data: AttachmentData, params: AttachmentParams) {
    const principal = requirePrincipal(params, 'An attachments call')
    assertValid<AttachmentData>(attachmentDataValidator, data)
    if (!allowedType(this.o.contentTypes, data.contentType)) {
      throw validationError([
        {
          pointer: '/contentType',
          field: 'contentType',
          code: 'enum',
          detail: `must be one of: ${this.o.contentTypes.join(', ')}`,
          allowed: this.o.contentTypes
        }
      ])
    }
    if (data.size > this.o.maxBytes) {
      throw validationError([
        { pointer: '/size', field: 'size', code: 'maximum', detail: `must be at most ${this.o.maxBytes} bytes` }
      ])
    }
    const { module, live } = await this.record(principal, data.recordId, 'attachments')
    if (!live) throw problems.notFound('record.not_found', `No live record ${data.recordId} for this tenant.`)
    assertScope(principal, 'attachments:write', module.definition.key)
    await this.countUrl(principal)
    const id = randomUUID()
    const key = attachmentKey(principal.tenantId, data.recordId, id)
    const sha256 = data.sha256 ? Buffer.from(data.sha256, 'hex') : null
    // Signed first, so the transaction holds no connection while a driver signs; the URL is no use without the row.
    const upload = await this.o.storage.signUpload({
      key,
      contentType: data.contentType,
      size: data.size,
      sha256: sha256 ?? undefined,
      expiresAt: new Date(Date.now() + this.o.uploadUrlSeconds * 1000)
    })
    // The stored Idempotency-Key response commits with the row, or neither does.
    return transaction(this.o.pool, async (client) => {
      const row = await repo.insertAttachment(client, {
        tenantId: principal.tenantId,
        id,
        recordId: data.recordId,
        fileName: data.fileName,
        contentType: data.contentType,
        size: data.size,
        sha256,
        driver: this.o.storage.name,
        key,
        actor: principal.actor
      })
      const out = {
        ...repo.toAttachment(row),
        upload,
        complete: { method: 'POST', url: `/${attachmentsPath}/${id}:complete` }
      }
      await params.idempotency?.complete(client, out)
      return out
    })
  }

  /** The attachment's metadata and a short-lived download URL; pending ones are 409. */
  async get(id: string, params: AttachmentParams): Promise<AttachmentOut & { download: unknown }> {
    const principal = requirePrincipal(params, 'An attachments call')
    const row = isUuid(id) ? await repo.selectAttachment(this.o.pool, principal.tenantId, id) : undefined
    if (!row) throw this.notFound(id)
    const { module, live } = await this.record(principal, row.record_id, 'read').catch((err) => {
      throw err instanceof ApiError && err.code === 404 ? this.notFound(id) : err
    })
    // A deleted record's files are evidence: reachable through the audit log only.
    if (!live)
      throw problems.notFound(
        'attachment.not_found',
        `The record of attachment ${id} was deleted; its files are listed with download links in GET /api/v1/audit-log?recordId=${row.record_id}.`
      )
    assertScope(principal, 'attachments:read', module.definition.key)
    if (row.state !== 'ready')
      throw problems.conflict(
        'attachment.pending',
        `Attachment ${id} has not been uploaded and verified yet; upload it, then POST /api/v1/attachments/${id}:complete.`
      )
    await this.countUrl(principal)
    return { ...repo.toAttachment(row), download: await this.sign(row) }
  }

  /** A signed download URL for a ready attachment (also used by the audit log). */
  sign(row: repo.AttachmentRow) {
    return this.o.storage.signDownload({
      key: row.storage_key,
      contentType: row.content_type,
      fileName: row.file_name,
      expiresAt: new Date(Date.now() + this.o.downloadUrlSeconds * 1000)
    })
  }

  /**
   * Confirms an upload: the stored object must have the declared size and, when one was
   * declared, the SHA-256. Otherwise the attachment stays pending (and can be uploaded
   * again). Idempotent once ready.
   */
  async complete(_data: unknown, params: AttachmentParams): Promise<AttachmentOut> {
    const principal = requirePrincipal(params, 'An attachments call')
    const id = params.id ?? ''
    const row = isUuid(id) ? await repo.selectAttachment(this.o.pool, principal.tenantId, id) : undefined
    if (!row) throw this.notFound(id)
    const { module, live } = await this.record(principal, row.record_id, 'attachments').catch((err) => {
      throw err instanceof ApiError && err.code === 404 ? this.notFound(id) : err
    })
    if (!live) throw this.notFound(id)
    assertScope(principal, 'attachments:write', module.definition.key)
    if (row.state === 'ready') return repo.toAttachment(row)
    const verified = await verifyUpload(this.o.storage, row)
    if (verified !== 'ok') {
      // A wrong file is not kept: the attachment stays pending for the right one.
      if (verified.problemCode !== 'attachment.not_uploaded') await this.o.storage.delete(row.storage_key)
      throw verified
    }
    return transaction(this.o.pool, async (client) => {
      // Another request may have completed it first: answer with the row as it is now, not as read before.
      const ready =
        (await repo.markReady(client, principal.tenantId, id, principal.actor)) ??
        (await repo.selectAttachment(client, principal.tenantId, id))
      const out = repo.toAttachment(ready ?? row)
      await params.idempotency?.complete(client, out)
      return out
    })
  }
}

/** Checks a stored object against what was declared: 'ok', or the problem that keeps it pending. */
export async function verifyUpload(storage: StorageDriver, row: repo.AttachmentRow): Promise<'ok' | ApiError> {
  const stat = await storage.stat(row.storage_key)
  if (!stat)
    return problems.conflict(
      'attachment.not_uploaded',
      `Nothing has been uploaded for attachment ${row.id} yet; PUT the file to its signed upload URL first.`
    )
  if (stat.size !== Number(row.size)) {
    return new ApiError(
      'unprocessable',
      'attachment.size_mismatch',
      `The upload has ${stat.size} bytes, but ${row.size} were declared; the attachment stays pending. Upload the right file again.`
    )
  }
  if (row.sha256 && !(await storage.sha256(row.storage_key)).equals(row.sha256)) {
    return new ApiError(
      'unprocessable',
      'attachment.checksum_mismatch',
      `The upload's SHA-256 differs from the one declared; the attachment stays pending. Upload the right file again.`
    )
  }
  return 'ok'
}
