import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Registry } from 'prom-client'
import { logger } from '../logger.ts'
import { processMetrics, type Metrics } from './metrics.ts'

export interface MetricsListener {
  /** Where Prometheus scrapes: `http://host:port/metrics`. */
  url: string
  close(): Promise<void>
}

/** Config `metrics`. */
export interface MetricsListenerConfig {
  enabled: boolean
  host: string
  port: number
}

/**
 * `GET /metrics` in Prometheus' text format on a listener of its own (config `metrics`:
 * enabled, host, port), so the public API port never shows it and a load
 * balancer need not hide it. Every other path is 404. A port already taken is logged and
 * the service runs on without metrics: a side port must not keep the API down.
 */
export async function serveMetrics(
  metrics: Metrics,
  config: MetricsListenerConfig
): Promise<MetricsListener | undefined> {
  if (!config.enabled) return undefined
  const perProcess = processMetrics()
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: metrics are at /metrics\n')
      return
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('GET /metrics\n')
      return
    }
    const registry = Registry.merge([metrics.registry, perProcess])
    registry.metrics().then(
      (text) =>
        res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: Error) => {
        logger.error('metrics scrape failed', { error: err.stack ?? err.message })
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('The metrics could not be collected.\n')
      }
    )
  })
  server.listen(config.port, config.host)
  try {
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([err]) => Promise.reject(err as Error))])
  } catch (err) {
    logger.warn('metrics listener could not start; running without metrics', {
      host: config.host,
      port: config.port,
      error: (err as Error).message
    })
    server.close()
    return undefined
  }
  const { port } = server.address() as AddressInfo
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  return {
    url: `http://${host}:${port}/metrics`,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
