import {
  cursorSchema,
  operation,
  pathParam,
  queryParam,
  queryParamsOf,
  type DocContext,
  type Fragment,
  type Json,
  type JsonSchema
} from '../../core/openapi/builder.ts'
import { exampleTraceId, rateLimitHeaders } from '../../core/openapi/problems.ts'
import { jsonLimits } from '../../core/json-data.ts'
import { identityLogQuerySchema } from './identity-log.class.ts'
import { scimTypes } from './scim.errors.ts'
import { identityLogPath, scimBase, scimMediaType, urn } from './scim.shared.ts'

const tag = 'SCIM'

/**
 * Every object of a SCIM body takes members beyond those listed (SCIM ignores unknown
 * attributes) and every array holds at most what any request may (jsonLimits): said in the
 * schema, as the document says it of every request body.
 */
function bounded<T>(schema: T): T {
  const walk = (v: unknown, parentKey = ''): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x))
    if (!v || typeof v !== 'object') return v
    const out: Json = {}
    for (const [k, x] of Object.entries(v))
      out[k] = parentKey !== 'properties' && ['example', 'examples', 'enum', 'const'].includes(k) ? x : walk(x, k)
    if (parentKey !== 'properties') {
      const type = out.type
      const is = (t: string) => type === t || (Array.isArray(type) && type.includes(t))
      if (is('object') && !('additionalProperties' in out)) out.additionalProperties = true
      if (is('array') && !('maxItems' in out)) out.maxItems = jsonLimits.maxItems
    }
    return out
  }
  return walk(schema) as T
}
const base = `/${scimBase}`

const scimErrorSchema: JsonSchema = {
  type: 'object',
  title: 'ScimError',
  description: `A SCIM error (RFC 7644 §3.12): \`schemas\`, \`status\` as a string, \`scimType\` where one applies, \`detail\`, and nothing else at the top level. The members of this service's problems (\`type\`, \`title\`, \`code\`, \`traceId\`, and details such as \`errors\` or \`notHeld\`) are under the extension \`${urn.recordsError}\`, which \`schemas\` lists, so one body serves strict SCIM clients and the rest of the API's tooling.`,
  required: ['schemas', 'status', 'detail', urn.recordsError],
  properties: {
    schemas: { type: 'array', items: { enum: [urn.error, urn.recordsError] }, minItems: 1 },
    status: { type: 'string', pattern: '^[45][0-9]{2}$', description: "The HTTP status, as a string (SCIM's rule)." },
    scimType: {
      type: 'string',
      enum: [...scimTypes],
      description:
        'invalidFilter, invalidValue, invalidSyntax, invalidPath, noTarget, mutability (a read-only attribute), uniqueness (409: the userName or group name is taken), tooMany.'
    },
    detail: { type: 'string' },
    [urn.recordsError]: {
      type: 'object',
      description: 'The problem members of this service (as in application/problem+json, without status and detail).',
      required: ['type', 'title', 'code', 'traceId'],
      properties: {
        type: { type: 'string', format: 'uri' },
        title: { type: 'string' },
        code: {
          type: 'string',
          description:
            "The service's stable code, e.g. `scim.invalid_filter`, `user.exists`, `auth.invalid`, `role.escalation`, `request.too_costly`."
        },
        traceId: { type: 'string' }
      },
      additionalProperties: true
    }
  },
  additionalProperties: false
}

const statusTexts: Record<number, string> = {
  400: 'The request cannot be used: a filter that does not parse (invalidFilter), a value the schema refuses or a role the tenant does not have (invalidValue, naming the roles it has), a PATCH path that names nothing (invalidPath, noTarget), a read-only attribute (mutability), a body that is not JSON (invalidSyntax).',
  401: 'No credential, or one that is unknown, revoked or expired.',
  403: 'The credential lacks the scim scope or the admin role (`scope.missing`, `permission.denied`), or would reach past the roles it acts with (`role.escalation`, with `notHeld`): a group granting a role it does not hold, or the userName, emails, externalId, active flag, group memberships or deletion of a user holding such a role.',
  404: "No such resource for this tenant (another tenant's ids read the same), or no such route under /api/scim/v2; a method the route does not serve is 405 in the same shape.",
  409: 'The userName (compared without regard to case) or group displayName is taken (scimType uniqueness).',
  412: 'If-Match names a version that is no longer current.',
  413: 'The body is larger than 1 MiB.',
  415: 'The body is not application/scim+json or application/json.',
  422: 'The request would do more work than one request may (`request.too_costly`): a PATCH whose filters and values touch too many elements, a filter over too many multi-valued values. Nothing was changed; send less at once.',
  429: 'Over the rate limit: wait for Retry-After.',
  500: 'The service failed; nothing was changed.'
}

/** Named examples of PATCH bodies (named, not `example`: they act on a resource a fresh tenant does not have). */
function patchExamples(kind: 'Users' | 'Groups'): Record<string, { summary: string; value: unknown }> {
  const body = (...Operations: unknown[]) => ({ schemas: [urn.patchOp], Operations })
  return kind === 'Users'
    ? {
        entra: {
          summary: 'Entra ID: deactivate, and set the work e-mail',
          value: body(
            { op: 'Replace', path: 'active', value: 'False' },
            { op: 'Add', path: 'emails[type eq "work"].value', value: 'priya.shah@example.com' }
          )
        },
        okta: { summary: 'Okta: deactivate', value: body({ op: 'replace', value: { active: false } }) }
      }
    : {
        add: {
          summary: 'Add a member (it gets the roles the group grants at once)',
          value: body({ op: 'add', path: 'members', value: [{ value: '6d1f3c52-3b7e-4c55-9d1e-0c5b8a1f2e11' }] })
        },
        remove: {
          summary: 'Remove a member by a value filter',
          value: body({ op: 'remove', path: 'members[value eq "6d1f3c52-3b7e-4c55-9d1e-0c5b8a1f2e11"]' })
        },
        roles: {
          summary: 'Name the roles the group grants',
          value: body({ op: 'replace', path: `${urn.recordsGroup}:roles`, value: ['safety-manager'] })
        }
      }
}

export function describeScim(ctx: DocContext): Fragment {
  const error = ctx.ref(scimErrorSchema, 'ScimError')
  const scimProblem = (status: number): Json => {
    const headers: Json = { ...rateLimitHeaders(status), 'X-Trace-Id': { $ref: '#/components/headers/X-Trace-Id' } }
    if (status === 401) headers['WWW-Authenticate'] = { $ref: '#/components/headers/WWW-Authenticate' }
    if (status === 429) headers['Retry-After'] = { $ref: '#/components/headers/Retry-After' }
    return {
      description: `SCIM error. ${statusTexts[status]}`,
      headers,
      content: {
        [scimMediaType]: {
          schema: error,
          example: {
            schemas: [urn.error, urn.recordsError],
            status: String(status),
            detail: statusTexts[status],
            [urn.recordsError]: {
              type: 'https://records.example.com/errors/bad-request',
              title: 'Refused',
              code: 'scim.refused',
              traceId: exampleTraceId
            }
          }
        }
      }
    }
  }
  const refusals = (...extra: number[]) =>
    Object.fromEntries([400, 401, 403, 422, 429, 500, ...extra].map((s) => [s, scimProblem(s)]))

  const multi = () => ({
    type: 'array',
    items: {
      type: 'object',
      properties: {
        value: { type: 'string' },
        display: { type: 'string' },
        type: { type: 'string' },
        primary: { type: 'boolean' }
      },
      additionalProperties: true
    }
  })
  const meta = {
    type: 'object',
    properties: {
      resourceType: { type: 'string' },
      created: { type: 'string', format: 'date-time' },
      lastModified: { type: 'string', format: 'date-time' },
      location: { type: 'string' },
      version: { type: 'string' }
    }
  }
  const userSchema = {
    type: 'object',
    title: 'ScimUser',
    description:
      'A SCIM User (RFC 7643 §4.1) with the Enterprise User extension. Attribute names are read in any case and unknown ones ignored; booleans may come as "True"/"False". `userName` is unique in the tenant without regard to case. What has no column of its own (addresses, title, locale…) is kept as sent, so a PUT and a GET give back the same resource. The core `roles` attribute is kept as sent and grants nothing: roles come from groups. `password` is not accepted (users sign in through the tenant\'s single sign-on). Answers show what `attributes`/`excludedAttributes` ask for (`id` and `schemas` always).',
    required: ['userName'],
    properties: {
      schemas: { type: 'array', items: { type: 'string' } },
      id: { type: 'string', readOnly: true },
      externalId: { type: 'string' },
      userName: { type: 'string', minLength: 1, maxLength: 256 },
      name: {
        type: 'object',
        properties: Object.fromEntries(
          ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((k) => [
            k,
            { type: ['string', 'null'] }
          ])
        )
      },
      displayName: { type: 'string', maxLength: 1024 },
      active: { type: ['boolean', 'string'], description: 'A boolean; "True" and "False" are read as one.' },
      emails: multi(),
      phoneNumbers: multi(),
      addresses: { type: 'array', items: { type: 'object', additionalProperties: true } },
      title: { type: 'string' },
      groups: {
        ...multi(),
        readOnly: true,
        description:
          'The groups the user is a member of, each with `value` (its id), `display` and `$ref` (read-only: change them through the group).'
      },
      [urn.enterpriseUser]: {
        type: 'object',
        properties: {
          employeeNumber: { type: 'string' },
          costCenter: { type: 'string' },
          organization: { type: 'string' },
          division: { type: 'string' },
          department: { type: 'string' },
          manager: {
            type: 'object',
            description: 'The manager: `value` (an id), `$ref`, `displayName`.',
            properties: { value: { type: 'string' }, displayName: { type: 'string' } }
          }
        }
      },
      meta: { ...meta, readOnly: true }
    },
    additionalProperties: true
  }
  const user = ctx.ref(bounded(userSchema), 'ScimUser')
  const shownUser = ctx.ref(
    {
      ...bounded(userSchema),
      title: 'ScimUserShown',
      description: 'A User as answered: only what `attributes` asks for when given, `id` and `schemas` always.',
      required: ['schemas', 'id']
    },
    'ScimUserShown'
  )
  const groupSchema = {
    type: 'object',
    title: 'ScimGroup',
    description: `A SCIM Group (RFC 7643 §4.2). **A group grants roles of the tenant to its members**: the roles its extension \`${urn.recordsGroup}\` names in \`roles\`, or, without them, the role its \`displayName\` is (a group named "safety-manager" grants safety-manager; any case). A group named otherwise and naming no roles grants nothing. An unknown role is 400 invalidValue naming the tenant's roles. Adding a member grants at once, removing revokes at once (on every token's and session's next call). Members are users of the tenant (\`value\`: the user's id); other values are left out. A member's \`display\` is kept as sent when it is added.`,
    required: ['displayName'],
    properties: {
      schemas: { type: 'array', items: { type: 'string' } },
      id: { type: 'string', readOnly: true },
      externalId: { type: 'string' },
      displayName: { type: 'string', minLength: 1, maxLength: 1024 },
      members: {
        ...multi(),
        description: "Each member: `value` (the user's id), `display`, `type`, and `$ref` in answers."
      },
      [urn.recordsGroup]: {
        type: 'object',
        properties: {
          roles: {
            type: 'array',
            items: { type: 'string' },
            description: 'The roles the group grants; left out: the role its displayName names.'
          },
          grantedRoles: {
            type: 'array',
            items: { type: 'string' },
            readOnly: true,
            description: 'What members get through the group.'
          }
        }
      },
      meta: { ...meta, readOnly: true }
    },
    additionalProperties: true
  }
  const group = ctx.ref(bounded(groupSchema), 'ScimGroup')
  const shownGroup = ctx.ref(
    {
      ...bounded(groupSchema),
      title: 'ScimGroupShown',
      description: 'A Group as answered: only what `attributes` asks for when given, `id` and `schemas` always.',
      required: ['schemas', 'id']
    },
    'ScimGroupShown'
  )
  const list = (title: string, item: JsonSchema) => ({
    type: 'object',
    title,
    required: ['schemas', 'totalResults', 'startIndex', 'itemsPerPage', 'Resources'],
    properties: {
      schemas: { type: 'array', items: { const: urn.listResponse } },
      totalResults: { type: 'integer', minimum: 0 },
      startIndex: { type: 'integer', minimum: 1 },
      itemsPerPage: { type: 'integer', minimum: 0 },
      Resources: { type: 'array', items: item }
    }
  })
  const patchOp = ctx.ref(
    bounded({
      type: 'object',
      title: 'ScimPatchOp',
      description:
        'RFC 7644 §3.5.2. `op` add, replace or remove in any case ("Replace"); `path` as an attribute path, a value filter (`emails[type eq "work"].value`, `members[value eq "<id>"]`) or an extension attribute (`urn:…:enterprise:2.0:User:department`); without `path`, `value` is an object of attributes. An add or replace through an `eq` filter that matches nothing adds the value it describes. At most 1,000 operations; all or none are applied.',
      required: ['Operations'],
      properties: {
        schemas: { type: 'array', items: { type: 'string', const: urn.patchOp } },
        Operations: {
          type: 'array',
          minItems: 1,
          maxItems: 1000,
          items: {
            type: 'object',
            required: ['op'],
            properties: {
              op: { type: 'string', description: 'add, replace or remove (any case)' },
              path: { type: 'string' },
              value: {}
            },
            additionalProperties: true
          }
        }
      }
    }),
    'ScimPatchOp'
  )
  const id = pathParam('id', 'The resource id (the `id` a create answered).', { type: 'string' })
  const ifMatch: Json = {
    name: 'If-Match',
    in: 'header',
    required: false,
    description:
      'The ETag (`meta.version`, e.g. `W/"3"`) the change is based on, or a list of them, compared weakly: a newer version answers 412. `*` or none: any. A value that is no list of ETags is 400.',
    schema: { type: 'string', maxLength: 1024 }
  }
  const projection = [
    queryParam(
      'attributes',
      'Comma-separated attribute names to return (`userName,emails`, `name.givenName`, `urn:…:enterprise:2.0:User:department`); `id` and `schemas` always come.',
      { type: 'string' }
    ),
    queryParam('excludedAttributes', 'Comma-separated attribute names to leave out (`members`).', { type: 'string' })
  ]
  const listParams = [
    queryParam(
      'filter',
      'A SCIM filter (RFC 7644 §3.4.2.2): `userName eq "bjensen"`, `emails[type eq "work" and value co "@example.com"]`, `name.familyName sw "J" and not (active eq false)`, `meta.lastModified gt "2026-01-01T00:00:00Z"`. Operators eq ne co sw ew gt ge lt le pr, and, or, not, parentheses, value paths; names and operators in any case; strings compared without regard to case except ids and externalId.',
      { type: 'string' }
    ),
    queryParam(
      'startIndex',
      '1-based index of the first result (default 1). Results are in creation order, so pages are stable.',
      { type: 'string', pattern: '^[+-]?[0-9]{1,15}$' }
    ),
    queryParam('count', `Results per page: default and most ${ctx.config.pagination.maxLimit}.`, {
      type: 'string',
      pattern: '^[+-]?[0-9]{1,15}$'
    }),
    ...projection
  ]
  const body = (schema: JsonSchema, example: unknown) => ({ schema, contentType: scimMediaType, example })
  const ok = (description: string, schema: JsonSchema, headers: string[] = []) => ({
    description,
    schema,
    contentType: scimMediaType,
    headers
  })
  const userExample = {
    schemas: [urn.user, urn.enterpriseUser],
    userName: 'priya.shah@example.com',
    externalId: 'a1b2c3',
    name: { givenName: 'Priya', familyName: 'Shah' },
    emails: [{ value: 'priya.shah@example.com', type: 'work', primary: true }],
    active: true,
    [urn.enterpriseUser]: { department: 'EHS' }
  }
  const groupExample = {
    schemas: [urn.group, urn.recordsGroup],
    displayName: 'EHS Leads',
    members: [{ value: '6d1f3c52-3b7e-4c55-9d1e-0c5b8a1f2e11' }],
    [urn.recordsGroup]: { roles: ['safety-manager'] }
  }
  const op = (o: Parameters<typeof operation>[0]) => {
    const built = operation(o)
    // Bodies are read as application/scim+json or application/json alike.
    if (built.requestBody) built.requestBody.content['application/json'] = built.requestBody.content[scimMediaType]
    return built
  }
  const scope = 'scim'
  const resourcePaths = (
    kind: 'Users' | 'Groups',
    one: JsonSchema,
    shown: JsonSchema,
    example: unknown,
    what: string
  ) => ({
    [`${base}/${kind}`]: {
      get: op({
        operationId: `listScim${kind}`,
        tag,
        summary: `List or filter ${kind}`,
        scope,
        parameters: listParams,
        responses: { 200: ok(`A ListResponse of ${kind}.`, list(`Scim${kind}List`, shown)) },
        problemResponses: refusals()
      }),
      post: op({
        operationId: `createScim${kind.slice(0, -1)}`,
        tag,
        summary: `Create a ${kind.slice(0, -1)}`,
        description: what,
        scope,
        parameters: projection,
        body: body(one, example),
        responses: { 201: ok(`The new ${kind.slice(0, -1)}, its URL in Location.`, shown, ['ETag', 'Location']) },
        problemResponses: refusals(409, 413, 415)
      })
    },
    [`${base}/${kind}/{id}`]: {
      parameters: [id],
      get: op({
        operationId: `getScim${kind.slice(0, -1)}`,
        tag,
        summary: `Get a ${kind.slice(0, -1)}`,
        scope,
        parameters: projection,
        responses: { 200: ok(`The ${kind.slice(0, -1)}.`, shown, ['ETag']) },
        problemResponses: refusals(404)
      }),
      put: op({
        operationId: `replaceScim${kind.slice(0, -1)}`,
        tag,
        summary: `Replace a ${kind.slice(0, -1)}`,
        description: 'Every writable attribute as given; what the body leaves out is cleared.',
        scope,
        parameters: [...projection, ifMatch],
        body: body(one, example),
        responses: { 200: ok(`The ${kind.slice(0, -1)} as now.`, shown, ['ETag']) },
        problemResponses: refusals(404, 409, 412, 413, 415)
      }),
      patch: op({
        operationId: `patchScim${kind.slice(0, -1)}`,
        tag,
        summary: `Patch a ${kind.slice(0, -1)}`,
        description: `Applies the operations as one change. 204 with the new ETag; with \`attributes\` or \`excludedAttributes\`, 200 and the ${kind.slice(0, -1)}.`,
        scope,
        parameters: [...projection, ifMatch],
        body: { schema: patchOp, contentType: scimMediaType, examples: patchExamples(kind) },
        responses: {
          200: ok(`The ${kind.slice(0, -1)} as now (attributes asked for).`, shown, ['ETag']),
          204: { description: 'Applied.', headers: ['ETag'] }
        },
        defaultStatus: 204,
        problemResponses: refusals(404, 409, 412, 413, 415)
      }),
      delete: op({
        operationId: `deleteScim${kind.slice(0, -1)}`,
        tag,
        summary: `Delete a ${kind.slice(0, -1)}`,
        description:
          kind === 'Users'
            ? 'Deactivates the user, takes it out of every group (revoking what they granted) and ends its sessions; its tokens answer 401 from their next call. The user is 404 here afterwards and its userName free again; its row stays, so records and the audit trail keep its name.'
            : 'Its members lose the roles it granted, on their next call.',
        scope,
        parameters: [ifMatch],
        responses: { 204: { description: 'Deleted.' } },
        problemResponses: refusals(404, 412)
      })
    }
  })
  const anyObject = { type: 'object', additionalProperties: true }
  const identityEntry = {
    type: 'object',
    title: 'IdentityLogEntry',
    required: ['id', 'type', 'occurredAt', 'actor', 'subjectId', 'data'],
    properties: {
      id: { type: 'string', format: 'uuid' },
      type: { type: 'string' },
      occurredAt: { type: 'string', format: 'date-time' },
      actor: anyObject,
      subjectId: { type: ['string', 'null'] },
      data: anyObject
    }
  }
  return {
    tags: [
      {
        name: tag,
        description: `SCIM 2.0 (RFC 7643/7644) at /${scimBase} for identity providers (Entra ID, Okta): Users, Groups and discovery. Bodies and answers are ${scimMediaType} (application/json is read too); refusals are SCIM errors that also carry this service's problem members. Credential: a service-account token with the scim scope acting with admin. See docs/scim.md.`
      }
    ],
    paths: {
      ...resourcePaths(
        'Users',
        user,
        shownUser,
        userExample,
        'userName is required and unique in the tenant without regard to case (409 uniqueness).'
      ),
      ...resourcePaths(
        'Groups',
        group,
        shownGroup,
        groupExample,
        'A group that grants roles needs a credential that holds them (or acts as the whole tenant).'
      ),
      [`${base}/ServiceProviderConfig`]: {
        get: op({
          operationId: 'getScimServiceProviderConfig',
          tag,
          summary: 'What this SCIM service provider supports',
          scope,
          responses: {
            200: ok(
              'The configuration: PATCH, filter and ETags supported; bulk, sort and password changes not.',
              anyObject
            )
          },
          problemResponses: refusals()
        })
      },
      [`${base}/ResourceTypes`]: {
        get: op({
          operationId: 'listScimResourceTypes',
          tag,
          summary: 'The resource types (User, Group)',
          scope,
          responses: { 200: ok('A ListResponse of resource types.', list('ScimResourceTypeList', anyObject)) },
          problemResponses: refusals()
        })
      },
      [`${base}/ResourceTypes/{id}`]: {
        parameters: [pathParam('id', 'User or Group.', { type: 'string' }, 'User')],
        get: op({
          operationId: 'getScimResourceType',
          tag,
          summary: 'A resource type',
          scope,
          responses: { 200: ok('The resource type.', anyObject) },
          problemResponses: refusals(404)
        })
      },
      [`${base}/Schemas`]: {
        get: op({
          operationId: 'listScimSchemas',
          tag,
          summary: 'The schemas (User, Enterprise User, Group and its records extension)',
          scope,
          responses: { 200: ok('A ListResponse of schemas.', list('ScimSchemaList', anyObject)) },
          problemResponses: refusals()
        })
      },
      [`${base}/Schemas/{id}`]: {
        parameters: [
          pathParam(
            'id',
            'A schema URN, its colons as they are or percent-encoded.',
            { type: 'string' },
            'urn%3Aietf%3Aparams%3Ascim%3Aschemas%3Acore%3A2.0%3AUser'
          )
        ],
        get: op({
          operationId: 'getScimSchema',
          tag,
          summary: 'A schema',
          scope,
          responses: { 200: ok('The schema.', anyObject) },
          problemResponses: refusals(404)
        })
      },
      [`/${identityLogPath}`]: {
        get: operation({
          operationId: 'listIdentityLog',
          tag: 'Audit log',
          summary: 'The identity audit trail',
          description:
            "Every committed change of the tenant's users and groups, oldest first, from SCIM and the CLI alike: `user.provisioned`, `user.updated` (attributes by name, roles granted and revoked, groups joined and left), `user.deactivated` (also on delete), `group.provisioned`, `group.updated`, `group.deleted`; each with the `actor` who made it. Admins only (the admin role and the scim scope).",
          scope,
          parameters: queryParamsOf(identityLogQuerySchema(ctx.config.pagination.maxLimit), {
            cursor: { schema: cursorSchema }
          }),
          responses: {
            200: {
              description: 'A page of changes.',
              schema: {
                type: 'object',
                title: 'IdentityLogPage',
                required: ['items', 'nextCursor', 'limit'],
                properties: {
                  items: { type: 'array', items: identityEntry },
                  nextCursor: { type: ['string', 'null'] },
                  limit: { type: 'integer' }
                }
              }
            }
          }
        })
      }
    },
    amend(paths, components) {
      // A 404 under /api/scim/v2 is a SCIM error too: the SCIM operations get a NotFound of their
      // own with both media types; the shared one stays a problem only, so clients generated from
      // the document type every other 404 as the Problem it is.
      const notFound = components.responses?.NotFound
      if (!notFound?.content) return
      components.responses.ScimNotFound = {
        ...notFound,
        content: { ...notFound.content, [scimMediaType]: { schema: error } },
        description: `${notFound.description} Under /${scimBase}: a SCIM error (${scimMediaType}).`
      }
      for (const [path, item] of Object.entries<Json>(paths)) {
        if (!path.startsWith(`/${scimBase}`)) continue
        // Every SCIM path answers a verb it does not serve, or an id it does not know, with a SCIM error.
        for (const op of Object.values(item))
          if (op?.responses) op.responses[404] = { $ref: '#/components/responses/ScimNotFound' }
      }
    }
  }
}
