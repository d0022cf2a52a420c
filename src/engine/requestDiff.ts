/**
 * The names of the fields in which two canonical requests differ: top-level fields by name,
 * `metadata` key by key (`metadata.order`). Values never appear, so a caller who reused a key
 * learns which fields to check, not what the other request held.
 */
export function differingFields(
  storedCanonical: string,
  incoming: Record<string, unknown>,
): string[] {
  let stored: unknown;
  try {
    stored = JSON.parse(storedCanonical);
  } catch {
    return [];
  }
  if (!isRecord(stored)) return [];
  const fields: string[] = [];
  for (const name of unionOfKeys(stored, incoming)) {
    const before = stored[name];
    const after = incoming[name];
    if (name === 'metadata' && isRecord(before) && isRecord(after)) {
      for (const key of unionOfKeys(before, after)) {
        if (before[key] !== after[key]) fields.push(`metadata.${key}`);
      }
    } else if (JSON.stringify(before) !== JSON.stringify(after)) {
      fields.push(name);
    }
  }
  return fields;
}

function unionOfKeys(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
