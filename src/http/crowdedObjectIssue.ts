import type { FieldIssue } from '../errors.js';
import { METADATA_LIMITS } from '../request.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

type Frame = {
  object: boolean;
  members: number;
  /** The top-level field this frame sits under (`metadata`), or none at the top. */
  field: string | undefined;
  /** Inside an object: the next string is a key. */
  expectKey: boolean;
};

/**
 * Looks through JSON text, before it is parsed, for an object with more members than any
 * object of a charge request may have (`METADATA_LIMITS.maxKeys`): metadata with 12,000 keys,
 * a body with thousands of fields. Parsing such an object costs ten times what parsing the same
 * bytes of anything else does; this look costs a pass over the characters and stops at the
 * first object past the limit, so such a body is refused for about what it costs to receive.
 *
 * It checks nothing else: malformed JSON is left for `JSON.parse` to refuse.
 *
 * @returns the issue to refuse the body with (the one validation would give for metadata), or
 * `null`.
 */
export function crowdedObjectIssue(text: string): FieldIssue | null {
  const limit = METADATA_LIMITS.maxKeys;
  const stack: Frame[] = [];
  let lastTopKey: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    const frame = stack[stack.length - 1];
    if (char === QUOTE) {
      const start = i;
      for (i++; i < text.length; i++) {
        const inner = text.charCodeAt(i);
        if (inner === BACKSLASH) i++;
        else if (inner === QUOTE) break;
      }
      if (frame?.object && frame.expectKey) {
        frame.expectKey = false;
        if (stack.length === 1) lastTopKey = decodeKey(text.slice(start, i + 1));
      }
      continue;
    }
    if (char === OPEN_OBJECT || char === OPEN_ARRAY) {
      const field = stack.length === 0 ? undefined : stack.length === 1 ? lastTopKey : frame?.field;
      stack.push({ object: char === OPEN_OBJECT, members: 0, field, expectKey: true });
      continue;
    }
    if (char === CLOSE_OBJECT || char === CLOSE_ARRAY) {
      stack.pop();
      continue;
    }
    if (frame === undefined || !frame.object) continue;
    if (char === COMMA) {
      frame.expectKey = true;
    } else if (char === COLON) {
      // A member is counted when its key is done: `{}` has none, `{"a":1}` one.
      frame.members += 1;
      if (frame.members > limit) return issueFor(stack);
    }
  }
  return null;
}

function issueFor(stack: readonly Frame[]): FieldIssue {
  const limit = METADATA_LIMITS.maxKeys;
  const frame = stack[stack.length - 1];
  if (stack.length === 1) {
    return { field: 'body', message: `has more than ${limit} fields` };
  }
  if (stack.length === 2 && frame?.field === 'metadata') {
    // What validation says of it: the same refusal, whether or not the body was parsed.
    return { field: 'metadata', message: `must have at most ${limit} keys` };
  }
  return { field: frame?.field ?? 'body', message: `has an object of more than ${limit} members` };
}

function decodeKey(quoted: string): string | undefined {
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return undefined;
  }
}
