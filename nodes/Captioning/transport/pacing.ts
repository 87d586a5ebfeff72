// How the requests of this package share the service's limits.
//
// The service limits reads per API key and writes per workspace, whichever run sends them: a
// trigger's burst, a batch's orders, a poll's caption downloads. So every request that carries a
// key takes its turn from one pace per key and Base URL (`paceFor`), shared by every run of every
// node of this package in the n8n process:
// - a 429 holds back the lane (reads, writes) for its Retry-After, for every run; a Retry-After
//   longer than a request may wait is not held: the requests waiting then, and those that come
//   before it has passed, fail at once with the service's wait named;
// - after a hold, what it let the service refill goes at once, then the lane keeps a tenth above
//   the rate the service let through, speeding up slowly until it is told again;
// - a 503 halves how many requests of the lane may be under way, which grows back with each success;
// - waiting requests go by urgency, then in the order they came, and move up as they wait (so bulk
//   work is not starved); each waits at most until its deadline, then fails without being sent.
// A node run also has places of its own (runSlots.ts). A pace nobody used for a while is forgotten.
// Storage hosts (presigned uploads, captions on another host) are not limited by the service: only
// a run's places apply to them.
import { HeldTooLong, takeFirst, TurnAborted, TurnTimedOut } from './queue';
import { pause } from './sleep';

export { HeldTooLong, takeFirst, TurnAborted, TurnTimedOut };

/** The service limits writes per workspace and reads per key; storage hosts are not limited. */
export type Lane = 'write' | 'read' | 'storage';

/**
 * Which waiting request goes first: `answer` is waited for by a caller (a trigger's verification
 * read, an On Webhook resume), `work` is a run's own (orders, waits, polls), `bulk` is many of one
 * kind that can wait (caption downloads).
 */
export type Urgency = 'answer' | 'work' | 'bulk';

const RANK: Record<Urgency, number> = { answer: 0, work: 1, bulk: 2 };

export const paceLimits = {
	/** Requests of a lane under way at once per key (fewer after a 503): bounds what one 429 costs. */
	inFlight: 6,
	/** A waiting request moves up one urgency for each this long it has waited. */
	ageMs: 10000,
	/** A pace with nothing waiting, under way or held for this long is forgotten. */
	idleMs: 10 * 60000,
	/** A lane with nothing started for this long is quiet: the service has refilled what it allows. */
	quietMs: 1000,
	/** The fewest requests a window must have let through before its rate is learned from. */
	minSample: 3,
};

interface Ticket {
	rank: number;
	seq: number;
	/** When it joined the queue (it moves up as it waits). */
	since: number;
	resolve: (done: () => void) => void;
	reject: (error: Error) => void;
	leave: () => void;
}

let tickets = 0;

/** A place in the order of requests: keep it across the attempts of one request. */
export function ticketNumber(): number {
	return ++tickets;
}

class LanePace {
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
	/** The next request starts a quiet lane: nothing waited or went for a while. */
	private quietStart = false;
	private lastPassed = 0;
	/** Requests a second added to the rate per second of requests let through: 5% of the first rate learned. */
	private increase = 0;
	private inFlight = 0;
	/** How many may be under way now: paceLimits.inFlight, less after a 503. */
	private allowed = paceLimits.inFlight;
	private readonly queue: Ticket[] = [];
	private draining = false;
	private wake?: () => void;

	/** Until when the service asked for more than a request may wait (0: it did not). */
	private refusedUntil = 0;
	private refusal?: HeldTooLong;
	private lastUsed = Date.now();

	/**
	 * Waits for this lane's turn, at most `maxWaitMs`; resolves with what to call once the answer
	 * has come.
	 */
	async turn(
		urgency: Urgency,
		seq: number,
		maxWaitMs: number,
		signal?: AbortSignal,
	): Promise<() => void> {
		if (signal?.aborted) throw new TurnAborted();
		this.lastUsed = Date.now();
		if (this.refusal && Date.now() < this.refusedUntil) throw this.refusal;
		return await new Promise<() => void>((resolve, reject) => {
			const since = Date.now();
			const ticket: Ticket = { rank: RANK[urgency], seq, since, resolve, reject, leave: () => {} };
			const drop = (error: Error) => {
				const at = this.queue.indexOf(ticket);
				if (at < 0) return;
				this.queue.splice(at, 1);
				ticket.leave();
				reject(error);
			};
			const deadline = new AbortController();
			pause(maxWaitMs, deadline.signal).then(
				() => drop(new TurnTimedOut(Date.now() - since)),
				() => undefined, // it left the queue before its deadline
			);
			const onAbort = () => drop(new TurnAborted());
			signal?.addEventListener('abort', onAbort, { once: true });
			ticket.leave = () => {
				deadline.abort();
				signal?.removeEventListener('abort', onAbort);
			};
			if (this.idleSince !== undefined) {
				this.quietStart = Date.now() - this.idleSince >= paceLimits.quietMs;
				this.idleSince = undefined;
			}
			this.queue.push(ticket);
			if (!this.draining) void this.drain();
		});
	}

	/** Whether nothing waits, is under way or is held, and nothing was asked for a while. */
	forgettable(now: number): boolean {
		return (
			this.queue.length === 0 &&
			this.inFlight === 0 &&
			now >= Math.max(this.holdUntil, this.refusedUntil) &&
			now - this.lastUsed >= paceLimits.idleMs
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
					await pause(at - now);
					continue;
				}
				const ticket = takeFirst(this.queue, paceLimits.ageMs);
				ticket.leave();
				this.start(now);
				let done = false;
				ticket.resolve(() => {
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
			// Nothing waited or went for a while: the service has refilled (one second of its rate, as
			// it allows a burst of), and a rate learned from here on counts from a full start. (The end
			// of a hold is no such moment: requests waited through it.)
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

	passed(): void {
		this.sentInWindow += 1;
		// Faster by a little each second requests are let through (additive: two processes sharing a
		// limit then settle on shares of it, rather than the first taking it all), should the rate have
		// come out low or another client of the key have slowed down.
		const now = Date.now();
		if (this.intervalMs > 0)
			this.intervalMs =
				1000 /
				(1000 / this.intervalMs + (this.increase * Math.min(1000, now - this.lastPassed)) / 1000);
		this.lastPassed = now;
		this.allowed = Math.min(paceLimits.inFlight, this.allowed + 1 / this.allowed);
	}

	limited(retryAfterMs: number, capMs: number): void {
		const now = Date.now();
		if (retryAfterMs > capMs) {
			// Longer than a request may wait: not held. What waits now fails, and so does what comes
			// before then, each with the service's wait named, rather than queue for that long.
			this.refusedUntil = Math.max(this.refusedUntil, now + retryAfterMs);
			this.refusal = new HeldTooLong(this.refusedUntil, capMs);
			for (const ticket of this.queue.splice(0)) {
				ticket.leave();
				ticket.reject(this.refusal);
			}
			return;
		}
		if (now < this.holdUntil) return; // requests that were already under way when it first said so
		// What the service lets through: the requests it took since the lane last resumed, over that
		// time plus the hold it asks for now. For a token bucket refilled at L per second and holding
		// one second of burst this is L, whether the lane burst (the first time) or ran a little fast.
		// When the hold ends, what it refilled goes at once (a full bucket would waste its refill, and
		// a batch that ends soon after would leave it unused); then the lane goes a tenth above that
		// rate the first time, and at four fifths of its own rate after (so that processes sharing the
		// limit make room for each other), speeding up a little each second until told again. Too few
		// requests say nothing of the rate (another client of the key may have used it up): then the
		// lane only holds, and the window goes on.
		const ms = now - this.windowStart + retryAfterMs;
		this.holdUntil = now + retryAfterMs;
		this.next = Math.max(this.next, this.holdUntil);
		if (this.sentInWindow < paceLimits.minSample) return;
		const measured = (this.sentInWindow * 1000) / ms;
		const current = this.intervalMs > 0 ? 1000 / this.intervalMs : Infinity;
		if (this.increase === 0) this.increase = Math.max(0.5, 0.05 * measured);
		this.intervalMs = 1000 / Math.min(measured * 1.1, current * 0.8);
		this.burst = Math.floor((retryAfterMs / 1000) * measured);
		this.windowStart = this.holdUntil;
		this.sentInWindow = 0;
	}

	unavailable(): void {
		this.allowed = Math.max(1, this.allowed / 2);
	}
}

/** The pace of one API key at one Base URL: reads and writes. */
export class KeyPace {
	private readonly lanes = { read: new LanePace(), write: new LanePace() };

	/** Waits for the lane's turn, at most `maxWaitMs`; resolves with what to call once the answer has come. */
	async turn(
		lane: 'read' | 'write',
		urgency: Urgency,
		seq: number,
		maxWaitMs: number,
		signal?: AbortSignal,
	): Promise<() => void> {
		return await this.lanes[lane].turn(urgency, seq, maxWaitMs, signal);
	}

	/** What the service answered: the lane learns from it. A Retry-After over `capMs` is not held. */
	observe(
		lane: 'read' | 'write',
		status: number,
		retryAfterMs: number | undefined,
		capMs: number,
	): void {
		if (status >= 200 && status < 300) this.lanes[lane].passed();
		else if (status === 429) this.lanes[lane].limited(retryAfterMs ?? 1000, capMs);
		else if (status === 503) this.lanes[lane].unavailable();
	}

	forgettable(now: number): boolean {
		return this.lanes.read.forgettable(now) && this.lanes.write.forgettable(now);
	}
}

/** One pace per key and Base URL in this process, by a digest of both (never the key itself). */
const paces = new Map<string, KeyPace>();

export function paceFor(identity: string): KeyPace {
	const now = Date.now();
	for (const [other, pace] of paces)
		if (other !== identity && pace.forgettable(now)) paces.delete(other);
	let pace = paces.get(identity);
	if (!pace) paces.set(identity, (pace = new KeyPace()));
	return pace;
}

/** How many paces this process keeps (what a test of forgetting counts). */
export function pacesKept(): number {
	return paces.size;
}

/** Forgets what every pace learned (tests that change the service's limits between them). */
export function forgetPaces(): void {
	paces.clear();
}
