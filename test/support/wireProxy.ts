import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * What crossed the wire since the last reset, counted from the protocol itself so that a test can
 * assert it exactly (timing would be flaky; message counts are not).
 */
export type WireStats = {
  /** Sync and simple Query messages: each makes the client wait for one ReadyForQuery. */
  roundTrips: number;
  /** ReadyForQuery with status idle: the server has no open transaction (e.g. after COMMIT). */
  endedIdle: number;
  /** ReadyForQuery with status in-transaction. */
  endedInTransaction: number;
  /** Describe messages: the client asking for a statement's or portal's row description. */
  describes: number;
};

export type WireProxy = {
  /** `targetUrl` with the proxy's host and port. */
  url: string;
  reset(): void;
  stats(): WireStats;
  close(): Promise<void>;
};

// First-message codes of the untyped startup phase (PostgreSQL protocol, "Message Formats").
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const SYNC = 0x53; // 'S' from the frontend
const QUERY = 0x51; // 'Q'
const DESCRIBE = 0x44; // 'D' from the frontend
const READY_FOR_QUERY = 0x5a; // 'Z'
const ERROR_RESPONSE = 0x45; // 'E'
const NO_ENCRYPTION = 0x4e; // 'N'
const IDLE = 0x49; // 'I'
const IN_TRANSACTION = 0x54; // 'T'

/** Per-connection protocol state shared by both directions. */
type Connection = {
  /** The frontend has sent its StartupMessage; everything after is typed. */
  typed: boolean;
  /** SSLRequest/GSSENCRequest sent, whose one-byte answer the backend has yet to send. */
  pendingAnswers: number;
  /** The startup phase's ReadyForQuery arrived; later ones answer round trips. */
  ready: boolean;
  /** Encrypted or not understood: forwarded without counting. */
  opaque: boolean;
};

/**
 * Reads one message at the start of `view`. Returns 0 when more bytes are needed to decide, else
 * the message's total length, which may run past `view` (the rest is skipped unread).
 */
type ReadMessage = (view: Buffer) => number;

/**
 * Cuts a byte stream into messages however TCP chunked it. Only a message's first bytes are ever
 * buffered; bodies are skipped as they stream past.
 */
function messageSplitter(conn: Connection, read: ReadMessage): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  let skip = 0;
  return (chunk) => {
    const buf = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    let at = 0;
    while (at < buf.length && !conn.opaque) {
      if (skip > 0) {
        const n = Math.min(skip, buf.length - at);
        at += n;
        skip -= n;
        continue;
      }
      const size = read(buf.subarray(at));
      if (size === 0) break;
      const available = buf.length - at;
      at += Math.min(size, available);
      skip = Math.max(0, size - available);
    }
    // Copied, so a large chunk is not kept alive by the few bytes of a split header.
    pending = conn.opaque ? Buffer.alloc(0) : Buffer.from(buf.subarray(at));
  };
}

/** Total size of the typed message at the start of `view` (type byte, int32 length, body). */
function typedLength(conn: Connection, view: Buffer): number {
  const length = view.readInt32BE(1);
  if (length >= 4) return 1 + length;
  conn.opaque = true; // out of step with the protocol: stop counting rather than miscount
  return view.length;
}

function frontendReader(conn: Connection, stats: WireStats): ReadMessage {
  return (view) => {
    if (!conn.typed) {
      // Untyped: int32 length including itself, then an int32 code or protocol version.
      if (view.length < 8) return 0;
      const length = view.readInt32BE(0);
      if (length < 8 || length > 10_000) {
        conn.opaque = true; // e.g. a direct TLS ClientHello
        return view.length;
      }
      const code = view.readInt32BE(4);
      if (code === SSL_REQUEST || code === GSSENC_REQUEST) conn.pendingAnswers += 1;
      else conn.typed = true; // StartupMessage (a CancelRequest ends the connection anyway)
      return length;
    }
    if (view.length < 5) return 0;
    const type = view[0];
    if (type === SYNC || type === QUERY) stats.roundTrips += 1;
    if (type === DESCRIBE) stats.describes += 1;
    return typedLength(conn, view);
  };
}

function backendReader(conn: Connection, stats: WireStats): ReadMessage {
  return (view) => {
    if (view.length < 1) return 0;
    // An old server may answer GSSENCRequest with an ErrorResponse instead of one byte.
    if (conn.pendingAnswers > 0 && view[0] !== ERROR_RESPONSE) {
      conn.pendingAnswers -= 1;
      // 'S' or 'G': TLS or GSSAPI encryption follows, which cannot be parsed.
      if (view[0] !== NO_ENCRYPTION) conn.opaque = true;
      return 1;
    }
    if (view.length < 5) return 0;
    const type = view[0];
    if (type === ERROR_RESPONSE) conn.pendingAnswers = 0;
    if (type === READY_FOR_QUERY) {
      if (view.length < 6) return 0;
      if (!conn.ready) conn.ready = true;
      else if (view[5] === IDLE) stats.endedIdle += 1;
      else if (view[5] === IN_TRANSACTION) stats.endedInTransaction += 1;
    }
    return typedLength(conn, view);
  };
}

/**
 * Starts a counting TCP proxy on 127.0.0.1 in front of the server `targetUrl` points at, on
 * `port` (say, one a client was already given while nothing listened there) or any free one.
 */
export async function startWireProxy(
  targetUrl: string,
  options: { port?: number } = {},
): Promise<WireProxy> {
  const target = new URL(targetUrl);
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(target.port || 5432);
  const stats: WireStats = { roundTrips: 0, endedIdle: 0, endedInTransaction: 0, describes: 0 };
  const sockets = new Set<Socket>();

  const server = createServer((client) => {
    const upstream = createConnection({ host, port });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    const conn: Connection = { typed: false, pendingAnswers: 0, ready: false, opaque: false };
    // Listeners added before pipe() run first: a message is counted before it is forwarded, so
    // by the time the client sees an answer, stats() already includes it.
    client.on('data', messageSplitter(conn, frontendReader(conn, stats)));
    upstream.on('data', messageSplitter(conn, backendReader(conn, stats)));
    client.pipe(upstream);
    upstream.pipe(client);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);

  return {
    url: url.toString(),
    reset: () => {
      stats.roundTrips = 0;
      stats.endedIdle = 0;
      stats.endedInTransaction = 0;
      stats.describes = 0;
    },
    stats: () => ({ ...stats }),
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
