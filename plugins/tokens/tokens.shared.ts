export const tokensPath = 'api/v1/tokens'
export const tokensMethods = ['find', 'get', 'create', 'remove'] as const
