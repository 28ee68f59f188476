export const tokensPath = 'api/v1/tokens'
export const tokensMethods = ['find', 'get', 'create', 'remove'] as const

// What other plugins (the settings pages) use of tokens.
export type { TokenData, TokenOut, TokenType } from './tokens.schema.ts'
export type { TokenGrant } from './tokens.grant.ts'
