/**
 * `instanceof` across copies of chargeonce in one process.
 *
 * The package ships an ES module build and a CommonJS one, each with classes of its own. An app
 * that loads one with `import` and the other with `require` (a CommonJS plugin of an ES module
 * app, say) has two `IdempotencyKeyReusedError`s, and an error thrown by one copy would fail
 * `instanceof` against the other's class: the HTTP edge would answer a reused key with 500
 * instead of 422, and the engine would take a provider's transient failure for a hard one. So
 * each error class is named by a kind that never changes, every error records the kinds of its
 * class and of its parents under a symbol every copy shares (`Symbol.for`), and `instanceof`
 * accepts an error of another copy that records the class's kind.
 */
const KIND = Symbol.for('chargeonce.errorKind');
const KINDS = Symbol.for('chargeonce.errorKinds');

type Kinded = { [KIND]?: string };

/** Names `cls` for `instanceof` across copies (by a name that never changes: the class's). */
export function nameErrorKind(cls: abstract new (...args: never[]) => Error, kind: string): void {
  Object.defineProperty(cls, KIND, { value: kind });
}

/** Records on `error` the kinds of the class constructed (`new.target`) and of its parents. */
export function recordErrorKinds(error: Error, target: unknown): void {
  const kinds: string[] = [];
  for (let c = target; typeof c === 'function'; c = Object.getPrototypeOf(c) as unknown) {
    if (Object.hasOwn(c, KIND)) kinds.push((c as Kinded)[KIND] as string);
  }
  // Not enumerable: kept out of JSON, logs and `util.inspect`.
  Object.defineProperty(error, KINDS, { value: kinds });
}

/**
 * `value instanceof cls`, an error of another copy of chargeonce included. A class without a kind
 * of its own (a subclass of yours) is matched by its prototype chain only.
 */
export function isErrorOfKind(cls: unknown, value: unknown): boolean {
  if (typeof cls !== 'function') return false;
  if (Function.prototype[Symbol.hasInstance].call(cls, value)) return true;
  if (typeof value !== 'object' || value === null || !Object.hasOwn(cls, KIND)) return false;
  const kinds = (value as { [KINDS]?: unknown })[KINDS];
  return Array.isArray(kinds) && kinds.includes((cls as Kinded)[KIND]);
}
