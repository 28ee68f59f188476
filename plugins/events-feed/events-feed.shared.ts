export const eventsFeedPath = 'api/v1/events'
export const eventsFeedMethods = ['find'] as const

/** Feed items are the events' envelopes, as webhook deliveries carry them (core/events/events.ts). */
export { eventEnvelope } from '../../core/events/events.ts'
