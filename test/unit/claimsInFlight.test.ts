import { describe, expect, it } from 'vitest';
import { claimsInFlight } from '../../src/store/groupCommit.js';
import type { ClaimResult } from '../../src/store/claimKey.js';
import type { KeyState } from '../../src/store/keyState.js';

// How many claim batches group commit keeps in flight: one while claims write (new keys), two
// while most recent ones only read (replays, 409s, 422s), never two on a small pool.

const fresh: ClaimResult = { kind: 'claimed' };
const existing: ClaimResult = {
  kind: 'existing',
  state: {} as KeyState,
  storedRequest: null,
};

describe('claim batches in flight', () => {
  it('starts at one: a fresh claim writes and commits', () => {
    expect(claimsInFlight(10).limit()).toBe(1);
  });

  it('allows two once most recent claims found their keys, and one again once they stop', () => {
    const claims = claimsInFlight(10);
    Array.from({ length: 100 }, () => existing).forEach(claims.note);
    expect(claims.limit()).toBe(2);
    Array.from({ length: 100 }, () => fresh).forEach(claims.note);
    expect(claims.limit()).toBe(1);
  });

  it('follows the share of recent claims, not a single batch', () => {
    const claims = claimsInFlight(10);
    Array.from({ length: 100 }, () => existing).forEach(claims.note);
    [fresh, fresh, null].forEach(claims.note);
    expect(claims.limit()).toBe(2);
  });

  it('says claims are reading once most recent ones, alone or batched, found their keys', () => {
    const claims = claimsInFlight(10);
    expect(claims.reading()).toBe(false);
    for (let i = 0; i < 100; i++) claims.note(existing);
    expect(claims.reading()).toBe(true);
    for (let i = 0; i < 100; i++) claims.note(fresh);
    expect(claims.reading()).toBe(false);
  });

  it('keeps one on a pool of fewer than four connections, whatever the claims', () => {
    const claims = claimsInFlight(3);
    Array.from({ length: 100 }, () => existing).forEach(claims.note);
    expect(claims.limit()).toBe(1);
  });
});
