import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * What the proxy does to one request/response exchange:
 * - `pass`: forwards both ways.
 * - `resetRequest`: resets the client's connection as the request arrives; the server never
 *   sees it.
 * - `dropResponse`: forwards the request, and resets the client's connection as soon as the
 *   server's answer arrives: the server did the work, the client never hears of it.
 * - `delayRequest`: holds the request for `delayMs` before forwarding it, even if the client
 *   has given up meanwhile, so it can reach the server after the client's retry.
 * - `delayResponse`: holds the server's answer for `delayMs`.
 */
export type HttpFault = 'pass' | 'resetRequest' | 'dropResponse' | 'delayRequest' | 'delayResponse';

/** The fault and its delay for one exchange. */
export type FaultChoice = { fault: HttpFault; delayMs?: number };

export type HttpFaultProxy = {
  url: string;
  /** Exchanges per fault, as applied. */
  counts: Record<HttpFault, number>;
  close(): Promise<void>;
};

/**
 * A TCP proxy in front of an HTTP server that injects a fault per exchange. It tells exchanges
 * apart on a keep-alive connection by direction: the first client bytes after the server has
 * answered start the next request (clients here do not pipeline).
 */
export async function startHttpFaultProxy(options: {
  targetPort: number;
  choose: () => FaultChoice;
}): Promise<HttpFaultProxy> {
  const counts: Record<HttpFault, number> = {
    pass: 0,
    resetRequest: 0,
    dropResponse: 0,
    delayRequest: 0,
    delayResponse: 0,
  };
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, run: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      run();
    }, ms);
    timers.add(timer);
  };

  const server = createServer((client) => {
    const upstream = connect(options.targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.on('close', () => sockets.delete(client));
    upstream.on('close', () => sockets.delete(upstream));
    client.on('error', () => {});
    upstream.on('error', () => {});

    let current: FaultChoice = { fault: 'pass' };
    let answering = true; // true between exchanges: the next client bytes start a request
    // Held bytes of a delayed direction; order is kept by queueing behind the held ones.
    let heldRequest: Buffer[] | null = null;
    let heldResponse: Buffer[] | null = null;

    client.on('data', (chunk: Buffer) => {
      if (answering) {
        answering = false;
        current = options.choose();
        counts[current.fault] += 1;
        if (current.fault === 'delayRequest') {
          heldRequest = [];
          later(current.delayMs ?? 0, () => {
            for (const held of heldRequest ?? []) upstream.write(held);
            heldRequest = null;
          });
        }
      }
      if (current.fault === 'resetRequest') {
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      if (heldRequest) heldRequest.push(chunk);
      else upstream.write(chunk);
    });

    upstream.on('data', (chunk: Buffer) => {
      if (!answering) {
        answering = true;
        if (current.fault === 'delayResponse') {
          heldResponse = [];
          later(current.delayMs ?? 0, () => {
            for (const held of heldResponse ?? []) if (!client.destroyed) client.write(held);
            heldResponse = null;
          });
        }
      }
      if (current.fault === 'dropResponse') {
        // The server has answered; the client will never know.
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      if (heldResponse) heldResponse.push(chunk);
      else if (!client.destroyed) client.write(chunk);
    });

    // A client that gives up does not recall a delayed request: it still reaches the server,
    // whose answer then goes nowhere. Otherwise each side's end is passed on.
    client.on('close', () => {
      if (heldRequest) later(current.delayMs ?? 0, () => upstream.end());
      else upstream.end();
    });
    upstream.on('close', () => {
      if (heldResponse) later(current.delayMs ?? 0, () => client.destroy());
      else client.destroy();
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A small seeded PRNG (mulberry32): the same seed draws the same faults. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
