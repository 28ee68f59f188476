import type { App } from '../../core/declarations.ts'
import type { Plugin } from '../../core/plugin.ts'
import { apiKeyRoutes, apiKeysPath } from './api-keys.ts'
import { pageRouter } from './page-router.ts'
import { signInRoutes } from './sign-in.ts'
import { oidcRoutes } from './sign-in-oidc.ts'

/**
 * The browser pages of the settings plugin: sign-in (with a password, or through the
 * tenant's OpenID provider), sign-out and the API key settings (other features mount
 * pages of their own through settings.shared.ts).
 */
export function settings(app: App) {
  const routes = [...signInRoutes, ...oidcRoutes(app.get('platform')), ...apiKeyRoutes]
  app.use(pageRouter(app, { routes, nav: [{ href: apiKeysPath, label: 'API keys and tokens' }] }))
}

export const settingsPlugin: Plugin = { name: 'settings', dependsOn: ['tokens'], configure: settings }
