export const mePath = 'api/v1/me'
export const meMethods = ['find'] as const
