export const webhooksPath = 'api/v1/webhooks'
export const webhooksMethods = ['find', 'get', 'create', 'patch', 'remove', 'rotate-secret', 'test', 'replay'] as const
export const webhookDeliveriesPath = 'api/v1/webhooks/:webhookId/deliveries'
export const webhookDeliveriesMethods = ['find'] as const

/** The event kind only a subscription's test call sends (never written to the event log). */
export const webhookTestKind = 'webhook.test'
