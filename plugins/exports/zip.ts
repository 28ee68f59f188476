import type { Writable } from 'node:stream'
import { promisify } from 'node:util'
import { constants, crc32, deflateRaw, deflateRawSync } from 'node:zlib'
import { drained } from './exports.csv.ts'

/**
 * A ZIP archive written front to back into a stream, for the XLSX export: small parts are
 * deflated whole, the worksheet comes in segments deflated beforehand (zlib's thread, not the
 * event loop, as the export read its rows) with its CRC and sizes in a data descriptor after it. ZIP64 fields appear only where a
 * size or offset passes 4 GiB (as Go's archive/zip does): readers take sizes from the central
 * directory, so an ordinary archive stays ordinary.
 */

const max32 = 0xffffffff
/** Deflate level 1, the fastest: the worksheet came out no larger than exceljs's (4.2 against 4.5 MB at 50,000 rows). */
const level = constants.Z_BEST_SPEED
const deflateRawAsync = promisify(deflateRaw)

/** Deflated data that ends on a sync flush (so segments can follow it), with the CRC and size of what it holds. */
export interface DeflatedSegment {
  data: Buffer
  crc: number
  size: number
}

/** An empty final block (fixed Huffman, end of block): what ends a raw deflate stream of sync-flushed segments. */
const finalBlock = Buffer.from([0x03, 0x00])

/** Deflates `data` into a segment that other segments may follow (`ZipWriter.deflated`); on zlib's thread. */
export async function deflatedSegment(data: Buffer): Promise<DeflatedSegment> {
  const deflated = await deflateRawAsync(data, { level, finishFlush: constants.Z_SYNC_FLUSH })
  return { data: deflated, crc: crc32(data), size: data.length }
}

/** The same, at once (a few KB: the worksheet's head and tail). */
export function deflatedSegmentSync(data: Buffer): DeflatedSegment {
  return {
    data: deflateRawSync(data, { level, finishFlush: constants.Z_SYNC_FLUSH }),
    crc: crc32(data),
    size: data.length
  }
}

/** The 32 × 32 bit matrix product of zlib's crc32_combine (GF(2)). */
function gf2Times(matrix: Uint32Array, vec: number): number {
  let sum = 0
  for (let i = 0; vec !== 0; i++, vec >>>= 1) if (vec & 1) sum ^= matrix[i]
  return sum >>> 0
}

function gf2Square(square: Uint32Array, matrix: Uint32Array) {
  for (let n = 0; n < 32; n++) square[n] = gf2Times(matrix, matrix[n])
}

/** The CRC-32 of A followed by B, from the CRCs of A and B and B's length (zlib's crc32_combine). */
export function crc32Combine(crc1: number, crc2: number, len2: number): number {
  if (len2 <= 0) return crc1 >>> 0
  const even = new Uint32Array(32)
  const odd = new Uint32Array(32)
  odd[0] = 0xedb88320
  for (let n = 1, row = 1; n < 32; n++, row <<= 1) odd[n] = row
  gf2Square(even, odd)
  gf2Square(odd, even)
  let c = crc1 >>> 0
  let len = len2
  do {
    gf2Square(even, odd)
    if (len % 2) c = gf2Times(even, c)
    len = Math.floor(len / 2)
    if (len === 0) break
    gf2Square(odd, even)
    if (len % 2) c = gf2Times(odd, c)
    len = Math.floor(len / 2)
  } while (len !== 0)
  return (c ^ crc2) >>> 0
}

/** The data descriptor after a streamed part: its CRC and sizes (ZIP64 sizes past 4 GiB). */
function descriptor(entry: Entry): Buffer {
  const zip64 = entry.size >= max32 || entry.compressed >= max32
  const d = Buffer.alloc(zip64 ? 24 : 16)
  d.writeUInt32LE(0x08074b50, 0)
  d.writeUInt32LE(entry.crc, 4)
  if (zip64) {
    d.writeBigUInt64LE(BigInt(entry.compressed), 8)
    d.writeBigUInt64LE(BigInt(entry.size), 16)
  } else {
    d.writeUInt32LE(entry.compressed, 8)
    d.writeUInt32LE(entry.size, 12)
  }
  return d
}

interface Entry {
  name: Buffer
  crc: number
  compressed: number
  size: number
  offset: number
  descriptor: boolean
}

export class ZipWriter {
  private offset = 0
  private readonly entries: Entry[] = []
  private readonly time: number
  private readonly date: number

  constructor(
    private readonly out: Writable,
    modified: Date
  ) {
    this.time = (modified.getUTCHours() << 11) | (modified.getUTCMinutes() << 5) | (modified.getUTCSeconds() >> 1)
    this.date =
      ((Math.max(modified.getUTCFullYear(), 1980) - 1980) << 9) |
      ((modified.getUTCMonth() + 1) << 5) |
      modified.getUTCDate()
  }

  /** A part known whole (a few KB): deflated at once, its sizes in its local header. */
  async add(name: string, text: string): Promise<void> {
    const data = Buffer.from(text, 'utf8')
    const compressed = deflateRawSync(data, { level })
    const entry = this.entry(name, false, crc32(data), compressed.length, data.length)
    await this.write(this.localHeader(entry))
    await this.write(compressed)
  }

  /**
   * A part whose data comes already deflated, in segments that each end on a sync flush (raw
   * deflate, `deflatedSegment`): they are written as they are, one after another, then an empty
   * final block; the part's CRC is combined from theirs. The XLSX worksheet assembled from an
   * export's chunks, deflated as they were read.
   */
  deflated(name: string) {
    const entry = this.entry(name, true, 0, 0, 0)
    const opened = this.write(this.localHeader(entry))
    return {
      write: async (segment: DeflatedSegment): Promise<void> => {
        await opened
        entry.crc = crc32Combine(entry.crc, segment.crc, segment.size)
        entry.size += segment.size
        entry.compressed += segment.data.length
        await this.write(segment.data)
      },
      end: async (): Promise<void> => {
        await opened
        entry.compressed += finalBlock.length
        await this.write(finalBlock)
        await this.write(descriptor(entry))
      }
    }
  }

  /** Writes the central directory and ends the output; resolves once it has flushed ('finish'). */
  async finish(): Promise<void> {
    const start = this.offset
    for (const e of this.entries) await this.write(this.centralHeader(e))
    const size = this.offset - start
    const tail: Buffer[] = []
    if (start >= max32 || size >= max32 || this.entries.length >= 0xffff) {
      const z = Buffer.alloc(56 + 20)
      z.writeUInt32LE(0x06064b50, 0) // zip64 end of central directory record
      z.writeBigUInt64LE(44n, 4)
      z.writeUInt16LE(45, 12)
      z.writeUInt16LE(45, 14)
      z.writeBigUInt64LE(BigInt(this.entries.length), 24)
      z.writeBigUInt64LE(BigInt(this.entries.length), 32)
      z.writeBigUInt64LE(BigInt(size), 40)
      z.writeBigUInt64LE(BigInt(start), 48)
      z.writeUInt32LE(0x07064b50, 56) // its locator
      z.writeBigUInt64LE(BigInt(this.offset), 64)
      z.writeUInt32LE(1, 72)
      tail.push(z)
    }
    const end = Buffer.alloc(22)
    end.writeUInt32LE(0x06054b50, 0)
    end.writeUInt16LE(Math.min(this.entries.length, 0xffff), 8)
    end.writeUInt16LE(Math.min(this.entries.length, 0xffff), 10)
    end.writeUInt32LE(Math.min(size, max32), 12)
    end.writeUInt32LE(Math.min(start, max32), 16)
    tail.push(end)
    if (this.out.errored || this.out.destroyed) throw this.out.errored ?? new Error('The export output was closed')
    await new Promise<void>((resolve, reject) => {
      this.out.once('error', reject)
      this.out.end(Buffer.concat(tail), () => {
        this.out.off('error', reject)
        resolve()
      })
    })
  }

  private entry(name: string, descriptor: boolean, crc: number, compressed: number, size: number): Entry {
    const entry = { name: Buffer.from(name, 'utf8'), crc, compressed, size, offset: this.offset, descriptor }
    this.entries.push(entry)
    return entry
  }

  private localHeader(e: Entry): Buffer {
    const h = Buffer.alloc(30 + e.name.length)
    h.writeUInt32LE(0x04034b50, 0)
    h.writeUInt16LE(20, 4)
    h.writeUInt16LE(e.descriptor ? 0x0808 : 0x0800, 6) // bit 3: sizes in a descriptor; bit 11: UTF-8 names
    h.writeUInt16LE(8, 8)
    h.writeUInt16LE(this.time, 10)
    h.writeUInt16LE(this.date, 12)
    h.writeUInt32LE(e.crc, 14)
    h.writeUInt32LE(e.compressed, 18)
    h.writeUInt32LE(e.size, 22)
    h.writeUInt16LE(e.name.length, 26)
    e.name.copy(h, 30)
    return h
  }

  private centralHeader(e: Entry): Buffer {
    const big = [e.size, e.compressed, e.offset].filter((v) => v >= max32)
    const extra = big.length ? 4 + 8 * big.length : 0
    const h = Buffer.alloc(46 + e.name.length + extra)
    h.writeUInt32LE(0x02014b50, 0)
    h.writeUInt16LE(big.length ? 45 : 20, 4)
    h.writeUInt16LE(big.length ? 45 : 20, 6)
    h.writeUInt16LE(e.descriptor ? 0x0808 : 0x0800, 8)
    h.writeUInt16LE(8, 10)
    h.writeUInt16LE(this.time, 12)
    h.writeUInt16LE(this.date, 14)
    h.writeUInt32LE(e.crc, 16)
    h.writeUInt32LE(Math.min(e.compressed, max32), 20)
    h.writeUInt32LE(Math.min(e.size, max32), 24)
    h.writeUInt16LE(e.name.length, 28)
    h.writeUInt16LE(extra, 30)
    h.writeUInt32LE(Math.min(e.offset, max32), 42)
    e.name.copy(h, 46)
    if (extra) {
      let at = 46 + e.name.length
      h.writeUInt16LE(0x0001, at)
      h.writeUInt16LE(8 * big.length, at + 2)
      at += 4
      for (const v of big) {
        h.writeBigUInt64LE(BigInt(v), at)
        at += 8
      }
    }
    return h
  }

  private async write(chunk: Buffer): Promise<void> {
    this.offset += chunk.length
    if (!this.out.write(chunk)) await drained(this.out)
  }
}
