import { createServer } from 'node:net';

/** A PostgreSQL URL on a loopback port nothing listens on: a database that cannot be reached. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `postgres://nobody:nothing@127.0.0.1:${port}/none`;
}
