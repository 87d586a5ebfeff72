// How many metadata keys a workspace takes, as far as its refusals have shown this n8n process.
// The interface offers no read of the limit (20 by default, configurable per workspace, lower
// included): a tagged order the workspace refuses (400 on metadata) goes again untagged, and once
// that untagged order is taken, the count it refused is kept for the key and Base URL. Orders with
// that many metadata keys (the tag included) then go untagged at once, without the 400. A count is
// kept for an hour, so that a raised limit is found again.

/** How long a refused count holds. */
const HOLD_MS = 60 * 60000;
/** Credentials kept at most (the oldest go first). */
const MAX_KEPT = 1000;

/** The fewest metadata keys each key and Base URL (by the digest service.ts makes) was refused for. */
const refused = new Map<string, { keys: number; until: number }>();

/** Whether an order with this many metadata keys, the tag included, may carry the tag. */
export function tagFits(keyDigest: string, keys: number): boolean {
	const known = refused.get(keyDigest);
	if (!known || known.until <= Date.now()) return true;
	return keys < known.keys;
}

/** The workspace refused this many metadata keys, and took the order without the tag. */
export function tagRefused(keyDigest: string, keys: number): void {
	const known = refused.get(keyDigest);
	const fewest = known && known.until > Date.now() ? Math.min(known.keys, keys) : keys;
	refused.delete(keyDigest);
	refused.set(keyDigest, { keys: fewest, until: Date.now() + HOLD_MS });
	if (refused.size > MAX_KEPT) refused.delete(refused.keys().next().value!);
}
