const COMMON = `  --database-url URL       PostgreSQL (default: $DATABASE_URL)
  --schema NAME            chargeonce's schema (default: chargeonce)
  --json                   print JSON
  -h, --help               print this help`;

const TARGET = `  --merchant ID            the key's merchant (required)
  --key KEY                the idempotency key (required)
  --operation NAME         the key's operation (default: charge)`;

/** The usage of each admin command (`chargeonce <command> --help`). */
export const ADMIN_USAGE = {
  migrate: `Usage: chargeonce migrate [options]

Creates or upgrades chargeonce's schema to this version's; safe to run from many processes.

Options:
${COMMON}
`,
  inspect: `Usage: chargeonce inspect --merchant ID --key KEY [options]

Everything stored about one key: recovery point, request, attempts, lease, last error, charge
and its totals, stored outcome, history and audit trail. Exits 1 when there is no such key
(saying so, and, but under --json, whether the key is under another of charge, refund and
capture).

Options:
${TARGET}
${COMMON}
`,
  list: `Usage: chargeonce list [options]

Keys, oldest first, a page at a time. On a terminal a table; piped, one key per line with its
fields separated by tabs (created, merchant, operation, key, point, attempts, charge, lease,
last error, id), and the next page's cursor on stderr. Charge is a charge key's status; id is
the key's own charge, refund or capture (piped and in --json only).

Options:
  --point POINT            only keys at started, reserved, completed, failed or expired
  --merchant ID            only this merchant's keys
  --operation NAME         only keys of this operation (default: every operation)
  --older-than-ms MS       only keys created at least MS milliseconds ago
  --limit N                keys per page, 1 to 1000 (default: 50)
  --cursor CURSOR          the page after the one that printed this cursor
  --all                    every page (progress on a terminal)
${COMMON}
`,
  resolve: `Usage: chargeonce resolve --merchant ID --key KEY --outcome OUTCOME --actor WHO --reason WHY [options]

Completes a key parked in failed with what you found at the provider, as the engine would have:
the outcome is stored (a retry replays it) and your complete or cancel hook runs with it. Refused
(exit 1, nothing written) for a key that is not parked, a completed one above all. Audited.

A refund or capture key (--operation refund or --operation capture) takes a refund's or
capture's outcomes and ids; its reservation on the charge is settled as the engine settles it
(refunded or captured when succeeded, released otherwise).

Options:
${TARGET}
  --outcome OUTCOME        a charge: succeeded, declined or cancelled (the provider made no
                           charge); a refund or capture: succeeded, failed or cancelled
  --provider-charge-id ID  the provider's charge: required for succeeded and declined
  --decline-code CODE      the provider's decline code (declined only)
  --provider-refund-id ID  a refund: the provider's refund, required for succeeded and failed
  --provider-capture-id ID
                           a capture: the provider's capture, required for succeeded and failed
  --failure-code CODE      a refund or capture: the provider's failure code (failed only)
  --actor WHO              who resolves it (required; stored)
  --reason WHY             why: what the provider said, a ticket (required; stored)
  --provider MODULE        the module sweep loads: its \`hooks\` export runs (complete, cancel;
                           hooks.refund or hooks.capture for those keys)
  --no-hooks               resolve without running any hook (instead of --provider)
${COMMON}
`,
  requeue: `Usage: chargeonce requeue --merchant ID --key KEY --actor WHO --reason WHY [options]

Puts a key parked in failed back for the sweeper (its attempts counted afresh). Exits 1 when no
failed key matched. Audited: who requeued it and why are stored with it.

Options:
${TARGET}
  --actor WHO              who requeues it (required; stored)
  --reason WHY             why: what was fixed, a ticket (required; stored)
${COMMON}
`,
} as const;
