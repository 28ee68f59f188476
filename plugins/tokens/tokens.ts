import type { HookContext, NextFunction } from '@feathersjs/feathers'
import type { App } from '../../core/declarations.ts'
import { TokensService } from './tokens.class.ts'
import { tokensMethods, tokensPath } from './tokens.shared.ts'
import type { Plugin } from '../../core/plugin.ts'
import { tokensCli } from './tokens.cli.ts'
import { describeTokens } from './tokens.openapi.ts'

declare module '../../core/declarations.ts' {
  interface ServiceTypes {
    [tokensPath]: TokensService
  }
}

/** A created token is in this response only: 201, and no cache may keep it. */
const noStore = async (context: HookContext, next: NextFunction) => {
  await next()
  context.http = {
    ...context.http,
    status: context.method === 'create' ? 201 : context.http?.status,
    headers: { ...context.http?.headers, 'Cache-Control': 'no-store' }
  }
}

/** Tokens of the caller's tenant: API keys, personal access tokens, service-account tokens. */
export function tokens(app: App) {
  const { credentials, users, tenants } = app.get('platform')
  app.use(tokensPath, new TokensService({ credentials, users, tenants }), { methods: [...tokensMethods] })
  app.service(tokensPath).hooks({ around: { all: [noStore] } })
}

/** Tokens, with their admin commands (`records token create|list|revoke`). */
export const tokensPlugin: Plugin = { name: 'tokens', configure: tokens, cli: tokensCli, describe: describeTokens }
