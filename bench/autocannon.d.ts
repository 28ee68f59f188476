/** The part of autocannon 9 the benchmark uses (the package ships no types). */
declare module 'autocannon' {
  export interface RequestData {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
    [key: string]: unknown
  }

  export interface Request extends RequestData {
    setupRequest?: (req: RequestData, context: Record<string, unknown>) => RequestData | null | undefined
  }

  export interface Options {
    url: string
    connections?: number
    duration?: number
    pipelining?: number
    timeout?: number
    method?: string
    headers?: Record<string, string>
    body?: string | Buffer
    requests?: Request[]
  }

  export interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p97_5: number
    p99: number
    [percentile: string]: number
  }

  export interface Result {
    requests: Histogram
    latency: Histogram
    throughput: Histogram
    errors: number
    timeouts: number
    non2xx: number
    resets: number
    duration: number
    '2xx': number
    statusCodeStats: Record<string, { count: number }>
  }

  export interface Instance extends PromiseLike<Result> {
    stop(): void
  }

  function autocannon(options: Options): Instance
  export default autocannon
}
