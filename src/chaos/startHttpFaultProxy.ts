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
 * - `respond`: the server never sees the request; the proxy answers `status` itself (a 429 or
 *   a 503 from a load balancer in front of the API), with `headers` and `body`.
 * - `replaceResponse`: forwards the request, throws the server's answer away and answers
 *   `status` instead: the server did the work, the client hears it failed.
 * - `hang`: the server never sees the request and the client never hears back; the
 *   connection stays open until the client gives up.
 */
export type HttpFault =
  | 'pass'
  | 'resetRequest'
  | 'dropResponse'
  | 'delayRequest'
  | 'delayResponse'
  | 'respond'
  | 'replaceResponse'
  | 'hang';

/** The fault for one exchange, and its details. */
export type FaultChoice = {
  fault: HttpFault;
  /** `delayRequest`, `delayResponse`. */
  delayMs?: number;
  /** `respond`, `replaceResponse`: the status to answer (default 503). */
  status?: number;
  /** `respond`, `replaceResponse`: extra headers, such as `Retry-After`. */
  headers?: Record<string, string>;
  /** `respond`, `replaceResponse`: the body, JSON (default `{}`). */
  body?: string;
};

/** Exchanges per fault, as applied (faults beyond the first five appear once they happen). */
export type HttpFaultCounts = Record<
  'pass' | 'resetRequest' | 'dropResponse' | 'delayRequest' | 'delayResponse',
  number
> &
  Partial<Record<HttpFault, number>>;

export type HttpFaultProxy = {
  url: string;
  port: number;
  counts: HttpFaultCounts;
  close(): Promise<void>;
};

/**
 * A TCP proxy in front of an HTTP server on this machine that injects a fault per exchange. It
 * tells exchanges apart on a keep-alive connection by direction: the first client bytes after
 * the server has answered start the next request (clients here do not pipeline). Listens on a
 * free loopback port.
 */
export async function startHttpFaultProxy(options: {
  targetPort: number;
  choose: () => FaultChoice;
}): Promise<HttpFaultProxy> {
  const counts: HttpFaultCounts = {
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

    /** Answers the client in the proxy's own name, then closes the connection. */
    const answer = (choice: FaultChoice) => {
      upstream.destroy();
      if (client.destroyed) return;
      client.end(synthesizedResponse(choice));
    };

    client.on('data', (chunk: Buffer) => {
      if (answering) {
        answering = false;
        current = options.choose();
        counts[current.fault] = (counts[current.fault] ?? 0) + 1;
        if (current.fault === 'delayRequest') {
          heldRequest = [];
          later(current.delayMs ?? 0, () => {
            for (const held of heldRequest ?? []) upstream.write(held);
            heldRequest = null;
          });
        }
        if (current.fault === 'respond') {
          answer(current);
          return;
        }
      }
      if (current.fault === 'resetRequest') {
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      // `respond` and `hang`: the server never sees the request.
      if (current.fault === 'respond' || current.fault === 'hang') return;
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
        if (current.fault === 'replaceResponse') {
          answer(current);
          return;
        }
      }
      if (current.fault === 'replaceResponse') return;
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
      else if (current.fault !== 'respond' && current.fault !== 'replaceResponse') {
        client.destroy();
      }
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    counts,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function synthesizedResponse(choice: FaultChoice): string {
  const status = choice.status ?? 503;
  const body = choice.body ?? '{}';
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    ...choice.headers,
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  return `HTTP/1.1 ${status} Injected\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}
