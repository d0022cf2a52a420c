import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A server listening on 127.0.0.1, on a port the OS chose. */
export type RunningServer = { url: string; port: number; server: Server; close(): Promise<void> };

/** Listens on 127.0.0.1 with `listener`; `close()` also ends idle keep-alive connections. */
export async function listen(listener: RequestListener | Server): Promise<RunningServer> {
  const server = typeof listener === 'function' ? createServer(listener) : listener;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
