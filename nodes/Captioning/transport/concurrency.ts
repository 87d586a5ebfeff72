// A node run's Concurrency (Batching → Concurrency): at most that many of its requests under way,
// the lowest item first, all refused once the run has stopped. Every request of the run also takes
// its turn under the key's rate limits (rateLimits.ts).
import { sleep } from './sleep';

/** Batching → Concurrency's default: a run's requests under way at once. */
export const DEFAULT_CONCURRENCY = 4;

/** A request that was not sent because the batch stopped (another item failed). */
export class BatchStopped extends Error {
	constructor() {
		super('Not sent: the batch stopped after another item failed');
	}
}

interface Waiter {
	/**
	 * Its position among the run's requests (the item index): the lowest first, so an item's next
	 * request (a retry after a 429, its POST after its upload) goes before later items' first ones,
	 * and no item waits out its budget behind the rest of the batch.
	 */
	rank: number;
	resolve: () => void;
	reject: (error: Error) => void;
}

/** A node run's places: Batching → Concurrency, the lowest item first, none once the run stopped. */
export class RunConcurrency {
	private active = 0;
	private readonly waiters: Waiter[] = [];
	private readonly stopping = new AbortController();

	/** `cancel`: the execution's cancel signal; a cancelled run stops as a failed batch does. */
	constructor(
		readonly concurrency: number,
		cancel?: AbortSignal,
	) {
		cancel?.addEventListener('abort', () => this.stop(), { once: true });
	}

	/** Fires when the run stops: its requests still waiting for the service's pace leave the queue. */
	readonly stopSignal = this.stopping.signal;

	/** Waits for its turn within Concurrency (the lowest position first); resolves with the release. */
	async acquire(position: number): Promise<() => void> {
		if (this.stopSignal.aborted) throw new BatchStopped();
		if (this.active < this.concurrency && this.waiters.length === 0) {
			this.active += 1;
		} else {
			await new Promise<void>((resolve, reject) =>
				this.waiters.push({ rank: position, resolve, reject }),
			);
		}
		let released = false;
		return () => {
			if (released) return;
			released = true;
			this.active -= 1;
			// A turn of the event loop later: a request that failed stops the batch first.
			void sleep(0).then(() => this.grant());
		};
	}

	/** Refuses every request not yet sent; requests under way finish. */
	stop(): void {
		if (this.stopSignal.aborted) return;
		this.stopping.abort();
		for (const waiter of this.waiters.splice(0)) waiter.reject(new BatchStopped());
	}

	private grant(): void {
		while (this.waiters.length > 0 && this.active < this.concurrency) {
			// The lowest position first; among equals, the one that came first.
			const first = this.waiters.reduce(
				(best, w, i) => (w.rank < this.waiters[best].rank ? i : best),
				0,
			);
			const [waiter] = this.waiters.splice(first, 1);
			this.active += 1;
			waiter.resolve();
		}
	}
}

/** The Concurrency every request sent through a `ctx` (one node run) shares. */
export const runConcurrency = new WeakMap<object, RunConcurrency>();

/**
 * Runs `work` for indexes 0 … count-1, at most `limit` at once, in order of index; resolves when
 * every started one has ended (`stop` ends the run of later indexes).
 */
export async function eachAtMost(
	count: number,
	limit: number,
	work: (index: number) => Promise<void>,
	stop: () => boolean = () => false,
): Promise<void> {
	let next = 0;
	const worker = async () => {
		for (let i = next++; i < count && !stop(); i = next++) await work(i);
	};
	await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
}
