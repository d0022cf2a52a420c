import { describe, expect, it } from 'vitest';
import { pathOfTarget, routeOf } from '../../src/http/edgeRoute.js';
import { chargeIdOfSegment } from '../../src/http/parseMovementBody.js';

const ID = '3f1c2a9e-5b7d-4c1e-9a2b-7d4e8f6a0b1c';

describe('routeOf: by the end of the path, wherever the handler is mounted', () => {
  it.each([
    '/charges',
    '/charges/',
    '/api/charges',
    '/v1/charges/',
    '/',
    '',
    '/payments',
    '/pay/now',
    // The last `charges` segment counts: a mount below one is still the charge route.
    '/charges/eu/charges',
  ])('%j is the charge route', (path) => {
    expect(routeOf(path)).toEqual({ kind: 'charge' });
  });

  it.each([
    [`/charges/${ID}/refunds`, 'refund', ID],
    [`/charges/${ID}/refunds/`, 'refund', ID],
    [`/api/v1/charges/${ID}/refunds`, 'refund', ID],
    [`/charges/${ID}/capture`, 'capture', ID],
    ['/charges/ch%2F1/capture', 'capture', 'ch%2F1'],
    ['/charges//refunds', 'refund', ''],
    // A charge whose id happens to read "charges" is still a charge id.
    ['/charges/charges/refunds', 'refund', 'charges'],
  ])('%j is a %s of %j', (path, kind, chargeIdSegment) => {
    expect(routeOf(path)).toEqual({ kind, chargeIdSegment });
  });

  it.each([
    `/charges/${ID}`,
    `/charges/${ID}/`,
    `/charges/${ID}/refund`,
    `/charges/${ID}/captures`,
    `/charges/${ID}/refunds/r_1`,
    `/charges/${ID}/Refunds`,
    `/charges/${ID}/constructor`,
    `/charges/${ID}/__proto__`,
    '/charges/v2',
    '/api/charges/x/y/z',
  ])('%j, below a charge but no route of it, is unknown', (path) => {
    expect(routeOf(path)).toEqual({ kind: 'unknown' });
  });

  it('a path the adapter knows lies below the charge route is never the charge route', () => {
    expect(routeOf('/pay/x/refunds', true)).toEqual({ kind: 'unknown' });
    expect(routeOf('/charges/', true)).toEqual({ kind: 'unknown' });
    expect(routeOf(`/charges/${ID}/capture`, true)).toEqual({
      kind: 'capture',
      chargeIdSegment: ID,
    });
  });
});

describe('pathOfTarget: a node request target as the Fetch API would see its path', () => {
  it.each([
    ['/charges?x=1', '/charges'],
    ['/charges#frag', '/charges'],
    ['http://proxy.example/charges/a/refunds?x', '/charges/a/refunds'],
    ['/charges/../charges/a/capture', '/charges/a/capture'],
    ['/charges/%2e%2e/x', '/x'],
    // A path that starts with `//` is a path, not a host.
    ['//evil.example/charges', '//evil.example/charges'],
    ['/charges/a%2Fb/refunds', '/charges/a%2Fb/refunds'],
    ['', '/'],
  ])('%j → %j', (target, path) => {
    expect(pathOfTarget(target)).toBe(path);
    if (target.startsWith('/')) expect(new URL(`http://x${target}`).pathname).toBe(path);
  });
});

describe('chargeIdOfSegment', () => {
  it('percent-decodes the id', () => {
    expect(chargeIdOfSegment('ch%2F1')).toEqual({ chargeId: 'ch/1', issues: [] });
    expect(chargeIdOfSegment(ID)).toEqual({ chargeId: ID, issues: [] });
  });

  it.each([
    ['', 'must not be empty'],
    ['x'.repeat(256), 'must be at most 255 characters'],
    ['%E0%A4%A', 'must be percent-encoded UTF-8'],
    ['%FF', 'must be percent-encoded UTF-8'],
  ])('refuses %j: %s', (segment, message) => {
    expect(chargeIdOfSegment(segment).issues).toEqual([{ field: 'chargeId', message }]);
  });

  it('counts the length after decoding', () => {
    expect(chargeIdOfSegment('%41'.repeat(255)).issues).toEqual([]);
  });
});
