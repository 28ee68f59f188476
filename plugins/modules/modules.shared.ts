export const modulesPath = 'api/v1/modules'
export const modulesMethods = ['find', 'get'] as const
export const cataloguePath = 'api/v1/module-catalogue'
export const catalogueMethods = ['find'] as const
