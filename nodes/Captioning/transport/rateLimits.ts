// The service's rate limits as this process keeps them: for each API key and Base URL, one limit for
// its reads and one for its writes, shared by every workflow and run that sends with the key.
// - A 429 holds its limit for every request until its Retry-After has passed (1 s without one); a
//   longer one that comes during a hold extends it. A Retry-After over `maxHoldMs` is not held: its
//   request fails, naming the wait (retries.ts).
// - At most `inFlight` requests of a limit are under way at once, in the order they came: it bounds
//   how many go into the next 429 when a hold ends (the bench's sharedKey429Share, ≤ 0.3).
// - A request that waits for its turn past its deadline, or is no longer wanted, leaves unsent.
// A run's Concurrency: concurrency.ts. Storage hosts have no limit.
import { Places } from './concurrency';

export const rateLimitSettings = {
	/** The longest a Retry-After holds a key's limit; a longer one is refused, not held. */
	maxHoldMs: 60000,
	/** A 503 without Retry-After: the interface says retry after 5 s. */
	unavailableMs: 5000,
	/** Requests of one limit under way at once per key. */
	inFlight: 6,
};

export class RateLimit extends Places {
	/** Whether it paces the key's reads or its writes (a write's 429s wait longer: retries.ts). */
	constructor(readonly kind: 'read' | 'write') {
		super(rateLimitSettings.inFlight);
	}

	/** What the service answered: a 429 holds the limit for its Retry-After, unless that is over the cap. */
	observe(status: number, retryAfterMs = 1000): void {
		if (status === 429 && retryAfterMs <= rateLimitSettings.maxHoldMs) this.hold(retryAfterMs);
	}
}

/** The rate limits of one API key at one Base URL: its reads and its writes. */
export class KeyRateLimits {
	readonly read = new RateLimit('read');
	readonly write = new RateLimit('write');
}

/** The rate limits of each key and Base URL in this process, by a digest of both (never the key itself). */
const byKey = new Map<string, KeyRateLimits>();

export function rateLimitsFor(keyDigest: string): KeyRateLimits {
	let limits = byKey.get(keyDigest);
	if (!limits) byKey.set(keyDigest, (limits = new KeyRateLimits()));
	return limits;
}
