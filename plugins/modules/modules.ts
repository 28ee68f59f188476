import type { App } from '../../core/declarations.ts'
import { ModuleCatalogueService, ModulesService } from './modules.class.ts'
import { catalogueMethods, cataloguePath, modulesMethods, modulesPath } from './modules.shared.ts'
import { describeModules } from './modules.openapi.ts'
import { modulesGraphQL } from './modules.graphql.ts'
import type { Plugin } from '../../core/plugin.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [modulesPath]: ModulesService
    [cataloguePath]: ModuleCatalogueService
  }
}

export function modules(app: App) {
  const { tenants, registry, db } = app.get('platform')
  app.use(modulesPath, new ModulesService(tenants, db.pool), { methods: [...modulesMethods] })
  app.use(cataloguePath, new ModuleCatalogueService(tenants, registry), { methods: [...catalogueMethods] })
}

export const modulesPlugin: Plugin = {
  name: 'modules',
  // A module's migration progress (GET /api/v1/modules/{key}, for tenant admins) is the records plugin's.
  dependsOn: ['records'],
  configure: modules,
  describe: describeModules,
  graphql: modulesGraphQL
}
