export const seriesPath = 'api/v1/record-series'
export const seriesMethods = ['find', 'get', 'patch'] as const
