import { fieldTypes } from '../../core/modules/types.ts'
import { moduleKeySchema, operation, pathParam, type DocContext, type Fragment } from '../../core/openapi/builder.ts'

const tag = 'Modules'

export function describeModules(ctx: DocContext): Fragment {
  const summary = ctx.ref(
    {
      type: 'object',
      title: 'Module summary',
      required: ['key', 'version', 'title', 'description', 'numberPattern', 'states', 'links'],
      properties: {
        key: { type: 'string', examples: ['incident'] },
        version: {
          type: 'string',
          description: 'Semantic version of the installed module package.',
          examples: ['1.2.0']
        },
        title: { type: 'string' },
        description: { type: ['string', 'null'] },
        numberPattern: { type: 'string', description: 'How record numbers are made, e.g. `INC-{YYYY}-{seq:5}`.' },
        states: { type: 'array', items: { type: 'string' }, description: 'Workflow states in order.' },
        links: {
          type: 'object',
          required: ['schema', 'records'],
          properties: { schema: { type: 'string' }, records: { type: 'string' } }
        }
      }
    },
    'ModuleSummary'
  )
  const field = {
    type: 'object',
    required: ['key', 'type', 'filterable', 'indexed', 'sortable', 'searchable'],
    description:
      'A payload field as the module package declares it (type-specific members such as `options`, `maxLength`, `fields` of a group), with how lists find records by it: its declarations over the defaults of its type.',
    properties: {
      key: { type: 'string' },
      type: { type: 'string', enum: [...fieldTypes] },
      label: { type: 'string' },
      description: { type: 'string' },
      required: { type: 'boolean' },
      filterable: { type: 'boolean', description: 'Lists may filter on it (`payload[<key>]`)' },
      indexed: { type: 'boolean', description: 'An index serves its filters and sort at any size' },
      sortable: { type: 'boolean', description: 'Lists may sort by it (`sort=payload.<key>`)' },
      searchable: { type: 'boolean', description: 'Text search (`q`) looks in it' },
      computed: {
        type: 'string',
        description:
          'The expression the platform computes the field from on every write (docs/modules.md, "Computed fields"); such a field is read-only: a write that sends it is refused.'
      },
      default: {
        description:
          "The value a create gives the field when the client sends none (a date's `today()`: the day of the create)."
      }
    }
  }
  const moduleSchema = ctx.ref(
    {
      title: 'Module schema',
      allOf: [
        summary,
        {
          type: 'object',
          required: [
            'fields',
            'schema',
            'workflow',
            'permissions',
            'rowAccess',
            'summaryColumns',
            'rules',
            'due',
            'recurrence',
            'package'
          ],
          properties: {
            fields: { type: 'array', items: field },
            schema: { type: 'object', description: 'The JSON Schema (2020-12) create validates payloads against.' },
            workflow: {
              type: 'object',
              required: ['initial', 'states', 'transitions'],
              properties: {
                initial: { type: 'string' },
                states: {
                  type: 'array',
                  items: {
                    type: 'object',
                    required: ['key'],
                    properties: {
                      key: { type: 'string' },
                      label: { type: 'string' },
                      requires: { type: 'array', items: { type: 'string' } },
                      final: { type: 'boolean' },
                      locks: {
                        type: 'array',
                        items: { type: 'string' },
                        description:
                          'Top-level fields a client may not change while a record is in this state (`["*"]`: the whole payload): 409 `field.locked`. A transition to a state that does not lock them may set them.'
                      }
                    }
                  }
                },
                transitions: {
                  type: 'array',
                  items: {
                    type: 'object',
                    required: ['key', 'from', 'to'],
                    properties: {
                      key: { type: 'string' },
                      label: { type: 'string' },
                      from: { type: 'array', items: { type: 'string' } },
                      to: { type: 'string' },
                      roles: { type: 'array', items: { type: 'string' } },
                      requires: { type: 'array', items: { type: 'string' } },
                      forbidSelf: { type: 'boolean', description: "The record's creator may not fire it." },
                      separateFrom: {
                        type: 'object',
                        description:
                          "Separation of duties (403 `workflow.separation_of_duties`, or `workflow.self_approval` for the creator): the person firing it must not be the record's creator (`creator`), a person named in the user `fields` before or after the transition sets its own, nor a person who fired one of `transitions` on the record before. A token counts as the person who created it.",
                        properties: {
                          creator: { type: 'boolean' },
                          fields: { type: 'array', items: { type: 'string' } },
                          transitions: { type: 'array', items: { type: 'string' } }
                        }
                      },
                      auto: {
                        type: 'object',
                        required: ['after'],
                        properties: { after: { type: 'string' } },
                        description:
                          'The platform fires the transition by itself once this date or date-time field of a record in a from state has passed (docs/modules.md, "Transitions that fire on a date").'
                      }
                    }
                  }
                }
              }
            },
            permissions: {
              type: 'object',
              description:
                'Role → module actions (`read`, `create`, `update`, `delete`, `export`, `attachments`, `transition:<key>`).',
              additionalProperties: { type: 'array', items: { type: 'string' } }
            },
            rowAccess: {
              type: 'object',
              description:
                'Role → the conditions of the rows it sees, any of which admits a row (`{ createdBy: "self" }` or `{ field, equals: "self" }`); roles not listed see every row.',
              additionalProperties: { type: 'array', items: { type: 'object' } }
            },
            summaryColumns: {
              type: 'array',
              items: { type: 'string' },
              description:
                "The payload fields that identify a record at a glance, in order: the PDF export's default columns after Number and State, and a list page's. The module's `summaryColumns`, or its first four fields when it declares none; fields the caller may not read are left out.",
              examples: [['title', 'site', 'category', 'severity', 'occurredAt']]
            },
            rules: {
              type: 'array',
              description:
                'Rules between fields (docs/modules.md, "Rules"): a write that leaves `check` false is refused (400) with `message` for each of `fields`; with `on`, only writes entering those states or firing those transitions are checked.',
              items: {
                type: 'object',
                required: ['check', 'message'],
                properties: {
                  check: { type: 'string' },
                  message: { type: 'string' },
                  fields: { type: 'array', items: { type: 'string' } },
                  on: {
                    type: 'object',
                    properties: {
                      states: { type: 'array', items: { type: 'string' } },
                      transitions: { type: 'array', items: { type: 'string' } }
                    }
                  }
                }
              }
            },
            due: {
              description:
                "The field that is a record's due date and the states in which it no longer counts (the declared ones, else the final states): the `overdue` list filter and the `record.overdue` event. Null: the module has no due date.",
              oneOf: [
                { type: 'null' },
                {
                  type: 'object',
                  required: ['field', 'until'],
                  properties: { field: { type: 'string' }, until: { type: 'array', items: { type: 'string' } } }
                }
              ]
            },
            recurrence: {
              description:
                'Records the platform makes on a schedule (docs/modules.md, "Recurrence"); its series are at `/api/v1/record-series?moduleKey=`. Null: none.',
              oneOf: [
                { type: 'null' },
                {
                  type: 'object',
                  required: ['every'],
                  properties: {
                    every: {
                      oneOf: [
                        { type: 'string', enum: ['day', 'week', 'month', 'year'] },
                        { type: 'object', required: ['days'], properties: { days: { type: 'integer', minimum: 1 } } }
                      ]
                    },
                    per: { type: 'string' },
                    payload: { type: 'object', additionalProperties: true }
                  }
                }
              ]
            },
            package: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
            migration: {
              description:
                'Tenant admins only: the move of the tenant\'s records to this version through the migration the module\'s package declares (docs/modules.md, "Upgrading a module"); null when it declares none or the background job has not reached the module yet. Records not yet moved are read as this version and move before any write.',
              oneOf: [
                { type: 'null' },
                {
                  type: 'object',
                  required: [
                    'toVersion',
                    'state',
                    'total',
                    'migrated',
                    'refused',
                    'remaining',
                    'startedAt',
                    'updatedAt',
                    'finishedAt',
                    'refusals'
                  ],
                  properties: {
                    toVersion: { type: 'string' },
                    state: { type: 'string', enum: ['running', 'done'] },
                    total: { type: 'integer', description: 'Live records under an older version when the move began.' },
                    migrated: { type: 'integer', description: 'Records the background job has moved.' },
                    refused: {
                      type: 'integer',
                      description:
                        'Records this version refuses as the migration leaves them: they stay under their version until a write makes them valid.'
                    },
                    remaining: {
                      type: 'integer',
                      description:
                        'While running: live records still under a version the migration moves (refused ones included). Once done: the refused records no write has made valid since.'
                    },
                    startedAt: { type: 'string', format: 'date-time' },
                    updatedAt: { type: 'string', format: 'date-time' },
                    finishedAt: { type: ['string', 'null'], format: 'date-time' },
                    refusals: {
                      type: 'array',
                      description:
                        'The first 20 refused records, with why (`records module migrations` lists them all).',
                      items: {
                        type: 'object',
                        required: ['recordId', 'number', 'fromVersion', 'reason'],
                        properties: {
                          recordId: { type: 'string', format: 'uuid' },
                          number: { type: 'string' },
                          fromVersion: { type: 'string' },
                          reason: { type: 'string' }
                        }
                      }
                    }
                  }
                }
              ]
            }
          }
        }
      ]
    },
    'ModuleSchema'
  )
  const keys = ctx.modules.map((m) => m.definition.key)
  return {
    tags: [
      {
        name: tag,
        description:
          'The modules installed for the tenant: their fields, workflow and permissions, as the module packages define them.'
      }
    ],
    paths: {
      '/api/v1/modules': {
        get: operation({
          operationId: 'listModules',
          tag,
          summary: 'List installed modules',
          description:
            "The modules the credential has a role in, and the tenant's installed modules that are unavailable on this deployment (their package did not load: every call on them answers 503 `module.unavailable`, their records are kept).",
          scope: 'modules:read',
          responses: {
            200: {
              description: 'The installed modules.',
              schema: {
                type: 'object',
                required: ['items', 'unavailable'],
                properties: {
                  items: { type: 'array', items: summary },
                  unavailable: {
                    type: 'array',
                    description: 'Installed modules whose package did not load on this deployment.',
                    items: {
                      type: 'object',
                      required: ['key', 'status'],
                      properties: {
                        key: { type: 'string', examples: ['permit'] },
                        status: { type: 'string', enum: ['unavailable'] },
                        reason: {
                          type: 'string',
                          description:
                            "Why (the package, where in it and what), for tenant admins only: it names the deployment's packages and files."
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        })
      },
      '/api/v1/module-catalogue': {
        get: operation({
          operationId: 'listModuleCatalogue',
          tag,
          summary: 'The modules this deployment offers',
          description:
            "Every module package loaded on this deployment, with the platform versions it fits and whether the caller's tenant has it installed (and at which version). Installing stays in the operator's configuration (`tenants.<id>.modules`); a package that did not load is not offered (GET /api/v1/modules lists an installed one as unavailable).",
          scope: 'modules:read',
          responses: {
            200: {
              description: 'The catalogue.',
              schema: {
                type: 'object',
                required: ['items'],
                properties: {
                  items: {
                    type: 'array',
                    items: {
                      type: 'object',
                      title: 'Catalogue entry',
                      required: ['key', 'title', 'version', 'description', 'host', 'package', 'installed'],
                      properties: {
                        key: { type: 'string', examples: ['incident'] },
                        title: { type: 'string' },
                        version: {
                          type: 'string',
                          description: "The module definition's version.",
                          examples: ['1.0.0']
                        },
                        description: { type: ['string', 'null'] },
                        host: {
                          type: ['string', 'null'],
                          description: 'The platform versions the package declares it fits (a semver range).',
                          examples: ['>=0.1.0 <1.0.0']
                        },
                        package: {
                          type: 'object',
                          required: ['name', 'version'],
                          properties: { name: { type: 'string' }, version: { type: ['string', 'null'] } }
                        },
                        installed: {
                          description: "The caller's tenant has it installed, at this version; null when not.",
                          oneOf: [
                            { type: 'null' },
                            {
                              type: 'object',
                              required: ['version'],
                              properties: { version: { type: 'string' } }
                            }
                          ]
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        })
      },
      '/api/v1/modules/{moduleKey}': {
        parameters: [
          pathParam(
            'moduleKey',
            'The module key.',
            keys.length ? { type: 'string', enum: keys } : moduleKeySchema,
            keys[0] ?? 'incident'
          )
        ],
        get: operation({
          operationId: 'getModule',
          tag,
          summary: 'Get a module schema: fields, workflow, permissions',
          scope: 'modules:read',
          responses: { 200: { description: 'The full module schema.', schema: moduleSchema } },
          problems: [404, 503]
        })
      }
    }
  }
}
