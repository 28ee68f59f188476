/**
 * What the log never holds. Two nets: fields known to carry secrets are redacted by name
 * at any depth (`password`, `headers.authorization`, `request.headers.cookie`), and every
 * line is scrubbed of secrets by their shape, wherever they are (an error message quoting
 * a URL, a stack). Not pino's `redact`: its wildcard paths (`*.password`) cost ~300 µs a
 * line for these 16 names one level deep, where this walk costs next to nothing.
 */

/** Field names whose values are replaced by `[REDACTED]`, whatever they hold. */
export const sensitiveKeys = [
  'authorization',
  'cookie',
  'set-cookie',
  'x-csrf-token',
  'csrfToken',
  'password',
  'newPassword',
  'token',
  'secret',
  'secrets',
  'clientSecret',
  'client_secret',
  'secretAccessKey',
  'cookieValue',
  'webhook-signature',
  'signature'
]

const redacted = '[REDACTED]'
const sensitive = new Set(sensitiveKeys.map((k) => k.toLowerCase()))

function redactValue(v: unknown, depth: number): unknown {
  if (!v || typeof v !== 'object' || depth > 5 || v instanceof Error || Buffer.isBuffer(v)) return v
  if (Array.isArray(v)) {
    let out: unknown[] | undefined
    for (let i = 0; i < v.length; i++) {
      const nv = redactValue(v[i], depth + 1)
      if (nv !== v[i]) (out ??= [...v])[i] = nv
    }
    return out ?? v
  }
  return redactFields(v as Record<string, unknown>, depth)
}

/** The fields with every value under a sensitive name replaced, at any depth; copied only where something changed (pino's `formatters.log`). */
export function redactFields(fields: Record<string, unknown>, depth = 0): Record<string, unknown> {
  let out: Record<string, unknown> | undefined
  for (const key in fields) {
    const v = fields[key]
    const nv = v !== undefined && v !== null && sensitive.has(key.toLowerCase()) ? redacted : redactValue(v, depth + 1)
    if (nv !== v) (out ??= { ...fields })[key] = nv
  }
  return out ?? fields
}

/**
 * One pass over a serialized line (JSON, so a value ends at `"` or `\`):
 * - tokens `svc_k_…`, `svc_p_…`, `sa_…` and webhook secrets `whsec_…` keep their prefix;
 * - `Bearer …` / `Basic …` credentials;
 * - the session cookie `records_session=…`;
 * - query parameters that sign or authorise a URL (`sig`, `signature`, `X-Amz-Signature`,
 *   `X-Amz-Credential`, `X-Amz-Security-Token`, `token`, `access_token`, `code`, …);
 * - the password in a URL's user info (`postgres://user:…@host`).
 */
/**
 * Where a token or credential may start: not inside a word, or right after what escapes the
 * character before it: JSON's `\n`, `\t`… (a line is scanned serialized, so a token after a
 * line break follows the letter `n`) and URL encoding's `%20`.
 */
const startOfValue = String.raw`(?:(?<=\\[nrtbf]|%[0-9A-Fa-f]{2})|(?<![A-Za-z0-9]))`

/**
 * The scheme before `://` is at most 32 characters, the user and password at most 256 each: a
 * run of letters, dots and dashes was tried as a scheme from each of its characters to its end,
 * quadratic (16 KB of hostile path: 1.3 s of a blocked event loop per line).
 */
const shapes = new RegExp(
  [
    String.raw`${startOfValue}(svc_k_|svc_p_|sa_)[0-9A-Za-z]+`,
    String.raw`(whsec_)[A-Za-z0-9+/=]+`,
    String.raw`(${startOfValue}(?:[Bb]earer|Basic)\s+)[A-Za-z0-9._~+/=-]{6,}`,
    String.raw`(records_session=)[^;\s"\\]+`,
    String.raw`([?&;](?:sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|token|access_token|id_token|refresh_token|code|password|secret|client_secret)=)[^&#\s"\\]+`,
    String.raw`(\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}:\/\/[^\/\s:@"\\]{0,256}:)[^@\s\/"\\]{1,256}@`
  ].join('|'),
  'gi'
)

/** What every shape above contains: a line with none (most request lines) skips the regular expression (8 µs a line). */
const triggers = ['svc_', 'SVC_', 'sa_', 'SA_', 'whsec_', 'WHSEC_', 'earer', 'EARER', 'asic', 'ASIC', '=', '@']

/** The line with every secret-shaped value replaced (its prefix or parameter name kept). */
export function scrubSecrets(line: string): string {
  if (!triggers.some((t) => line.includes(t))) return line
  shapes.lastIndex = 0
  if (!shapes.test(line)) return line
  return line.replace(shapes, (match, ...groups: unknown[]) => {
    const prefix = groups.slice(0, 6).find((g): g is string => typeof g === 'string')
    return (prefix ?? '') + redacted + (match.endsWith('@') && prefix && /:\/\//.test(prefix) ? '@' : '')
  })
}

/** The same shapes, for a checker that must find any left in a text (test/suite/log-check.ts). */
export const secretShapes = [
  new RegExp(String.raw`${startOfValue}(?:svc_k_|svc_p_|sa_)[0-9A-Za-z]{40}`),
  /whsec_[A-Za-z0-9+/]{40,}/,
  /[?&](?:sig|signature|X-Amz-Signature)=(?!\[REDACTED\])[^&#\s"\\]{8,}/i
]
