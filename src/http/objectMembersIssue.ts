import type { FieldIssue } from '../errors.js';
import { METADATA_LIMITS, shortFieldName } from '../request.js';

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
  /** Inside an object: its keys so far, made when its second key comes. */
  keys: Set<string> | undefined;
  /** Inside an object: its first key, kept apart so that most small objects make no set. */
  firstKey: string | undefined;
};

/**
 * Looks through JSON text, before it is parsed, for an object with more members than any
 * object of a charge request may have (`METADATA_LIMITS.maxKeys`): metadata with 12,000 keys,
 * a body with thousands of fields. Parsing such an object costs ten times what parsing the same
 * bytes of anything else does; this look costs a pass over the characters and stops at the
 * first object past the limit, so such a body is refused for about what it costs to receive.
 *
 * And for an object that names a member twice (`{"amountMinor": 100, "amountMinor": 100000}`):
 * `JSON.parse` keeps the last one, where a proxy or a log in front of it may have read the
 * first, so a request that means two things is refused rather than taken one way.
 *
 * It checks nothing else: malformed JSON is left for `JSON.parse` to refuse.
 *
 * @returns the issue to refuse the body with (the one validation would give for metadata), or
 * `null`.
 */
export function objectMembersIssue(text: string): FieldIssue | null {
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
        const key = keyText(text, start, i);
        if (stack.length === 1) lastTopKey = key;
        if (key !== undefined && seenBefore(frame, key)) return duplicateIssueFor(stack, key);
      }
      continue;
    }
    if (char === OPEN_OBJECT || char === OPEN_ARRAY) {
      const field = stack.length === 0 ? undefined : stack.length === 1 ? lastTopKey : frame?.field;
      stack.push({
        object: char === OPEN_OBJECT,
        members: 0,
        field,
        expectKey: true,
        keys: undefined,
        firstKey: undefined,
      });
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
  return {
    field: shortFieldName(frame?.field ?? 'body'),
    message: `has an object of more than ${limit} members`,
  };
}

/** Whether `frame` (an object) had `key` before; remembers it. */
function seenBefore(frame: Frame, key: string): boolean {
  if (frame.firstKey === undefined) {
    frame.firstKey = key;
    return false;
  }
  if (key === frame.firstKey) return true;
  frame.keys ??= new Set();
  if (frame.keys.has(key)) return true;
  frame.keys.add(key);
  return false;
}

function duplicateIssueFor(stack: readonly Frame[], key: string): FieldIssue {
  const frame = stack[stack.length - 1];
  // Names echoed back are cut as validation cuts them: a refusal stays small.
  if (stack.length === 1) return { field: shortFieldName(key), message: 'is given more than once' };
  if (stack.length === 2 && frame?.field === 'metadata') {
    const named = JSON.stringify(shortFieldName(key));
    return { field: 'metadata', message: `has the key ${named} more than once` };
  }
  return {
    field: shortFieldName(frame?.field ?? 'body'),
    message: 'has an object naming a member more than once',
  };
}

/**
 * The key whose quotes are at `start` and `end`: the text between them, decoded only when it
 * holds an escape (`"\u0061"` is the key `a`); undefined when it is not a valid string, which
 * `JSON.parse` refuses anyway.
 */
function keyText(text: string, start: number, end: number): string | undefined {
  const raw = text.slice(start + 1, end);
  return raw.includes('\\') ? decodeKey(`"${raw}"`) : raw;
}

function decodeKey(quoted: string): string | undefined {
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return undefined;
  }
}
