/**
 * A promise rejected with `error`, unchanged, whatever was thrown: what an async function returns
 * when its body throws. For the hot path's functions that chain promises rather than being async,
 * so that a synchronous throw still reaches the caller as a rejection.
 */
export function rejected(error: unknown): Promise<never> {
  // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- passed on as thrown
  return Promise.reject(error);
}
