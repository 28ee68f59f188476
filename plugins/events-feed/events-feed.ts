import type { App } from '../../core/declarations.ts'
import type { Plugin } from '../../core/plugin.ts'
import { eventsFeedMigrations } from './migrations/index.ts'
import { EventsFeedService } from './events-feed.class.ts'
import { describeEventsFeed } from './events-feed.openapi.ts'
import { purgeOldEvents } from './events-feed.repository.ts'
import { eventsFeedMethods, eventsFeedPath } from './events-feed.shared.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [eventsFeedPath]: EventsFeedService
  }
}

export function configureEventsFeed(app: App) {
  const { db, tenants, cursors, config } = app.get('platform')
  app.use(
    eventsFeedPath,
    new EventsFeedService({
      pool: db.pool,
      tenants,
      cursors,
      maxLimit: config.pagination.maxLimit,
      retentionDays: config.events.retentionDays
    }),
    {
      methods: [...eventsFeedMethods]
    }
  )
}

/** The events feed (GET /api/v1/events) and the hourly events.purge job that applies `events.retentionDays`. */
export const eventsFeedPlugin: Plugin = {
  name: 'events-feed',
  dependsOn: ['records'],
  migrations: eventsFeedMigrations,
  configure: configureEventsFeed,
  jobs: (app) => [
    {
      name: 'events.purge',
      every: '1 hour',
      run: async () => ({
        removed: await purgeOldEvents(app.get('platform').db.pool, app.get('platform').config.events.retentionDays)
      })
    }
  ],
  describe: describeEventsFeed
}
