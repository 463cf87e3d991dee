import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Kafka } from 'kafkajs';
import { RegistryError } from './errors';
import { registryRoutes, RESPONSE_CONTENT_TYPE } from './routes';
import { RegistryStore } from './store';

/**
 * A schema registry speaking the Confluent REST API (Avro only), so that
 * @kafkajs/confluent-schema-registry works against it unchanged. State lives on a compacted
 * Kafka topic; see RegistryStore for why exactly one registry may write a given topic.
 */
export interface SchemaRegistryServer {
  url: string;
  close(): Promise<void>;
}

export interface SchemaRegistryOptions {
  kafka: Kafka;
  topic: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** Replication of the topic when it has to be created; default 1. */
  replicationFactor?: number;
}

const REQUEST_CONTENT_TYPES = ['application/vnd.schemaregistry.v1+json', 'application/vnd.schemaregistry+json', 'application/json'];

/** How long close() lets in-flight requests finish before cutting their connections. */
const CLOSE_GRACE_MS = 5_000;

export async function startSchemaRegistry(options: SchemaRegistryOptions): Promise<SchemaRegistryServer> {
  const host = options.host ?? '127.0.0.1';
  const store = await RegistryStore.open(options.kafka, options.topic, options.replicationFactor);
  let server: Server;
  try {
    server = await listen(createApp(store), host, options.port ?? 0);
  } catch (error) {
    await store.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    async close() {
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      });
      await store.close();
    },
  };
}

function createApp(store: RegistryStore): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use((req, _res, next) => {
    // false (rather than null) means there is a body and it is of another type
    if (req.is(REQUEST_CONTENT_TYPES) === false) throw new RegistryError(415, 415, 'HTTP 415 Unsupported Media Type');
    next();
  });
  app.use(express.json({ type: REQUEST_CONTENT_TYPES, limit: '16mb' }));
  app.use(registryRoutes(store));
  app.use(() => {
    throw new RegistryError(404, 404, 'HTTP 404 Not Found');
  });
  app.use(errorHandler);
  return app;
}

function errorHandler(error: unknown, _req: Request, res: Response, _next: NextFunction): void {
  let status = 500;
  let body: { error_code: number; message: string };
  if (error instanceof RegistryError) {
    status = error.status;
    body = { error_code: error.errorCode, message: error.message };
  } else if (clientErrorStatus(error) !== undefined) {
    // body-parser's errors: malformed JSON, too large, bad charset
    status = clientErrorStatus(error) ?? 400;
    body = { error_code: status, message: error instanceof Error ? error.message : String(error) };
  } else {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${JSON.stringify({ level: 'error', source: 'schema-registry', message })}\n`);
    body = { error_code: 50001, message: `Error in the backend data store: ${message}` };
  }
  res.status(status).type(RESPONSE_CONTENT_TYPE).send(Buffer.from(JSON.stringify(body)));
}

function clientErrorStatus(error: unknown): number | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const status = (error as { status?: unknown }).status;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
}

function listen(app: express.Express, host: string, port: number): Promise<Server> {
  const server = createServer(app);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
