/**
 * A body as the edge receives it: the bytes the client sent, or a value a framework's JSON
 * parser already made of them (`express.json()`).
 */
export type ChargeBody = { kind: 'bytes'; bytes: Uint8Array } | { kind: 'parsed'; value: unknown };

/**
 * What the shared core needs of a request, whatever the framework: each adapter (node, Fetch,
 * Fastify) says it in its own terms, so all three answer alike.
 */
export type EdgeRequest = {
  /** The request method, upper case. */
  readonly method: string;
  /**
   * The request's path, without its query, percent-encoding kept: the full path the client
   * sent, not what is left of it below a mount point (the edge routes by its end).
   */
  readonly path: string;
  /**
   * True when the adapter routed the request to the edge as a path below the charge route's
   * own (Fastify's `${path}/*`): then it is a refund, a capture or unknown, never a charge.
   */
  readonly beyondMount?: boolean;
  /**
   * Every value of a header, one per header line where the platform keeps them apart (node);
   * already joined with ", " where it does not (Fetch). Empty when the header is absent.
   */
  headerValues(name: string): readonly string[];
  /** True once the client has hung up: nobody is left to answer. */
  isGone(): boolean;
  /**
   * Reads the body, at most `limitBytes` of it.
   * @throws {HttpEdgeError} `payload_too_large` past the limit.
   * @throws {ClientGoneError} when the client hangs up before the body is whole.
   * @throws {InvalidConfigurationError} when a framework consumed the body and kept nothing.
   */
  readBody(limitBytes: number): Promise<ChargeBody>;
};
