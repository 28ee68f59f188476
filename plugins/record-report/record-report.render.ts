import PDFDocument from 'pdfkit'
import { columnOf, type CellValue, type ColumnOptions, type ColumnSpec } from '../../core/modules/derive/columns.ts'
import type { RegisteredModule } from '../../core/modules/registry.ts'
import type { FieldDefinition } from '../../core/modules/types.ts'
import { pageTotal, printable, rgb, utcText } from '../exports/exports.shared.ts'

/** The record as the records service answered the caller: hidden fields are already gone from payload and activity. */
export interface ReportRecord {
  number: string
  state: string
  moduleVersion: string
  externalRef?: string
  createdAt: string
  updatedAt: string
  createdBy: { name: string }
  updatedBy: { name: string }
  payload: Record<string, unknown>
  activity?: Array<{
    at: string
    actor: { name: string }
    action: string
    changes: Array<{ field: string }>
    transition: { key: string; from: string; to: string } | null
    comment: string | null
  }>
  attachments?: Array<{
    fileName: string
    contentType: string
    size: number
    uploadedAt: string
    uploadedBy: { name: string }
  }>
}

export interface RecordReportInput {
  record: ReportRecord
  module: RegisteredModule
  /** Fields the caller may not read: left out entirely, label and all. */
  hidden: ReadonlySet<string>
  tenantName: string
  generatedAt: Date
  /** A user id's name, when known. */
  userName?: (id: string) => string | undefined
}

const margin = 48
const colours = { text: '#111111', muted: '#555555', rule: '#b8c0cc', band: '#eef1f5' }
const labelWidth = 150

function cellText(c: CellValue, kind: ColumnSpec['kind']): string {
  if (c === null || c === undefined) return ''
  if (c instanceof Date) return kind === 'date' ? c.toISOString().slice(0, 10) : `${utcText(c)} UTC`
  if (typeof c === 'boolean') return c ? 'Yes' : 'No'
  return String(c)
}

/** `12.3 KB`: what a reader wants of a size. */
export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  const units = ['KB', 'MB', 'GB']
  let v = bytes / 1024
  let i = 0
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024
    i++
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`
}

/**
 * One record as a portrait A4 report, for a regulator or a toolbox talk: its facts, every
 * field the caller may read in the module's order (states and choices by label, users by
 * name, a repeating group as one block per entry), the workflow history with who and when,
 * and the attachments with their names and sizes. Resolves with the whole file: a record
 * is a few pages, so it is built in memory.
 */
export function renderRecordReport(input: RecordReportInput): Promise<Buffer> {
  const { record, module } = input
  const def = module.definition
  const wording: ColumnOptions = { values: 'labels', userName: input.userName }
  const stateLabel = (key: string) => module.states.get(key)?.label ?? key
  const fieldLabel = (key: string) => module.fields.get(key)?.label ?? key
  const doc = new PDFDocument({
    size: 'A4',
    margin,
    bufferPages: false,
    info: {
      Title: `${def.title} ${record.number}`,
      Author: input.tenantName,
      Subject: def.title,
      CreationDate: input.generatedAt
    }
  })
  const chunks: Buffer[] = []
  doc.on('data', (c: Buffer) => chunks.push(c))
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)))
    doc.on('error', reject)
  })
  const width = doc.page.width - 2 * margin
  const bottom = () => doc.page.height - margin - 20
  const total = pageTotal(doc, { size: 7, colour: rgb(colours.muted) })
  let page = 1
  const footer = () => {
    const keep = { x: doc.x, y: doc.y }
    doc.page.margins.bottom = 0
    const y = doc.page.height - margin + 6
    doc.font('Helvetica').fontSize(7).fillColor(colours.muted)
    doc.text(
      printable(`${def.title} ${record.number} · ${input.tenantName} · generated ${utcText(input.generatedAt)} UTC`),
      margin,
      y,
      { width: width - 90, lineBreak: false, ellipsis: true, height: 10 }
    )
    const label = `Page ${page} of `
    const totalX = doc.page.width - margin - 24
    doc.text(label, totalX - doc.widthOfString(label), y, { lineBreak: false })
    total.draw(totalX, y)
    doc.page.margins.bottom = margin
    doc.x = keep.x
    doc.y = keep.y
  }
  doc.on('pageAdded', () => {
    page++
    footer()
  })
  footer()

  /** Starts a new page unless `height` more points fit on this one. */
  const room = (height: number) => {
    if (doc.y + height > bottom()) {
      doc.addPage()
      doc.y = margin
    }
  }
  const section = (title: string) => {
    room(40)
    doc.moveDown(0.8)
    const y = doc.y
    doc.rect(margin, y, width, 18).fill(colours.band)
    doc
      .font('Helvetica-Bold')
      .fontSize(11)
      .fillColor(colours.text)
      .text(printable(title), margin + 6, y + 4, { width: width - 12 })
    doc.y = y + 24
  }
  /** A label and its value side by side; the value wraps, and the pair moves to the next page whole when it fits one. */
  const pair = (label: string, value: string, indent = 0) => {
    const text = printable(value || '—')
    doc.font('Helvetica').fontSize(9)
    const h = Math.max(
      doc.heightOfString(text, { width: width - labelWidth - indent }),
      doc.heightOfString(printable(label), { width: labelWidth - 8 })
    )
    room(Math.min(h, 200) + 4)
    const y = doc.y
    doc
      .font('Helvetica-Bold')
      .fontSize(9)
      .fillColor(colours.muted)
      .text(printable(label), margin + indent, y, { width: labelWidth - 8 })
    const afterLabel = doc.y
    doc
      .font('Helvetica')
      .fontSize(9)
      .fillColor(value ? colours.text : colours.muted)
      .text(text, margin + indent + labelWidth, y, { width: width - labelWidth - indent })
    doc.y = Math.max(doc.y, afterLabel) + 4
  }
  const valueOf = (f: FieldDefinition, v: unknown) => {
    const spec = columnOf(f, wording)
    return cellText(spec.value(v), spec.kind)
  }

  // Heading.
  const title = typeof record.payload.title === 'string' ? record.payload.title : ''
  doc
    .font('Helvetica')
    .fontSize(10)
    .fillColor(colours.muted)
    .text(printable(`${def.title} · ${input.tenantName}`), margin, margin, { width })
  doc
    .font('Helvetica-Bold')
    .fontSize(18)
    .fillColor(colours.text)
    .text(printable(title ? `${record.number}: ${title}` : record.number), { width })
  doc.moveDown(0.4)
  pair('State', stateLabel(record.state))
  pair('Created', `${utcText(new Date(record.createdAt))} UTC by ${record.createdBy.name}`)
  pair('Last changed', `${utcText(new Date(record.updatedAt))} UTC by ${record.updatedBy.name}`)
  if (record.externalRef) pair('External ref', record.externalRef)
  pair('Generated', `${utcText(input.generatedAt, true)} UTC (all times in this report are UTC)`)

  // Fields, in the module's order; a repeating group is a block per entry.
  section('Details')
  for (const f of def.fields) {
    if (input.hidden.has(f.key)) continue
    const v = record.payload[f.key]
    if (f.type !== 'group') {
      pair(f.label ?? f.key, valueOf(f, v))
      continue
    }
    const items = Array.isArray(v) ? v : []
    if (!items.length) {
      pair(f.label ?? f.key, '')
      continue
    }
    items.forEach((item, i) => {
      room(30)
      doc
        .font('Helvetica-Bold')
        .fontSize(9)
        .fillColor(colours.text)
        .text(printable(`${f.label ?? f.key} ${i + 1} of ${items.length}`), margin, doc.y, { width })
      doc.y += 2
      const entry = item && typeof item === 'object' ? (item as Record<string, unknown>) : {}
      for (const sub of f.fields) pair(sub.label ?? sub.key, valueOf(sub, entry[sub.key]), 12)
    })
  }

  // Workflow history: who did what, when.
  section('History')
  for (const a of record.activity ?? []) {
    const what =
      a.action === 'transitioned' && a.transition
        ? `${def.workflow.transitions.find((t) => t.key === a.transition!.key)?.label ?? a.transition.key}: from ${stateLabel(a.transition.from)} to ${stateLabel(a.transition.to)}`
        : a.action === 'created'
          ? `Created in state ${stateLabel(def.workflow.initial)}`
          : a.action[0].toUpperCase() + a.action.slice(1)
    const changed =
      a.action !== 'created' && a.changes.length
        ? `\nChanged: ${a.changes.map((c) => fieldLabel(c.field)).join(', ')}`
        : ''
    const comment = a.comment ? `\n“${a.comment}”` : ''
    pair(`${utcText(new Date(a.at))} UTC`, `${what} — ${a.actor.name}${changed}${comment}`)
  }

  section('Attachments')
  const attachments = record.attachments ?? []
  if (!attachments.length) pair('', 'No attachments.')
  for (const a of attachments)
    pair(
      sizeText(a.size),
      `${a.fileName} (${a.contentType}), uploaded ${utcText(new Date(a.uploadedAt))} UTC by ${a.uploadedBy.name}`
    )

  room(30)
  doc.moveDown(1)
  doc
    .font('Helvetica')
    .fontSize(8)
    .fillColor(colours.muted)
    .text(
      printable(
        `End of report · ${def.title} module ${record.moduleVersion} · the fields shown are those the requester may read.`
      ),
      margin,
      doc.y,
      { width }
    )
  total.finish(page)
  doc.end()
  return done
}
