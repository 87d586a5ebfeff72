// Limits on requests under way: at most so many at once, the rest wait in line.
// - A node run's Concurrency is one: ranked by item, all refused once the run has stopped.
// - The service's rate limits are others: for each API key and Base URL, one for its reads and one
//   for its writes, shared by every workflow and run in this process that sends with the key. A 429
//   holds its limit for every request until its Retry-After has passed (1 s without one; a longer
//   one during a hold extends it); a Retry-After over `maxHoldMs` is not held, its request fails
//   naming the wait (retries.ts). At most `inFlight` of a limit are under way at once, in the order
//   they came: it bounds how many go into the next 429 when a hold ends. Storage hosts have no limit.
// A request that waits for its place past its deadline, or is no longer wanted, leaves unsent.
import type { IExecuteFunctions } from 'n8n-workflow';

import { sleep } from './sleep';

/** Concurrency's default: a run's requests under way at once. */
export const DEFAULT_CONCURRENCY = 4;

/** A request that was not sent because the batch stopped (another item failed). */
export class RunStopped extends Error {
	constructor() {
		super('Not sent: the batch stopped after another item failed');
	}
}

/** A request that waited for its place until its deadline, and was not sent. */
export class WaitedTooLong extends Error {
	constructor(waitedMs: number) {
		super(
			`Not sent: it waited ${Math.round(waitedMs / 1000)} s for its turn under the service's rate limit for this API key, which every workflow using the key shares`,
		);
	}
}

interface Queued {
	/**
	 * Its rank (a run's: the item index): the lowest first, in order of arrival among equals, so an
	 * item's next request (a retry after a 429, its POST after its upload) goes before later items'
	 * first ones, and no item waits out its budget behind the rest of the batch.
	 */
	rank: number;
	go: () => void;
	leave: (error: Error) => void;
}

export class Limit {
	private active = 0;
	private readonly line: Queued[] = [];
	/** No place is given before then (a 429's hold: RateLimit). */
	protected heldUntil = 0;
	private holding = false;
	private readonly stopping = new AbortController();
	/** Fires when the places stop: every request still waiting leaves the line. */
	readonly stopSignal = this.stopping.signal;

	/**
	 * `cancel`: the execution's cancel signal, which stops them as a failed batch does. `grantLater`:
	 * a place given back goes to the next a turn of the event loop later, so that a request that
	 * failed stops the batch first.
	 */
	constructor(
		readonly size: number,
		cancel?: AbortSignal,
		private readonly grantLater = false,
	) {
		cancel?.addEventListener('abort', () => this.stop(), { once: true });
	}

	/**
	 * Waits for a place, at most `maxWaitMs` and while `signal` has not fired; resolves with what
	 * gives it back.
	 */
	async take(rank = 0, maxWaitMs = Infinity, signal?: AbortSignal): Promise<() => void> {
		if (this.stopSignal.aborted) throw new RunStopped();
		if (signal?.aborted) throw new Error('Not sent: no longer wanted');
		await new Promise<void>((go, reject) => {
			const waiting = new AbortController();
			const onAbort = () => queued.leave(new Error('Not sent: no longer wanted'));
			const queued: Queued = {
				rank,
				go: () => (waiting.abort(), go()),
				leave: (error) => {
					const at = this.line.indexOf(queued);
					if (at < 0) return;
					this.line.splice(at, 1);
					waiting.abort();
					reject(error);
				},
			};
			// Once it goes or leaves, `waiting` ends both its deadline and its listener.
			signal?.addEventListener('abort', onAbort, { once: true, signal: waiting.signal });
			if (maxWaitMs < Infinity)
				sleep(maxWaitMs, waiting.signal).then(
					() => queued.leave(new WaitedTooLong(maxWaitMs)),
					() => undefined, // it left the line before its deadline
				);
			this.line.push(queued);
			this.grant();
		});
		// Each taker gives its place back once.
		return () => {
			this.active -= 1;
			if (this.grantLater) void sleep(0).then(() => this.grant());
			else this.grant();
		};
	}

	/** Nothing under way, nothing waiting, no hold. */
	idle(): boolean {
		return this.active === 0 && this.line.length === 0 && this.heldUntil <= Date.now();
	}

	/** Refuses every request not yet under way; those under way finish. */
	stop(): void {
		this.stopping.abort();
		for (const queued of [...this.line]) queued.leave(new RunStopped());
	}

	private grant(): void {
		const holdMs = this.heldUntil - Date.now();
		if (holdMs > 0) {
			if (!this.holding) {
				this.holding = true;
				void sleep(holdMs).then(() => ((this.holding = false), this.grant()));
			}
			return;
		}
		while (this.line.length > 0 && this.active < this.size) {
			const first = this.line.reduce((best, w, i) => (w.rank < this.line[best].rank ? i : best), 0);
			this.active += 1;
			this.line.splice(first, 1)[0].go();
		}
	}
}

/** A node run's Concurrency: places ranked by item, none once the run stopped (or was cancelled). */
export const runLimit = (ctx: IExecuteFunctions, size: number) =>
	new Limit(size, ctx.getExecutionCancelSignal(), true);

/** The Concurrency every request sent through a `ctx` (one node run) shares. */
export const runConcurrency = new WeakMap<object, Limit>();

export const rateLimitSettings = {
	/** The longest a Retry-After holds a key's limit; a longer one is refused, not held. */
	maxHoldMs: 60000,
	/** A 503 without Retry-After: the interface says retry after 5 s. */
	unavailableMs: 5000,
	/**
	 * Requests of one limit under way at once per key: what goes into the next 429 when a hold ends
	 * (at 100 ms a request, a limit is paced at 40 requests/s at most).
	 */
	inFlight: 4,
} as const;

export class RateLimit extends Limit {
	/** Whether it paces the key's reads or its writes (a write's 429s wait longer: retries.ts). */
	constructor(readonly kind: 'read' | 'write') {
		super(rateLimitSettings.inFlight);
	}

	/**
	 * What the service answered: a 429 holds the limit for its Retry-After (a longer hold stands),
	 * unless that is over the cap.
	 */
	observe(status: number, retryAfterMs = 1000): void {
		if (status === 429 && retryAfterMs <= rateLimitSettings.maxHoldMs)
			this.heldUntil = Math.max(this.heldUntil, Date.now() + retryAfterMs);
	}
}

/** The rate limits of one API key at one Base URL: its reads and its writes. */
export class KeyRateLimits {
	readonly read = new RateLimit('read');
	readonly write = new RateLimit('write');
}

/**
 * The rate limits of each key and Base URL in this process, by a digest of both (never the key
 * itself): what lets every workflow on one key keep its pace. A key's are forgotten once idle.
 */
const byKey = new Map<string, KeyRateLimits>();

export function rateLimitsFor(keyDigest: string): KeyRateLimits {
	for (const [digest, { read, write }] of byKey)
		if (digest !== keyDigest && read.idle() && write.idle()) byKey.delete(digest);
	let limits = byKey.get(keyDigest);
	if (!limits) byKey.set(keyDigest, (limits = new KeyRateLimits()));
	return limits;
}
