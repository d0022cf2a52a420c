import type { ServerResponse } from 'node:http';
import type { HttpAnswer } from './errorResponse.js';

/**
 * Writes an answer: the body text exactly as given (a stored outcome is replayed byte for
 * byte), as JSON that no cache keeps. A client that already left is not written to.
 */
export function writeAnswer(res: ServerResponse, answer: HttpAnswer): void {
  if (res.headersSent || res.destroyed || res.writableEnded) return;
  res.writeHead(answer.status, {
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(answer.body, 'utf8')),
    // A payment answer belongs to one client and one moment; no shared cache may keep it.
    'Cache-Control': 'no-store',
    ...answer.headers,
  });
  res.end(answer.body, 'utf8');
}
