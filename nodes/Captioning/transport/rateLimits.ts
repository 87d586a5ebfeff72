// The service's rate limits, as this package keeps them. The rule:
// - Shared: every request sent with one API key to one Base URL in this n8n process (any
//   workflow, any run) waits for its turn here, reads under one RateLimit, writes under another.
// - Held: a 429 holds its limit for every request until its Retry-After has passed; so does the
//   third 503 of the limit in a row, no success between (without Retry-After: the interface's 5 s).
//   A later answer asking longer extends a hold; a 503s' hold ends when a request succeeds.
// - Capped by the key: no hold is longer than `maxHoldMs`. A longer Retry-After is not held: what
//   waits fails at once, as does what comes before it has passed, naming the wait.
// - Learned: after a 429, requests go a tenth above the rate let through since the last resume (four
//   fifths of the current rate at a later 429), a little faster each second after (the bench's
//   sharedKey429Share: 3% with it, 24% without; its batch figures the same).
// - A 503 also halves how many requests may be under way at once; each success grows it back.
// - Waiting requests go by priority, then in the order they came, and move up as they wait; each
//   fails unsent at its deadline. A request is sent at most its policy's attempts (retries.ts).
// A run's Concurrency: concurrency.ts. Unused rate limits are forgotten; storage hosts have none.
import type { Waiting } from './queue';
import { joinLine, ServiceAskedToWait, takeFirst, WaitedTooLong } from './queue';
import { sleep } from './sleep';

export { ServiceAskedToWait, WaitedTooLong };

/**
 * Which waiting request goes first: `high` when a caller waits for the answer (a trigger's
 * verification with its Secret Token, an On Webhook resume), `normal` for a run's own work (orders,
 * waits, polls, unverified deliveries), `low` for many of one kind that can wait (caption downloads).
 */
export type Priority = 'high' | 'normal' | 'low';

const RANK: Record<Priority, number> = { high: 0, normal: 1, low: 2 };

export const rateLimitSettings = {
	/** The longest the service's Retry-After holds a key's limit; a longer one is refused, not held. */
	maxHoldMs: 60000,
	/** A 503 without Retry-After: the interface says retry after 5 s. */
	unavailableMs: 5000,
	/** Requests of one limit under way at once per key (fewer after a 503): bounds what one 429 costs. */
	inFlight: 6,
	/** A waiting request moves up one priority for each this long it has waited. */
	ageMs: 10000,
	/** Rate limits with nothing waiting, under way or held for this long are forgotten. */
	idleMs: 10 * 60000,
	/** Nothing started for this long: the service has refilled what it allows. */
	quietMs: 1000,
	/** The fewest requests a window must have let through before its rate is learned from. */
	minSample: 3,
};

export class RateLimit {
	/** Whether it paces the key's reads or its writes (a write's 429s wait longer: retries.ts). */
	constructor(readonly kind: 'read' | 'write') {}

	/** Milliseconds between request starts; 0 until the service first says 429. */
	private intervalMs = 0;
	private next = 0;
	private holdUntil = 0;
	private windowStart = 0;
	private sentInWindow = 0;
	/** Requests that may go at once: what the service refilled during a hold or a quiet moment. */
	private burst = 0;
	/** Since when nothing has been waiting or under way (undefined: something is). */
	private idleSince: number | undefined = 0;
	/** The next request starts after a quiet moment: nothing waited or went for a while. */
	private quietStart = false;
	private lastPassed = 0;
	/** Requests a second added to the rate per second of requests let through: 5% of the first rate learned. */
	private increase = 0;
	private inFlight = 0;
	/** How many may be under way now: rateLimitSettings.inFlight, less after a 503. */
	private allowed = rateLimitSettings.inFlight;
	private readonly queue: Waiting[] = [];
	private draining = false;
	private wake?: () => void;

	/** The service asked for more than a request may wait, until `refusal.until`. */
	private refusal?: ServiceAskedToWait;
	private lastUsed = Date.now();
	/** The hold in place began with a 503 and no 429 came since: a success ends it. */
	private heldForUnavailable = false;
	/** 503s since the last success: one is its request's (which waits its Retry-After), three the service's. */
	private unavailableInARow = 0;

	/**
	 * Waits for the request's turn, at most `maxWaitMs`; resolves with what to call once the answer
	 * has come.
	 */
	async turn(
		priority: Priority,
		seq: number,
		maxWaitMs: number,
		signal?: AbortSignal,
	): Promise<() => void> {
		if (signal?.aborted) throw new Error('Not sent: no longer wanted');
		this.lastUsed = Date.now();
		if (Date.now() < (this.refusal?.until ?? 0)) throw this.refusal;
		const granted = joinLine(this.queue, RANK[priority], seq, maxWaitMs, signal);
		if (this.idleSince !== undefined) {
			this.quietStart = Date.now() - this.idleSince >= rateLimitSettings.quietMs;
			this.idleSince = undefined;
		}
		if (!this.draining) void this.drain();
		return await granted;
	}

	/** Whether nothing waits, is under way or is held, and nothing was asked for a while. */
	forgettable(now: number): boolean {
		return (
			this.queue.length === 0 &&
			this.inFlight === 0 &&
			now >= Math.max(this.holdUntil, this.refusal?.until ?? 0) &&
			now - this.lastUsed >= rateLimitSettings.idleMs
		);
	}

	private async drain(): Promise<void> {
		this.draining = true;
		try {
			while (this.queue.length > 0) {
				if (this.inFlight >= Math.max(1, Math.floor(this.allowed))) {
					await new Promise<void>((resolve) => (this.wake = resolve));
					continue;
				}
				const now = Date.now();
				const at = Math.max(this.next, this.holdUntil);
				if (at > now) {
					// Until then, or until a success ends a 503's hold.
					const woken = new AbortController();
					this.wake = () => woken.abort();
					await sleep(at - now, woken.signal).catch(() => {});
					continue;
				}
				const waiting = takeFirst(this.queue, rateLimitSettings.ageMs);
				waiting.leave();
				this.start(now);
				let done = false;
				waiting.resolve(() => {
					if (done) return;
					done = true;
					this.inFlight -= 1;
					if (this.inFlight === 0 && this.queue.length === 0) this.idleSince = Date.now();
					this.wake?.();
					this.wake = undefined;
				});
			}
		} finally {
			this.draining = false;
		}
	}

	private start(now: number): void {
		if (this.quietStart) {
			// After a quiet moment the service has refilled a second of its rate: a new window starts.
			this.quietStart = false;
			this.windowStart = now;
			this.sentInWindow = 0;
			if (this.intervalMs > 0)
				this.burst = Math.max(this.burst, Math.floor(1000 / (this.intervalMs * 1.1)));
		}
		if (this.burst > 0) {
			this.burst -= 1;
			this.next = now;
		} else {
			this.next = now + this.intervalMs;
		}
		this.inFlight += 1;
	}

	/**
	 * What the service answered: the rate limit learns from it and holds for its Retry-After.
	 * Returns whether the request may go again in its turn (false: the service asked for longer than
	 * the key holds).
	 */
	observe(status: number, retryAfterMs: number | undefined): boolean {
		if (status >= 200 && status < 300) this.passed();
		else if (status === 429) this.limited(retryAfterMs ?? 1000);
		else if (status === 503) this.unavailable(retryAfterMs ?? rateLimitSettings.unavailableMs);
		return Date.now() >= (this.refusal?.until ?? 0);
	}

	private passed(): void {
		this.sentInWindow += 1;
		// A little faster each second requests pass (additive: processes sharing a limit settle on shares).
		const now = Date.now();
		if (this.intervalMs > 0)
			this.intervalMs =
				1000 /
				(1000 / this.intervalMs + (this.increase * Math.min(1000, now - this.lastPassed)) / 1000);
		this.lastPassed = now;
		this.allowed = Math.min(rateLimitSettings.inFlight, this.allowed + 1 / this.allowed);
		if (this.heldForUnavailable && now < this.holdUntil) {
			this.holdUntil = now;
			this.next = now + this.intervalMs;
			this.wake?.();
		}
		this.heldForUnavailable = false;
		this.unavailableInARow = 0;
	}

	/** A Retry-After (429 or 503): held for every request, extended by a longer one; refused past the cap. */
	private hold(retryAfterMs: number): 'held' | 'extended' | 'refused' {
		const now = Date.now();
		if (retryAfterMs > rateLimitSettings.maxHoldMs) {
			// Longer than a request may wait: not held. What waits now fails, and so does what comes
			// before then, each with the service's wait named, rather than queue for that long.
			const until = Math.max(this.refusal?.until ?? 0, now + retryAfterMs);
			this.refusal = new ServiceAskedToWait(until, rateLimitSettings.maxHoldMs);
			for (const waiting of this.queue.splice(0)) {
				waiting.leave();
				waiting.reject(this.refusal);
			}
			return 'refused';
		}
		const during = now < this.holdUntil;
		this.holdUntil = Math.max(this.holdUntil, now + retryAfterMs);
		this.next = Math.max(this.next, this.holdUntil);
		return during ? 'extended' : 'held';
	}

	private limited(retryAfterMs: number): void {
		const windowMs = Date.now() - this.windowStart + retryAfterMs;
		this.heldForUnavailable = false;
		// During a hold: requests that were under way when it began, whose 429s teach no new rate.
		if (this.hold(retryAfterMs) !== 'held') return;
		// The rate the service let through: the requests since it last resumed, over that time plus
		// this hold (a token bucket's refill rate). Then a tenth above it the first time, four fifths of
		// the current rate after (processes sharing the limit make room for each other). Too few
		// requests say nothing of the rate (another client may have used it up): then it only holds.
		if (this.sentInWindow < rateLimitSettings.minSample) return;
		const measured = (this.sentInWindow * 1000) / windowMs;
		const current = this.intervalMs > 0 ? 1000 / this.intervalMs : Infinity;
		if (this.increase === 0) this.increase = Math.max(0.5, 0.05 * measured);
		this.intervalMs = 1000 / Math.min(measured * 1.1, current * 0.8);
		this.burst = Math.floor((retryAfterMs / 1000) * measured);
		this.windowStart = this.holdUntil;
		this.sentInWindow = 0;
	}

	private unavailable(retryAfterMs: number): void {
		this.allowed = Math.max(1, this.allowed / 2);
		if (++this.unavailableInARow < 3) return;
		const held = Date.now() < this.holdUntil;
		if (this.hold(retryAfterMs) !== 'refused' && !held) this.heldForUnavailable = true;
	}
}

/** The rate limits of one API key at one Base URL: its reads and its writes. */
export class KeyRateLimits {
	readonly read = new RateLimit('read');
	readonly write = new RateLimit('write');

	forgettable(now: number): boolean {
		return this.read.forgettable(now) && this.write.forgettable(now);
	}
}

/** The rate limits of each key and Base URL in this process, by a digest of both (never the key itself). */
const byIdentity = new Map<string, KeyRateLimits>();

export function rateLimitsFor(identity: string): KeyRateLimits {
	const now = Date.now();
	for (const [other, limits] of byIdentity)
		if (other !== identity && limits.forgettable(now)) byIdentity.delete(other);
	let limits = byIdentity.get(identity);
	if (!limits) byIdentity.set(identity, (limits = new KeyRateLimits()));
	return limits;
}

/** How many this process keeps (what a test of forgetting counts). */
export function rateLimitsKept(): number {
	return byIdentity.size;
}

/** Forgets what every limits learned (tests that change the service's limits between them). */
export function forgetRateLimits(): void {
	byIdentity.clear();
}
