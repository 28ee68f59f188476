import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'

/** Validates request bodies and payloads: no coercion, every error reported. */
export const dataAjv = addFormats.default(new Ajv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false }), ['date', 'date-time', 'uuid', 'email', 'uri'])

/** Validates query strings: values arrive as strings and are coerced to the declared types. */
export const queryAjv = addFormats.default(new Ajv({ allErrors: true, strict: false, coerceTypes: 'array', useDefaults: true }), ['date', 'date-time', 'uuid'])
