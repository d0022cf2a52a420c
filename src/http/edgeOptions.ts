import { InvalidConfigurationError } from '../errors.js';

/** What `authenticate` returns: the merchant the request speaks for, or nobody (401). */
export type AuthenticatedMerchant = string | null | undefined;

/**
 * Options every charge edge takes (node handler, Fetch handler, Fastify plugin); `Req` is the
 * request as that framework hands it over.
 */
export type ChargeEdgeOptions<Req> = {
  /**
   * Says which merchant the request speaks for, from its credentials (a token, a client
   * certificate, a session). It runs before anything else is read, so a refused request
   * consumes no key. Return `null` (or `undefined`, or `''`) to answer 401; throw a
   * `ChargeOnceError` (its code one of `CHARGE_ONCE_ERROR_CODES`) to answer with its status and
   * code; any other throw answers 500.
   *
   * Required: there is no default, because any default would let a request charge for a
   * merchant nobody vouched for.
   */
  authenticate: (req: Req) => AuthenticatedMerchant | Promise<AuthenticatedMerchant>;
  /**
   * The largest body accepted, in bytes; past it the answer is 413 and the key is not consumed.
   * A body a framework already parsed counts as its compact JSON re-serialization.
   * @defaultValue `102_400` (100 KiB: a request with full metadata fits)
   */
  maxBodyBytes?: number;
  /**
   * The header that carries the idempotency key, bare (`abc`) or as a Structured Field string
   * (`"abc"`, RFC 8941), which is the same key.
   * @defaultValue `'Idempotency-Key'`
   */
  keyHeader?: string;
  /**
   * The challenge a 401 carries in `WWW-Authenticate`, as RFC 9110 requires one.
   * @defaultValue `'Bearer'`
   */
  wwwAuthenticate?: string;
  /**
   * Where the problem types of `application/problem+json` answers live: each problem's `type`
   * is this followed by its code (`https://docs.example.com/errors/` →
   * `https://docs.example.com/errors/invalid_request`), with a title of its own.
   * @defaultValue none: `type` is `about:blank` and `title` the status phrase (RFC 9457 §4.2.1);
   * the `code` member tells the problems apart.
   */
  problemTypeBase?: string;
  /**
   * Called with every error answered with a 5xx, for the operator's log: the answer itself says
   * nothing of an unexpected error. Should it throw (or reject), that goes to `console.error`
   * and the answer is written all the same.
   * @defaultValue writes the error to `console.error`
   */
  onError?: (error: unknown, req: Req) => void;
};

/** The options with their defaults filled in and checked. */
export type ResolvedEdgeOptions<Req> = Required<Omit<ChargeEdgeOptions<Req>, 'problemTypeBase'>> & {
  problemTypeBase: string | undefined;
};

const DEFAULTS = {
  maxBodyBytes: 102_400,
  keyHeader: 'Idempotency-Key',
  wwwAuthenticate: 'Bearer',
} as const;

/** An HTTP field name (RFC 9110 `token`). */
const FIELD_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

/**
 * Fills in defaults and checks the options once, when the edge is created.
 * @throws {InvalidConfigurationError} when `authenticate` is missing or an option is invalid.
 */
export function resolveEdgeOptions<Req>(options: ChargeEdgeOptions<Req>): ResolvedEdgeOptions<Req> {
  if (typeof options?.authenticate !== 'function') {
    throw new InvalidConfigurationError(
      'authenticate is required: it says which merchant a request charges for',
    );
  }
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULTS.maxBodyBytes;
  if (!(Number.isSafeInteger(maxBodyBytes) && maxBodyBytes > 0)) {
    throw new InvalidConfigurationError('maxBodyBytes must be a positive integer');
  }
  const keyHeader = options.keyHeader ?? DEFAULTS.keyHeader;
  if (!FIELD_NAME.test(keyHeader)) {
    throw new InvalidConfigurationError('keyHeader must be a valid HTTP header name');
  }
  const problemTypeBase = options.problemTypeBase;
  if (problemTypeBase !== undefined && !URL.canParse(problemTypeBase)) {
    throw new InvalidConfigurationError('problemTypeBase must be an absolute URI');
  }
  const onError = options.onError;
  if (onError !== undefined && typeof onError !== 'function') {
    throw new InvalidConfigurationError('onError must be a function');
  }
  return {
    authenticate: options.authenticate,
    maxBodyBytes,
    keyHeader,
    wwwAuthenticate: options.wwwAuthenticate ?? DEFAULTS.wwwAuthenticate,
    problemTypeBase,
    onError:
      onError ??
      ((error: unknown) => console.error('chargeonce: the charge handler answered 5xx', error)),
  };
}
