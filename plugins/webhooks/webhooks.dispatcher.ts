import { randomUUID } from 'node:crypto'
import type pg from 'pg'
import { transaction } from '../../core/db/index.ts'
import { listenWithReconnect, type Listening } from '../../core/db/listen.ts'
import { inTenant, systemScope } from '../../core/db/tenant-scope.ts'
import { principalOfOwner } from '../../core/auth/owner.ts'
import { eventEnvelope } from '../../core/events/events.ts'
import { readableModules, redactEvent, visibleEvents } from '../../core/events/rights.ts'
import type { TenantDirectory } from '../../core/tenancy/tenants.ts'
import type { AppConfig } from '../../core/config.ts'
import type { Metrics } from '../../core/telemetry/metrics.ts'
import { logger } from '../../core/logger.ts'
import { span } from '../../core/telemetry/tracing.ts'
import { assertManager } from './webhooks.class.ts'
import * as repo from './webhooks.repository.ts'
import type { SecretBox } from './webhooks.signing.ts'
import { signatureHeader } from './webhooks.signing.ts'
import { allowList, checkTarget, send, TargetRefused, type SendResult } from './webhooks.target.ts'

type Delivery = repo.Claimed['deliveries'][number]
type StoredEvent = repo.LoggedEvent

const channel = 'records_events'
/** Events read per fan-out transaction. */
const fanOutBatch = 500
/** How old the owner's rights over a claim may be when one of its deliveries is sent. */
const rightsMaxAgeMs = 1000
/** How long a delivery in flight may still take once the instance stops, before it is aborted (and sent again elsewhere). */
const stopGraceMs = 2000
/** Deliveries claimed at once per subscription (sent one after another). */
const claimBatch = 25
/**
 * The dispatcher's own writes (fan-out, claims, attempt outcomes) commit without waiting for
 * the WAL flush: one fsync per delivery would bound a lane at the disk's commit rate (~80/s
 * here). A crash can lose the last fraction of a second of them, which is redone: fan-out
 * reads the events again, a lost claim lapses, and a delivery whose outcome was lost is sent
 * again with the same webhook-id (delivery is at least once; receivers deduplicate on it).
 * The events themselves are written with the change, durably.
 */
const bookkeeping = { asyncCommit: true }

/**
 * The per-instance webhook dispatcher. It wakes on every commit that wrote events (NOTIFY
 * from the `events` trigger, delivered at commit, never for a rollback), on retries coming
 * due (a timer) and on a fallback poll. Each pass fans the tenants' new events out into
 * deliveries (the outbox) and starts one lane per subscription with deliveries due: a lane
 * sends its subscription's deliveries one at a time in event order, so a slow receiver holds
 * only its own lane.
 */
export class Dispatcher {
  private readonly me = `${process.pid}-${randomUUID()}`
  private readonly lanes = new Map<string, Promise<void>>()
  private readonly abort = new AbortController()
  private listening?: Listening
  private listenRetry?: NodeJS.Timeout
  private poll?: NodeJS.Timeout
  private timer?: NodeJS.Timeout
  private timerAt = Infinity
  private running = false
  private again = false
  private stopped = false
  private readonly allowed
  private readonly leaseMs

  constructor(
    private readonly pool: pg.Pool,
    private readonly config: AppConfig['webhooks'],
    private readonly secrets: SecretBox,
    private readonly tenants: TenantDirectory,
    private readonly metrics?: Pick<Metrics, 'webhookDeliveries' | 'webhookLag' | 'webhookDuration'>
  ) {
    this.allowed = allowList(config.allowedCidrs)
    // Long enough for one delivery with room to spare; a dead instance's claim is taken over once it lapses.
    this.leaseMs = config.timeoutMs * 2 + 5000
  }

  async start(): Promise<void> {
    await this.listen()
    this.poll = setInterval(() => this.wake(), this.config.pollMs)
    this.poll.unref()
    this.wake()
  }

  /**
   * LISTENs through core/db/listen.ts (one connection, reconnected with backoff once it has
   * listened). Until a first subscribe succeeds the dispatcher polls, and asks again every second,
   * one attempt at a time; after a reconnect it makes a pass, as NOTIFYs may have been missed.
   */
  private async listen(): Promise<void> {
    if (this.stopped) return
    try {
      const listening = await listenWithReconnect(this.pool, channel, {
        logName: 'webhook listener',
        onNotify: () => this.wake(),
        onResubscribed: () => this.wake()
      })
      // Halted while subscribing: nothing may stay behind.
      if (this.stopped) await listening.close()
      else this.listening = listening
    } catch (err) {
      logger.warn('webhook listener could not connect; polling meanwhile', { error: (err as Error).message })
      if (!this.stopped) this.listenRetry = setTimeout(() => void this.listen(), 1000).unref()
    }
  }

  /** Asks for a pass; passes never overlap, and a wake during one asks for another. */
  wake(): void {
    if (this.stopped) return
    if (this.running) {
      this.again = true
      return
    }
    this.running = true
    // A pass scans every tenant's subscriptions (a named system action); each lane narrows to its tenant.
    void systemScope('webhooks.dispatch', () => this.pass())
      .catch((err) => logger.error('webhook dispatch failed', { error: (err as Error)?.stack ?? String(err) }))
      .finally(() => {
        this.running = false
        if (this.again && !this.stopped) {
          this.again = false
          this.wake()
        }
      })
  }

  private wakeAt(at: Date) {
    const ms = at.getTime() - Date.now()
    if (this.stopped || at.getTime() >= this.timerAt) return
    clearTimeout(this.timer)
    this.timerAt = at.getTime()
    this.timer = setTimeout(
      () => {
        this.timerAt = Infinity
        this.wake()
      },
      Math.max(ms, 0) + 5
    )
    this.timer.unref()
  }

  private async pass(): Promise<void> {
    let behind = false
    const tenants = await repo.tenantsToFanOut(this.pool)
    // No subscription anywhere, so no delivery either: a commit costs this one statement.
    if (!tenants.length && !this.lanes.size) return
    for (const tenantId of tenants) {
      for (;;) {
        const r = await transaction(this.pool, (client) => repo.fanOut(client, tenantId, fanOutBatch), bookkeeping)
        behind ||= r.behind
        if (r.read < fanOutBatch) break
      }
    }
    // Events written but not yet visible (an older transaction still runs): look again soon.
    if (behind) this.wakeAt(new Date(Date.now() + 100))
    const free = this.config.maxConcurrentSubscriptions - this.lanes.size
    if (free > 0) {
      for (const s of await repo.dueSubscriptions(this.pool, free + this.lanes.size)) {
        const key = `${s.tenantId}/${s.subscriptionId}`
        if (this.lanes.has(key) || this.lanes.size >= this.config.maxConcurrentSubscriptions) continue
        let failed = false
        const lane = inTenant(s.tenantId, () => this.lane(s.tenantId, s.subscriptionId))
          .catch((err) => {
            failed = true
            logger.error('webhook lane failed', {
              subscriptionId: s.subscriptionId,
              error: (err as Error)?.stack ?? String(err)
            })
          })
          .finally(() => {
            this.lanes.delete(key)
            // After an error, the poll tries again: no tight loop on a fault that persists.
            if (!failed) this.wake()
          })
        this.lanes.set(key, lane)
      }
    }
    const next = await repo.nextDue(
      this.pool,
      [...this.lanes.keys()].map((key) => key.slice(key.indexOf('/') + 1))
    )
    if (next) this.wakeAt(next)
  }

  /** Sends one subscription's due deliveries, one at a time, until none is left or it is disabled. */
  private async lane(tenantId: string, subscriptionId: string): Promise<void> {
    try {
      while (!this.stopped) {
        const claimed = await transaction(
          this.pool,
          (client) => repo.claim(client, tenantId, subscriptionId, this.me, claimBatch, this.leaseMs),
          bookkeeping
        )
        if (!claimed?.deliveries.length) return
        const secrets = [claimed.subscription.secret, ...claimed.subscription.previousSecrets].map((s) =>
          this.secrets.unseal(s)
        )
        let rights = await this.ownerRights(tenantId, claimed.subscription.owner, claimed.deliveries)
        let renewed = Date.now()
        // Subjects whose delivery failed in this claim: their later ones wait for the retry (given back below).
        const held = new Set<string>()
        for (const [i, d] of claimed.deliveries.entries()) {
          if (this.stopped) return
          if (d.subjectId && held.has(d.subjectId)) continue
          // Decided again for what is left once the decision is older than rightsMaxAgeMs (a slow receiver takes long over a claim).
          if (Date.now() - rights.at > rightsMaxAgeMs)
            rights = await this.ownerRights(tenantId, claimed.subscription.owner, claimed.deliveries.slice(i))
          const refused = rights.refusal(d)
          const envelope = d.envelope ?? (d.event ? eventEnvelope(tenantId, rights.redact(d.event)) : undefined)
          const { disabled, succeeded } = refused
            ? await this.skip(tenantId, subscriptionId, d, refused)
            : await this.tracedDeliver(tenantId, subscriptionId, claimed.subscription.url, secrets, d, envelope)
          if (disabled) return
          if (!succeeded && d.subjectId) held.add(d.subjectId)
          // The claim outlives one delivery's deadline; renewed well before it runs out.
          if (Date.now() - renewed > this.config.timeoutMs / 2) {
            renewed = Date.now()
            await repo.renewLease(this.pool, tenantId, subscriptionId, this.me, this.leaseMs)
          }
        }
        if (held.size) await repo.releaseLeases(this.pool, this.me, { tenantId, subscriptionId })
      }
    } finally {
      await repo.releaseLeases(this.pool, this.me, { tenantId, subscriptionId }).catch(() => undefined)
    }
  }

  /**
   * The subscription owner's rights over this claim, decided now (core/events/rights.ts, as the
   * events feed decides them): the owner must still authenticate and manage webhooks, and each
   * event of the log must be one the owner may see; what it may see is redacted as the feed does.
   */
  private async ownerRights(
    tenantId: string,
    owner: repo.Claimed['subscription']['owner'],
    deliveries: readonly Delivery[]
  ): Promise<{ at: number; refusal(d: Delivery): string | undefined; redact(e: StoredEvent): StoredEvent }> {
    const at = Date.now()
    const principal = await principalOfOwner(this.pool, tenantId, owner)
    let standing = principal
      ? undefined
      : `the subscription's owner (${owner.kind} ${owner.id}) no longer authenticates: revoked, expired, deactivated or gone`
    if (principal) {
      try {
        assertManager(principal)
      } catch (err) {
        standing = `the subscription's owner (${owner.kind} ${owner.id}) may no longer manage webhooks: ${(err as Error).message}`
      }
    }
    if (standing || !principal) return { at, refusal: () => standing, redact: (e) => e }
    const installed = this.tenants.get(tenantId)?.modules
    const condition = visibleEvents(principal, readableModules(principal, installed?.values() ?? []), true)
    const visible = await repo.visibleEventIds(
      this.pool,
      tenantId,
      deliveries.filter((d) => d.event).map((d) => d.event_position),
      condition
    )
    return {
      at,
      refusal: (d) =>
        d.event && !visible.has(d.eventId)
          ? `the subscription's owner (${owner.kind} ${owner.id}) may not see this event: no read right on its module or this record, or an export or identity event not theirs`
          : undefined,
      redact: (e) => redactEvent(principal, e.moduleKey ? installed?.get(e.moduleKey) : undefined, e)
    }
  }

  /** Writes a delivery the owner may not see as skipped: not sent, not retried, logged with why. */
  private async skip(
    tenantId: string,
    subscriptionId: string,
    d: Delivery,
    reason: string
  ): Promise<{ disabled: boolean; succeeded: boolean }> {
    const at = new Date()
    const { disabled } = await transaction(
      this.pool,
      (client) =>
        repo.recordAttempt(client, {
          tenantId,
          subscriptionId,
          eventId: d.eventId,
          eventType: d.eventType,
          attempt: d.attempts + 1,
          at,
          firstAttemptAt: d.firstAttemptAt ?? at,
          statusCode: null,
          latencyMs: 0,
          excerpt: null,
          error: `not sent: ${reason}`,
          outcome: 'skipped',
          failingCutoff: new Date(at.getTime() - this.config.disableAfterFailingHours * 3600_000)
        }),
      bookkeeping
    )
    this.metrics?.webhookDeliveries.inc({ outcome: 'skipped' })
    // Not a failure: the subject's later deliveries go on.
    return { disabled, succeeded: true }
  }

  /** A delivery as a span of its own (its receiver's answer under it): the dispatcher works outside any request. */
  private tracedDeliver(
    tenantId: string,
    subscriptionId: string,
    url: string,
    secrets: string[],
    d: Delivery,
    envelope: unknown
  ) {
    const attributes = {
      tenant: tenantId,
      'webhook.subscription': subscriptionId,
      'webhook.event_id': d.eventId,
      'webhook.event_type': d.eventType,
      'webhook.attempt': d.attempts + 1
    }
    return span(
      'webhook.deliver',
      attributes,
      async (s) => {
        const result = await this.deliver(tenantId, subscriptionId, url, secrets, d, envelope)
        s.setAttribute('webhook.succeeded', result.succeeded)
        return result
      },
      { root: true }
    )
  }

  private async deliver(
    tenantId: string,
    subscriptionId: string,
    url: string,
    secrets: string[],
    d: Delivery,
    envelope: unknown
  ): Promise<{ disabled: boolean; succeeded: boolean }> {
    const at = new Date()
    const attempt = d.attempts + 1
    let result: SendResult
    if (!envelope) result = { latencyMs: 0, error: 'the event is no longer in the event log' }
    else {
      const body = JSON.stringify(envelope)
      const timestamp = Math.floor(at.getTime() / 1000)
      try {
        // Checked again at every attempt: the name may resolve elsewhere since the subscription was made.
        const target = await checkTarget(url, this.config, this.allowed)
        result = await send(
          target,
          {
            'webhook-id': d.eventId,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signatureHeader(secrets, d.eventId, timestamp, body)
          },
          body,
          this.config.timeoutMs,
          this.abort.signal
        )
      } catch (err) {
        if (!(err instanceof TargetRefused)) throw err
        result = { latencyMs: Math.round(Date.now() - at.getTime()), error: `target refused: ${err.message}` }
      }
    }
    // Stopping mid-request is not an attempt: the lease is given back and another pass sends it.
    if (this.stopped && result.error === 'aborted') return { disabled: true, succeeded: false }
    const ok = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300
    const gone = result.statusCode === 410
    const schedule = this.config.retryScheduleMs
    const firstAttemptAt = d.firstAttemptAt ?? at
    const outcome: repo.AttemptRecord['outcome'] = ok
      ? 'succeeded'
      : gone || attempt >= schedule.length || !envelope
        ? 'failed'
        : 'retrying'
    let nextAt: Date | undefined
    if (outcome === 'retrying') {
      const gap = schedule[attempt] - schedule[attempt - 1]
      nextAt = new Date(firstAttemptAt.getTime() + schedule[attempt] + Math.random() * this.config.retryJitter * gap)
    }
    const { disabled } = await transaction(
      this.pool,
      (client) =>
        repo.recordAttempt(client, {
          tenantId,
          subscriptionId,
          eventId: d.eventId,
          eventType: d.eventType,
          attempt,
          at,
          firstAttemptAt,
          statusCode: result.statusCode ?? null,
          latencyMs: result.latencyMs,
          excerpt: result.excerpt ?? null,
          error: result.error ?? null,
          outcome,
          nextAt,
          disable: gone
            ? `The receiver answered 410 Gone to event ${d.eventId} at ${at.toISOString()}: the subscription was disabled at once.`
            : undefined,
          failingCutoff: new Date(at.getTime() - this.config.disableAfterFailingHours * 3600_000)
        }),
      bookkeeping
    )
    if (nextAt) this.wakeAt(nextAt)
    this.observe(d, at, outcome, result)
    return { disabled, succeeded: ok }
  }

  /** Counts an attempt; its lag (event to first attempt) when it is the first, what the dispatcher adds on top of the receiver. */
  private observe(d: Delivery, at: Date, outcome: string, result: SendResult) {
    if (!this.metrics) return
    this.metrics.webhookDeliveries.inc({ outcome })
    if (result.statusCode !== undefined) this.metrics.webhookDuration.observe(result.latencyMs / 1000)
    const occurred = Date.parse(d.event?.occurredAt ?? String(d.envelope?.occurredAt))
    if (d.attempts === 0 && Number.isFinite(occurred))
      this.metrics.webhookLag.observe(Math.max(0, at.getTime() - occurred) / 1000)
  }

  /**
   * Stops on shutdown: no more claims or wakes; a delivery in flight gets `graceMs` to be answered
   * (and its outcome recorded, so it is not sent twice) before it is aborted (then not counted as an
   * attempt: another instance sends it again, with the same webhook-id). Every claim of this
   * instance is given back at once and the other instances are woken to take them.
   */
  stop(graceMs = stopGraceMs): Promise<void> {
    // Once: draining starts it, and the service's teardown waits for the same stop.
    return (this.stopping ??= this.halt(graceMs))
  }

  private stopping?: Promise<void>

  private async halt(graceMs: number): Promise<void> {
    this.stopped = true
    clearInterval(this.poll)
    clearTimeout(this.timer)
    const grace = setTimeout(() => this.abort.abort(), graceMs)
    await Promise.allSettled([...this.lanes.values()])
    clearTimeout(grace)
    this.abort.abort()
    while (this.running) await new Promise((r) => setTimeout(r, 10))
    clearTimeout(this.listenRetry)
    const listening = this.listening
    this.listening = undefined
    await listening?.close().catch(() => undefined)
    await systemScope('webhooks.release', () => repo.releaseLeases(this.pool, this.me)).catch(() => undefined)
    // The other instances' dispatchers wake now rather than at their next poll.
    await this.pool.query(`SELECT pg_notify('${channel}', '')`).catch(() => undefined)
  }
}
