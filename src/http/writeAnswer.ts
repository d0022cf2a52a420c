import type { ServerResponse } from 'node:http';
import { answerHeaders, hasBody } from './answerHeaders.js';
import type { HttpAnswer } from './errorResponse.js';

/**
 * Writes an answer on a node response: the body text exactly as given (a stored outcome is
 * replayed byte for byte). A client that already left is not written to.
 */
export function writeAnswer(res: ServerResponse, answer: HttpAnswer): void {
  if (res.headersSent || res.destroyed || res.writableEnded) return;
  res.writeHead(answer.status, answerHeaders(answer));
  if (hasBody(answer)) res.end(answer.body, 'utf8');
  else res.end();
}
