import { assertValid } from '../../core/validation.ts'
import * as repo from './webhooks.repository.ts'
import type { WebhooksService, WebhookParams } from './webhooks.class.ts'
import { deliveryQueryValidator, type DeliveryAttempt, type DeliveryQuery } from './webhooks.schema.ts'

/** The delivery log of one subscription (`GET /api/v1/webhooks/{id}/deliveries`): its attempts, newest first. */
export class WebhookDeliveriesService {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly pool: import('pg').Pool
  ) {}

  async find(params: WebhookParams & { route?: { webhookId?: string } }): Promise<{ items: DeliveryAttempt[] }> {
    const p = this.webhooks.principal(params)
    const sub = await this.webhooks.subscription(p, params.route?.webhookId)
    const query = { ...(params.query ?? {}) }
    assertValid<DeliveryQuery>(deliveryQueryValidator, query)
    return {
      items: await repo.listAttempts(this.pool, p.tenantId, sub.id, {
        limit: query.limit ?? 50,
        eventId: query.eventId
      })
    }
  }
}
