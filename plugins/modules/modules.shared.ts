export const modulesPath = 'api/v1/modules'
export const modulesMethods = ['find', 'get'] as const
