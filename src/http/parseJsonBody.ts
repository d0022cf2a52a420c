import { InvalidRequestError } from '../errors.js';
import { objectMembersIssue } from './objectMembersIssue.js';
import type { ChargeBody } from './EdgeRequest.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body as a JSON object: the bytes decoded (UTF-8) and parsed, or the value a framework
 * already parsed. `empty` is what a body of no bytes stands for; without it such a body is
 * refused.
 *
 * @throws {InvalidRequestError} naming `body` (or the crowded or repeated field): missing, not
 * UTF-8, not JSON, not an object, an object of more members than any request may have, or one
 * that names a member twice (see `objectMembersIssue`).
 */
export function parseJsonBody(
  body: ChargeBody,
  empty?: Record<string, unknown>,
): Record<string, unknown> {
  if (body.kind === 'bytes' && body.bytes.length === 0 && empty !== undefined) return empty;
  const parsed = body.kind === 'parsed' ? body.value : parseBytes(body.bytes);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw bodyError('must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

function parseBytes(bytes: Uint8Array): unknown {
  if (bytes.length === 0) throw bodyError('is required');
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (error) {
    throw bodyError('must be UTF-8', error);
  }
  // Before parsing: an object of thousands of members, or one that names a member twice (which
  // JSON.parse would hide, keeping the last), is refused for the cost of a look.
  const issue = objectMembersIssue(text);
  if (issue) throw new InvalidRequestError([issue]);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw bodyError('must be valid JSON', error);
  }
}

function bodyError(message: string, cause?: unknown): InvalidRequestError {
  return new InvalidRequestError([{ field: 'body', message }], { cause });
}
