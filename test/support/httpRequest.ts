import { request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';

/** What came back, with the body as raw bytes and as text. */
export type RawResponse = {
  status: number;
  headers: IncomingHttpHeaders;
  bytes: Buffer;
  text: string;
};

/**
 * Sends one request with node's `http`, so a test controls the wire exactly: repeated header
 * lines (`headers: { name: ['a', 'b'] }`), no `Content-Type`, or a body in chunks with no
 * `Content-Length` (chunked transfer encoding).
 */
export function send(
  url: string,
  options: {
    method?: string;
    headers?: OutgoingHttpHeaders;
    body?: string | Buffer;
    chunks?: readonly (string | Buffer)[];
  } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: OutgoingHttpHeaders = { ...options.headers };
    if (options.body !== undefined) headers['content-length'] = Buffer.byteLength(options.body);
    const req = request(url, { method: options.method ?? 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          bytes,
          text: bytes.toString(),
        });
      });
    });
    // The server may answer (413) and close before the whole body is written: the answer counts.
    req.on('error', (error) => reject(error));
    if (options.chunks) {
      for (const chunk of options.chunks) req.write(chunk);
      req.end();
    } else {
      req.end(options.body);
    }
  });
}

/** The error body every refusal carries. */
export type ErrorBody = {
  error: { code: string; message: string; fields?: { field: string; message: string }[] };
};

/** Parses an error body. */
export function errorOf(response: RawResponse): ErrorBody['error'] {
  return (JSON.parse(response.text) as ErrorBody).error;
}
