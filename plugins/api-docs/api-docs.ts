import { createHash } from 'node:crypto'
import type { Middleware, ParameterizedContext } from 'koa'
import { seesModule } from '../../core/auth/access.ts'
import type { App, Platform } from '../../core/declarations.ts'
import type { Json } from '../../core/openapi/builder.ts'
import type { Plugin } from '../../core/plugin.ts'
import { buildDocument, type OpenApiDocuments } from '../../core/openapi/document.ts'
import { ifNoneMatchHits } from '../../core/http/entity-tag.ts'
import { declareRoutes } from '../../core/http/route-guard.ts'
import { describeApiDocs } from './api-docs.openapi.ts'
import { referenceRoutes, referencePaths } from './reference.ts'

export const specPath = '/api/docs/spec.json'

/** Documents cached per tenant + the versions of the modules the caller sees (and the public URL). */
export function openApiDocuments(app: App, platform: Platform): OpenApiDocuments {
  const cache = new Map<string, { document: Json; etag: string }>()
  return {
    forPrincipal(principal) {
      const tenant = principal ? platform.tenants.get(principal.tenantId) : undefined
      const modules = tenant
        ? [...tenant.modules.values()]
            .filter((m) => seesModule(principal!, m))
            .sort((a, b) => a.definition.key.localeCompare(b.definition.key))
        : []
      const publicUrl = platform.urls.public
      const errorsUrl: string = app.get('errorsUrl')
      const key = JSON.stringify([
        publicUrl,
        errorsUrl,
        tenant?.id ?? null,
        tenant?.name ?? null,
        modules.map((m) => m.versionKey)
      ])
      let hit = cache.get(key)
      if (!hit) {
        const document = buildDocument({
          config: platform.config,
          describes: app.get('describes'),
          publicUrl,
          errorsUrl,
          tenant: tenant ? { id: tenant.id, name: tenant.name, modules } : undefined
        })
        hit = {
          document,
          etag: `"${createHash('sha256').update(key).update(JSON.stringify(document)).digest('base64url').slice(0, 27)}"`
        }
        // A small bound: documents are rebuilt in milliseconds.
        if (cache.size >= 200) cache.delete(cache.keys().next().value!)
        cache.set(key, hit)
      }
      return hit
    }
  }
}

/**
 * `GET /api/docs/spec.json`: the caller's document (generic without a credential), with an
 * ETag for conditional requests. The reference page and the Postman collection use the same.
 */
function specRoute(documents: OpenApiDocuments): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== specPath || !['GET', 'HEAD'].includes(ctx.method)) return next()
    const { document, etag } = documents.forPrincipal(ctx.state.principal)
    ctx.set({ ETag: etag, 'Cache-Control': 'private, no-cache', Vary: 'Authorization, Cookie' })
    if (ifNoneMatchHits(ctx.get('if-none-match'), etag)) {
      ctx.status = 304
      return
    }
    ctx.type = 'application/json'
    ctx.body = document
  }
}

export function apiDocs(app: App) {
  const platform = app.get('platform')
  const documents = openApiDocuments(app, platform)
  app.set('openapi', documents)
  declareRoutes(
    app,
    [specPath, ...referencePaths].map((path) => ({ path, methods: ['GET', 'HEAD'] }))
  )
  app.use(specRoute(documents))
  app.use(
    referenceRoutes({
      document: async (ctx: ParameterizedContext) => documents.forPrincipal(ctx.state.principal).document,
      baseUrl: () => platform.urls.public,
      // The browser pages' start page (the records workspace) when a feature mounts one.
      home: () => app.get('settingsPages')?.home
    })
  )
}

export const apiDocsPlugin: Plugin = {
  name: 'api-docs',
  dependsOn: ['me'],
  configure: apiDocs,
  describe: describeApiDocs
}
