// One pacing for every request of a node run, so that a batch slows down together when the service
// says so, instead of each request hammering on its own:
// - at most `concurrency` requests are under way at once; a free place goes to the lowest item
//   (an item's next request before a later item's first, so items finish in order);
// - a 429 holds back every request of its lane (writes, reads) for its Retry-After; then what the
//   hold let the service refill goes at once, and the lane keeps a tenth above the rate the
//   service let through, speeding up slowly until it is told again;
// - a 503 halves how many requests may be under way, which grows back with each success (by one
//   in n at n places); the refused request waits its own 5 s without keeping a place.
import { pause } from './sleep';

/** The service limits writes per workspace and reads per key; storage hosts are not limited. */
export type Lane = 'write' | 'read' | 'storage';

/** A request that was not sent because the batch stopped (another item failed). */
export class BatchStopped extends Error {
	constructor() {
		super('Not sent: the batch stopped after another item failed');
	}
}

class LanePace {
	/** Milliseconds between request starts; 0 until the service first says 429. */
	private intervalMs = 0;
	private next = 0;
	private holdUntil = 0;
	private windowStart = Date.now();
	private sentInWindow = 0;
	/** Requests that may go at once when a hold ends: what the service refilled meanwhile. */
	private burst = 0;

	/** Waits for this lane's next turn. */
	async turn(signal?: AbortSignal): Promise<void> {
		const now = Date.now();
		const at = Math.max(now, this.next, this.holdUntil);
		if (this.burst > 0) {
			this.burst -= 1;
			this.next = at;
		} else {
			this.next = at + this.intervalMs;
		}
		if (at > now) await pause(at - now, signal);
	}

	passed(): void {
		this.sentInWindow += 1;
		// About 5% faster per second at 50 requests/s, should the estimate have come out low.
		this.intervalMs *= 0.999;
	}

	limited(retryAfterMs: number): void {
		const now = Date.now();
		if (now < this.holdUntil) return; // requests that were already under way when it first said so
		// What the service lets through: the requests it took since the lane last resumed, over that
		// time plus the hold it asks for now. For a token bucket refilled at L per second and holding
		// one second of burst this is L, whether the lane burst (the first time) or ran a little fast.
		// When the hold ends, what it refilled goes at once (a full bucket would waste its refill, and
		// a batch that ends soon after would leave it unused); then the lane keeps a tenth above that
		// rate (an estimate that came out low would waste refill too), so the service says 429 again
		// only every ten seconds or so.
		const ms = now - this.windowStart + retryAfterMs;
		if (this.sentInWindow > 0) {
			this.intervalMs = ms / this.sentInWindow;
			this.burst = Math.floor(retryAfterMs / this.intervalMs);
			this.intervalMs /= 1.1;
		}
		this.holdUntil = Math.max(this.holdUntil, now + retryAfterMs);
		this.next = Math.max(this.next, this.holdUntil);
		this.windowStart = this.holdUntil;
		this.sentInWindow = 0;
	}
}

interface Waiter {
	priority: number;
	seq: number;
	resolve: () => void;
	reject: (error: Error) => void;
}

export class Pacer {
	private active = 0;
	/** How many may be under way now: the concurrency, less after a 503. */
	private allowed: number;
	private readonly waiters: Waiter[] = [];
	private seq = 0;
	private stopped = false;
	private readonly lanes: Record<Lane, LanePace> = { write: new LanePace(), read: new LanePace(), storage: new LanePace() };

	constructor(readonly concurrency: number) {
		this.allowed = concurrency;
	}

	/** Waits for a place (lowest priority first) and the lane's turn; resolves with the release. */
	async acquire(priority: number, lane: Lane, signal?: AbortSignal): Promise<() => void> {
		if (this.stopped) throw new BatchStopped();
		if (signal?.aborted) throw new Error('The execution was cancelled');
		if (this.active < Math.floor(this.allowed) && this.waiters.length === 0) {
			this.active += 1;
		} else {
			await new Promise<void>((resolve, reject) => {
				this.waiters.push({ priority, seq: this.seq++, resolve, reject });
			});
		}
		let released = false;
		const release = () => {
			if (released) return;
			released = true;
			this.active -= 1;
			this.grant();
		};
		let turned = false;
		try {
			await this.lanes[lane].turn(signal);
			if (this.stopped) throw new BatchStopped();
			turned = true;
		} finally {
			if (!turned) release();
		}
		return release;
	}

	/** What the service answered: pacing learns from it. */
	observe(lane: Lane, status: number | undefined, retryAfterMs: number | undefined): void {
		if (status !== undefined && status >= 200 && status < 300) {
			this.lanes[lane].passed();
			this.allowed = Math.min(this.concurrency, this.allowed + 1 / this.allowed);
		} else if (status === 429) {
			this.lanes[lane].limited(retryAfterMs ?? 1000);
		} else if (status === 503) {
			this.allowed = Math.max(1, this.allowed / 2);
		}
	}

	/** Refuses every request not yet sent; requests under way finish. */
	stop(): void {
		this.stopped = true;
		for (const waiter of this.waiters.splice(0)) waiter.reject(new BatchStopped());
	}

	private grant(): void {
		while (this.waiters.length > 0 && this.active < Math.max(1, Math.floor(this.allowed))) {
			let best = 0;
			for (let i = 1; i < this.waiters.length; i++) {
				const w = this.waiters[i];
				const b = this.waiters[best];
				if (w.priority < b.priority || (w.priority === b.priority && w.seq < b.seq)) best = i;
			}
			const [waiter] = this.waiters.splice(best, 1);
			this.active += 1;
			waiter.resolve();
		}
	}
}

const pacers = new WeakMap<object, Pacer>();

/** Makes every request sent through `ctx` (one node run) share this pacing. */
export function usePacer(ctx: object, pacer: Pacer): void {
	pacers.set(ctx, pacer);
}

export function pacerOf(ctx: object): Pacer | undefined {
	return pacers.get(ctx);
}
