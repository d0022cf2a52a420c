/** How a Structured Field string (RFC 8941 §3.3.3) at the start of a header value ended. */
export type StructuredStringResult =
  | { ok: true; value: string; rest: string }
  | { ok: false; reason: 'unterminated' | 'bad_escape' | 'bad_character' };

/**
 * Parses the String at the start of `input` (which begins with `"`), as RFC 8941 §4.2.5 does:
 * printable ASCII, with `\"` and `\\` the only escapes. `rest` is whatever follows the closing
 * quote, for the caller to judge.
 */
export function parseStructuredString(input: string): StructuredStringResult {
  let value = '';
  for (let i = 1; i < input.length; i++) {
    const char = input.charCodeAt(i);
    if (char === 0x5c /* \ */) {
      const next = input[++i];
      if (next !== '"' && next !== '\\') return { ok: false, reason: 'bad_escape' };
      value += next;
    } else if (char === 0x22 /* " */) {
      return { ok: true, value, rest: input.slice(i + 1) };
    } else if (char < 0x20 || char > 0x7e) {
      return { ok: false, reason: 'bad_character' };
    } else {
      value += input[i];
    }
  }
  return { ok: false, reason: 'unterminated' };
}
