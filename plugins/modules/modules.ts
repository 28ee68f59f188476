import type { App } from '../../core/declarations.ts'
import { ModulesService } from './modules.class.ts'
import { modulesMethods, modulesPath } from './modules.shared.ts'

export function modules(app: App) {
  app.use(modulesPath, new ModulesService(app.get('platform').tenants), { methods: [...modulesMethods] })
}
