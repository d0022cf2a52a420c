import type { KeyInspection, KeySummary } from '../admin/types.js';
import type { ChargeTotals } from '../store/readKeyDetails.js';

/** How a command's lines look: aligned tables for a person at a terminal, plain lines for a pipe. */
export type Rendering = { tty: boolean; columns: number };

const NONE = '-';

/** A timestamp to the millisecond, in UTC. */
function time(date: Date | null): string {
  return date === null ? NONE : date.toISOString();
}

// eslint-disable-next-line no-control-regex -- matching them is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * `text` with every control character (C0, DEL, C1) shown escaped (`\u001b`). What a provider
 * or a person wrote (an error message, a decline code, a reason, an actor) is printed, and an
 * escape sequence written to the operator's terminal could move the cursor, rewrite what is
 * shown or set the window's title.
 */
function printable(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** One line of a value that may hold newlines (an error message, a reason). */
export function oneLine(text: string | null): string {
  return text === null ? NONE : printable(text.replace(/\s+/g, ' '));
}

/**
 * Rows as an aligned table under a header, each line cut to the terminal's width; the last
 * column takes what is left.
 */
export function renderTable(header: string[], rows: string[][], columns: number): string[] {
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .slice(0, Math.max(20, columns))
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

const LIST_HEADER = [
  'CREATED',
  'MERCHANT',
  'OPERATION',
  'KEY',
  'POINT',
  'ATTEMPTS',
  'CHARGE',
  'LEASE',
  'LAST ERROR',
];

function listCells(key: KeySummary): string[] {
  const cells = [
    time(key.createdAt),
    key.merchantId,
    key.operation,
    key.key,
    key.recoveryPoint,
    String(key.attempts),
    key.chargeStatus ?? NONE,
    key.leaseHeld ? 'held' : NONE,
    oneLine(key.lastError),
  ];
  return cells.map(printable);
}

/**
 * `list`'s keys: a table on a terminal; on a pipe one key per line, its fields separated by tabs
 * (no header, so `wc -l`, `cut` and `awk` see keys only), the key's own charge, refund or capture
 * id last. The table leaves the id out: 36 characters wide, it pushed the status columns past a
 * terminal's width (`inspect` shows it).
 */
export function renderKeyList(keys: readonly KeySummary[], rendering: Rendering): string[] {
  if (!rendering.tty) {
    return keys.map((key) => [...listCells(key), printable(key.chargeId)].join('\t'));
  }
  if (keys.length === 0) return ['no keys'];
  return renderTable(LIST_HEADER, keys.map(listCells), rendering.columns);
}

/** A charge's totals on one line: captured (an authorization's), refunded, and what is held. */
function totalsText(totals: ChargeTotals): string {
  const parts = [
    ...(totals.authorizedOnly ? [`authorized only, captured ${totals.capturedMinor ?? 0}`] : []),
    `refunded ${totals.refundedMinor}`,
  ];
  const held = [
    ...(totals.captureReservedMinor ? [`${totals.captureReservedMinor} by a capture`] : []),
    ...(totals.refundReservedMinor > 0 ? [`${totals.refundReservedMinor} by refunds`] : []),
  ];
  return `${parts.join(', ')}${held.length > 0 ? `; held: ${held.join(', ')}` : ''}`;
}

/** `inspect`'s report: labelled lines (aligned on a terminal), then history and audit trail. */
export function renderInspection(found: KeyInspection, rendering: Rendering): string[] {
  const { charge, movement, lease, outcome } = found;
  const fields: Array<[string, string]> = [
    ['key', `${found.merchantId} ${found.operation} ${found.key}`],
    ['recovery point', found.recoveryPoint],
    ['attempts', String(found.attempts)],
    [
      'lease',
      lease.held ? `held, ${lease.remainingMs} ms left (until ${time(lease.until)})` : 'not held',
    ],
    ['last error', oneLine(found.lastError)],
    ['request', found.request === null ? NONE : JSON.stringify(found.request)],
    ['request hash', found.requestHash],
  ];
  if (movement) {
    // A refund or capture: what it moved, on which charge.
    fields.push(
      [
        movement.kind,
        `${movement.id} ${movement.status}${movement.refusal ? ` (${movement.refusal})` : ''}`,
      ],
      ['of charge', movement.chargeId],
      [
        'amount',
        movement.amountMinor === null
          ? NONE
          : `${movement.amountMinor} ${movement.currency ?? ''}`.trim(),
      ],
      ['provider key', movement.providerKey],
      [`provider ${movement.kind}`, movement.providerMovementId ?? NONE],
      // What the charge has left: a person resolving this one weighs it against that.
      ['charge totals', movement.chargeTotals ? totalsText(movement.chargeTotals) : NONE],
    );
  } else {
    fields.push(['charge', charge === null ? NONE : `${charge.id} ${charge.status}`]);
  }
  if (charge) {
    fields.push(
      ['amount', `${charge.amountMinor} ${charge.currency} (customer ${charge.customerId})`],
      ['provider key', charge.providerKey],
      ['provider charge', charge.providerChargeId ?? NONE],
      ['decline code', charge.declineCode ?? NONE],
      ['totals', totalsText(charge.totals)],
    );
  }
  fields.push(['outcome', outcome === null ? NONE : `HTTP ${outcome.httpStatus} ${outcome.body}`]);
  const width = rendering.tty ? Math.max(...fields.map(([label]) => label.length)) + 2 : 0;
  const label = (name: string) => (rendering.tty ? name.padEnd(width) : `${name}: `);
  const lines = fields.map(([name, value]) => `${label(name)}${value}`);
  const history = found.history.map(
    (step) =>
      `${time(step.at)}  ${step.event}${step.detail === null ? '' : `  ${oneLine(step.detail)}`}`,
  );
  const audit = found.audit.map((entry) => {
    // A charge's provider charge, or a refund's or capture's own provider id (`movement.kind`).
    const provider =
      entry.providerChargeId !== null
        ? ` (provider charge ${entry.providerChargeId})`
        : entry.providerMovementId !== null
          ? ` (provider ${movement?.kind ?? found.operation} ${entry.providerMovementId})`
          : '';
    return `${time(entry.at)}  ${entry.action} ${entry.result}${provider} by ${oneLine(entry.actor)}: ${oneLine(entry.reason)}`;
  });
  const section = (title: string, items: string[]) =>
    rendering.tty
      ? ['', title, ...(items.length === 0 ? ['  none'] : items.map((item) => `  ${item}`))]
      : items.map((item) => `${title}: ${item}`);
  return [...lines, ...section('history', history), ...section('audit', audit)].map(printable);
}
