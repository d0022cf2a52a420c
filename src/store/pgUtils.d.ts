/**
 * node-postgres's value mapping (values to the text it sends), which its package exports under
 * `pg/lib/*` with no declaration of its own.
 */
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue: (value: unknown) => unknown };
  export default utils;
}
