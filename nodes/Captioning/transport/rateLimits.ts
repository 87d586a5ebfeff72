// The service's rate limits as this process keeps them: for each API key and Base URL, one limit for
// its reads and one for its writes, shared by every workflow and run that sends with the key.
// - A 429 holds its limit for every request until its Retry-After has passed (1 s without one); a
//   longer one that comes during a hold extends it. A Retry-After over `maxHoldMs` is not held: its
//   request fails, naming the wait (retries.ts).
// - At most `inFlight` requests of a limit are under way at once, in the order they came: it bounds
//   how many go into the next 429 when a hold ends (the bench's sharedKey429Share, ≤ 0.3).
// - A request that waits for its turn past its deadline, or is no longer wanted, leaves unsent.
// A run's Concurrency: concurrency.ts. Storage hosts have no limit.
import { sleep } from './sleep';

export const rateLimitSettings = {
	/** The longest a Retry-After holds a key's limit; a longer one is refused, not held. */
	maxHoldMs: 60000,
	/** A 503 without Retry-After: the interface says retry after 5 s. */
	unavailableMs: 5000,
	/** Requests of one limit under way at once per key. */
	inFlight: 6,
};

/** A request that waited for its turn until its deadline, and was not sent. */
export class WaitedTooLong extends Error {
	constructor(waitedMs: number) {
		super(
			`Not sent: it waited ${Math.round(waitedMs / 1000)} s for its turn under the service's rate limit for this API key, which every workflow using the key shares`,
		);
	}
}

interface Waiting {
	go: (done: () => void) => void;
	leave: () => void;
}

export class RateLimit {
	/** Whether it paces the key's reads or its writes (a write's 429s wait longer: retries.ts). */
	constructor(readonly kind: 'read' | 'write') {}

	private holdUntil = 0;
	private inFlight = 0;
	private readonly line: Waiting[] = [];
	private holding = false;

	/**
	 * Waits for the request's turn, at most `maxWaitMs`; resolves with what to call once the answer
	 * has come.
	 */
	async turn(maxWaitMs: number, signal?: AbortSignal): Promise<() => void> {
		if (signal?.aborted) throw new Error('Not sent: no longer wanted');
		return await new Promise<() => void>((go, reject) => {
			const since = Date.now();
			const deadline = new AbortController();
			const drop = (error: Error) => {
				const at = this.line.indexOf(waiting);
				if (at < 0) return;
				this.line.splice(at, 1);
				waiting.leave();
				reject(error);
			};
			const onAbort = () => drop(new Error('Not sent: no longer wanted'));
			const waiting: Waiting = {
				go,
				leave: () => {
					deadline.abort();
					signal?.removeEventListener('abort', onAbort);
				},
			};
			signal?.addEventListener('abort', onAbort, { once: true });
			sleep(maxWaitMs, deadline.signal).then(
				() => drop(new WaitedTooLong(Date.now() - since)),
				() => undefined, // it left the line before its deadline
			);
			this.line.push(waiting);
			this.next();
		});
	}

	/** Lets the first in line go while no hold is in place and fewer than `inFlight` are under way. */
	private next(): void {
		const holdMs = this.holdUntil - Date.now();
		if (holdMs > 0) {
			if (!this.holding) {
				this.holding = true;
				void sleep(holdMs).then(() => {
					this.holding = false;
					this.next();
				});
			}
			return;
		}
		while (this.line.length > 0 && this.inFlight < rateLimitSettings.inFlight) {
			const waiting = this.line.shift()!;
			waiting.leave();
			this.inFlight += 1;
			let done = false;
			waiting.go(() => {
				if (done) return;
				done = true;
				this.inFlight -= 1;
				this.next();
			});
		}
	}

	/** What the service answered: a 429 holds the limit for its Retry-After, unless that is over the cap. */
	observe(status: number, retryAfterMs: number | undefined): void {
		const holdMs = retryAfterMs ?? 1000;
		if (status !== 429 || holdMs > rateLimitSettings.maxHoldMs) return;
		this.holdUntil = Math.max(this.holdUntil, Date.now() + holdMs);
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
