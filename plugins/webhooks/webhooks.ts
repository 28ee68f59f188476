import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { App } from '../../core/declarations.ts'
import type { Plugin } from '../../core/plugin.ts'
import { webhooksMigrations } from './migrations/index.ts'
import { WebhookDeliveriesService } from './webhooks.deliveries.ts'
import { Dispatcher } from './webhooks.dispatcher.ts'
import { WebhooksService } from './webhooks.class.ts'
import { describeWebhooks } from './webhooks.openapi.ts'
import { webhookPages } from './webhooks.page.ts'
import { webhookDeliveriesMethods, webhookDeliveriesPath, webhooksMethods, webhooksPath } from './webhooks.shared.ts'
import { SecretBox } from './webhooks.signing.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [webhooksPath]: WebhooksService
    [webhookDeliveriesPath]: WebhookDeliveriesService
  }
}

/** A created subscription is 201; answers that may hold a secret are never cached. */
const respond = async (context: HookContext, next: NextFunction) => {
  await next()
  const status =
    context.method === 'create'
      ? 201
      : context.method === 'test' || context.method === 'replay'
        ? 202
        : context.http?.status
  context.http = { ...context.http, status, headers: { ...context.http?.headers, 'Cache-Control': 'no-store' } }
}

/**
 * Webhook subscriptions and the per-instance dispatcher that delivers the event log to them.
 * The dispatcher runs while the server listens (service setup/teardown), on instances with
 * `webhooks.dispatch`; the CLI, which never listens, runs none. Admins see the subscriptions
 * and their recent deliveries on /settings/webhooks (webhooks.page.ts).
 */
export function configureWebhooks(app: App) {
  const platform = app.get('platform')
  const { pool } = platform.db
  const config = platform.config.webhooks
  let box: Promise<SecretBox> | undefined
  // Opened once; a failure (the database away) is not kept, so the next call tries again.
  const secrets = () =>
    (box ??= SecretBox.open(pool).catch((err) => {
      box = undefined
      throw err
    }))
  let dispatcher: Dispatcher | undefined
  const service = new WebhooksService({
    pool,
    config,
    tenants: platform.tenants,
    secrets,
    dispatcher: () => dispatcher
  })
  Object.assign(service, {
    async setup() {
      if (!config.dispatch) return
      dispatcher = new Dispatcher(pool, config, await secrets(), platform.tenants, platform.metrics)
      await dispatcher.start()
      // Draining begins (SIGTERM): its claims are given back at once, not once the listener has closed.
      const draining = dispatcher
      platform.shutdown.signal.addEventListener('abort', () => void draining.stop(), { once: true })
    },
    async teardown() {
      await dispatcher?.stop()
      dispatcher = undefined
    }
  })
  app.use(webhooksPath, service, { methods: [...webhooksMethods] })
  app.service(webhooksPath).hooks({ around: { all: [respond] } })
  app.use(webhookDeliveriesPath, new WebhookDeliveriesService(service, pool), {
    methods: [...webhookDeliveriesMethods]
  })
  app.service(webhookDeliveriesPath).hooks({ around: { all: [respond] } })
  app.use(webhookPages(app))
}

/** Webhooks: subscriptions with colon methods (`:rotate-secret`, `:test`, `:replay`), their delivery log, the dispatcher and the settings page. */
export const webhooksPlugin: Plugin = {
  name: 'webhooks',
  dependsOn: ['settings'],
  migrations: webhooksMigrations,
  configure: configureWebhooks,
  colonMethods: [webhooksPath],
  describe: describeWebhooks
}
