import { randomUUID } from 'node:crypto'
import type pg from 'pg'
import { assertScope } from '../../core/auth/access.ts'
import { ownerOf } from '../../core/auth/owner.ts'
import { isAdmin, requirePrincipal, type Principal } from '../../core/auth/principal.ts'
import type { AppConfig } from '../../core/config.ts'
import { problems } from '../../core/errors/index.ts'
import { eventEnvelope, eventKinds } from '../../core/events/events.ts'
import type { CallParams } from '../../core/hooks/call-params.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import { assertValid, isUuid, validationError, validationProblems } from '../../core/validation.ts'
import type { Dispatcher } from './webhooks.dispatcher.ts'
import * as repo from './webhooks.repository.ts'
import {
  previousSecretsKept,
  webhookDataValidator,
  webhookEmptyValidator,
  webhookPatchValidator,
  webhookQueryValidator,
  webhookReplayValidator,
  type WebhookData,
  type WebhookOut,
  type WebhookPatch,
  type WebhookReplay
} from './webhooks.schema.ts'
import { webhookTestKind } from './webhooks.shared.ts'
import { newSecret, type SecretBox } from './webhooks.signing.ts'
import { allowList, checkTarget, TargetRefused } from './webhooks.target.ts'

export type WebhookParams = CallParams<Record<string, unknown>>

/** A colon method's body: none is an empty object; anything else (null included) is validated as sent. */
const bodyOf = (data: unknown) => (data === undefined ? {} : data)

/** The kinds a subscription may name: every event kind of the log, and the test ping. */
export const subscribableKinds = [...Object.keys(eventKinds), webhookTestKind]

/** Throws 403 unless the principal may manage webhooks: what a caller needs, and what a subscription's owner must keep for it to deliver. */
export function assertManager(p: Principal): void {
  assertScope(p, 'webhooks:write')
  if (!isAdmin(p))
    throw problems.forbidden('permission.denied', 'Only tenant admins manage webhooks.', { missing: 'admin' })
}

/** What Ajv reports when a replay body breaks the schema's `oneOf` / `dependentRequired` rule (and nothing else). */
const ruleKeywords = new Set(['oneOf', 'required', 'false schema', 'dependentRequired'])

/** Validates a replay body; a body that breaks only the eventId-or-range rule gets one problem saying the rule. */
function assertReplay(body: unknown): asserts body is WebhookReplay {
  const found = validationProblems(webhookReplayValidator, body)
  if (!found) return
  const ruleOnly = found.list.every(
    (p) => ruleKeywords.has(p.code) && ['', '/eventId', '/from', '/to'].includes(p.pointer)
  )
  throw ruleOnly
    ? validationError([
        {
          pointer: '',
          field: '(body)',
          code: 'oneOf',
          detail: 'must give either eventId alone, or from and to together'
        }
      ])
    : validationError(found.list, found.more)
}

/** Events a replay queues at most per call. */
export const replayMax = 10_000

/**
 * Webhook subscriptions of the caller's tenant: admin-only with the `webhooks:write` scope
 * for reading too (the list shows where the tenant's events go, the log what receivers
 * answered). The signing secret is in the create and rotate-secret answers only.
 */
export class WebhooksService {
  private readonly allowed

  constructor(
    private readonly o: {
      pool: pg.Pool
      config: AppConfig['webhooks']
      tenants: TenantDirectory
      secrets: () => Promise<SecretBox>
      dispatcher: () => Dispatcher | undefined
    }
  ) {
    this.allowed = allowList(o.config.allowedCidrs)
  }

  principal(params: WebhookParams): Principal {
    const p = requirePrincipal(params, 'A webhooks call')
    assertManager(p)
    return p
  }

  async subscription(p: Principal, id: unknown): Promise<WebhookOut> {
    const found = isUuid(id) ? await repo.selectSubscription(this.o.pool, p.tenantId, id) : undefined
    if (!found) throw problems.notFound('webhook.not_found', `No webhook subscription ${String(id)}.`)
    return found
  }

  private async checkUrl(url: string) {
    try {
      await checkTarget(url, this.o.config, this.allowed)
    } catch (err) {
      if (err instanceof TargetRefused)
        throw problems.unprocessable('webhook.target_refused', `The target ${url} is refused: ${err.message}`)
      throw err
    }
  }

  private checkKindsAndModules(p: Principal, kinds?: string[], modules?: string[] | null) {
    const unknown = (kinds ?? []).filter((k) => !subscribableKinds.includes(k))
    if (unknown.length)
      throw validationError([
        {
          pointer: '/kinds',
          field: 'kinds',
          code: 'enum',
          detail: `names unknown event kind ${unknown.join(', ')}; kinds: ${subscribableKinds.join(', ')}`,
          allowed: subscribableKinds
        }
      ])
    const installed = [...this.o.tenants.get(p.tenantId)!.modules.keys()]
    const missing = (modules ?? []).filter((m) => !installed.includes(m))
    if (missing.length)
      throw validationError([
        {
          pointer: '/modules',
          field: 'modules',
          code: 'enum',
          detail: `names module ${missing.join(', ')}, not installed; modules: ${installed.join(', ')}`,
          allowed: installed
        }
      ])
  }

  async find(params: WebhookParams): Promise<{ items: WebhookOut[] }> {
    const p = this.principal(params)
    assertValid(webhookQueryValidator, { ...(params.query ?? {}) })
    return { items: await repo.listSubscriptions(this.o.pool, p.tenantId) }
  }

  async get(id: string, params: WebhookParams): Promise<WebhookOut> {
    return this.subscription(this.principal(params), id)
  }

  async create(data: WebhookData, params: WebhookParams): Promise<WebhookOut> {
    const p = this.principal(params)
    if (params.idempotencyKey !== undefined) {
      throw problems.badRequest(
        'idempotency.unsupported',
        'Webhook creation does not take an Idempotency-Key: a replay would have to show the signing secret again. Create a new one if a response was lost, and delete the orphan.'
      )
    }
    assertValid<WebhookData>(webhookDataValidator, data)
    this.checkKindsAndModules(p, data.kinds, data.modules)
    await this.checkUrl(data.url)
    const secret = newSecret()
    const box = await this.o.secrets()
    const created = await repo.insertSubscription(this.o.pool, {
      tenantId: p.tenantId,
      url: data.url,
      kinds: data.kinds,
      modules: data.modules ?? null,
      description: data.description ?? null,
      secret: box.seal(secret),
      createdBy: p.actor,
      owner: ownerOf(p)
    })
    return { ...created, secret }
  }

  async patch(id: string | null, data: WebhookPatch, params: WebhookParams): Promise<WebhookOut> {
    const p = this.principal(params)
    await this.subscription(p, id)
    assertValid<WebhookPatch>(webhookPatchValidator, data)
    this.checkKindsAndModules(p, data.kinds, data.modules)
    if (data.url !== undefined) await this.checkUrl(data.url)
    const out = (await repo.updateSubscription(this.o.pool, p.tenantId, String(id), data))!
    if (data.enabled) this.o.dispatcher()?.wake()
    return out
  }

  async remove(id: string | null, params: WebhookParams): Promise<WebhookOut> {
    const p = this.principal(params)
    const out = isUuid(id) ? await repo.deleteSubscription(this.o.pool, p.tenantId, id) : undefined
    if (!out) throw problems.notFound('webhook.not_found', `No webhook subscription ${String(id)}.`)
    return out
  }

  /**
   * A new secret, shown once; the one it replaces keeps signing beside it for the grace period,
   * as does each older one until its own grace ends (at most `previousSecretsKept` of them).
   */
  async 'rotate-secret'(data: unknown, params: WebhookParams): Promise<WebhookOut> {
    const p = this.principal(params)
    await this.subscription(p, params.id)
    assertValid(webhookEmptyValidator, bodyOf(data))
    const secret = newSecret()
    const box = await this.o.secrets()
    const out = await repo.rotateSecret(
      this.o.pool,
      p.tenantId,
      String(params.id),
      box.seal(secret),
      this.o.config.secretGraceHours,
      previousSecretsKept
    )
    if (!out) throw problems.notFound('webhook.not_found', `No webhook subscription ${String(params.id)}.`)
    if ('refused' in out) {
      throw problems.conflict(
        'webhook.rotation_limit',
        `${previousSecretsKept} secrets replaced by earlier rotations still sign within their grace period; the first of them stops at ${out.refused}, and a rotation is possible again then.`
      )
    }
    return { ...out, secret }
  }

  /** Queues a `webhook.test` delivery to this subscription (not an event of the log: nothing changed). */
  async test(data: unknown, params: WebhookParams): Promise<{ eventId: string; queued: true }> {
    const p = this.principal(params)
    const sub = await this.subscription(p, params.id)
    assertValid(webhookEmptyValidator, bodyOf(data))
    const envelope = eventEnvelope(p.tenantId, {
      id: randomUUID(),
      type: webhookTestKind,
      occurredAt: new Date().toISOString(),
      actor: p.actor,
      subjectId: sub.id
    })
    await repo.queueEnvelope(this.o.pool, p.tenantId, sub.id, envelope)
    this.o.dispatcher()?.wake()
    return { eventId: envelope.id, queued: true }
  }

  /** Queues events of the log again for this subscription: one by id, or those of a time range. */
  async replay(data: WebhookReplay, params: WebhookParams): Promise<{ queued: number }> {
    const p = this.principal(params)
    await this.subscription(p, params.id)
    assertReplay(bodyOf(data))
    const byId = data.eventId !== undefined
    if (!byId && Date.parse(data.to!) <= Date.parse(data.from!))
      throw validationError([{ pointer: '/to', field: 'to', code: 'range', detail: 'must be later than from' }])
    const queued = await repo.requeue(this.o.pool, p.tenantId, String(params.id), data, replayMax)
    if (byId && !queued)
      throw problems.notFound(
        'webhook.event_not_found',
        `No event ${data.eventId} of this subscription's kinds and modules in the event log.`
      )
    this.o.dispatcher()?.wake()
    return { queued }
  }
}
