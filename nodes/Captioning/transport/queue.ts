// A line of requests waiting to be sent (under the key's rate limits, a run's Concurrency): joining
// it with a deadline, who goes first, and why a request left the line unsent.
import { sleep } from './sleep';

/** A request that waited for its turn until its deadline, and was not sent. */
export class WaitedTooLong extends Error {
	constructor(waitedMs: number) {
		super(
			`Not sent: it waited ${Math.round(waitedMs / 1000)} s for its turn under the service's rate limit for this API key, which every workflow using the key shares`,
		);
	}
}

/** The service asked the key to wait longer than a request may: nothing is sent until then. */
export class ServiceAskedToWait extends Error {
	constructor(
		readonly until: number,
		capMs: number,
	) {
		super(
			`Not sent: the captioning service asked this API key to wait until ${new Date(until).toISOString()} (Retry-After), longer than the ${Math.round(capMs / 1000)} s the node holds a key. Run again after that time`,
		);
	}
}

/**
 * Takes the first in line from a queue: the lowest rank, then the one that came first. With `ageMs`,
 * a waiting entry's rank drops by one for each `ageMs` it has waited.
 */
export function takeFirst<T extends { rank: number; seq: number; since?: number }>(
	queue: T[],
	ageMs?: number,
): T {
	const now = Date.now();
	const rankOf = (t: T) =>
		ageMs && t.since !== undefined ? t.rank - (now - t.since) / ageMs : t.rank;
	let best = 0;
	for (let i = 1; i < queue.length; i++) {
		const t = rankOf(queue[i]);
		const b = rankOf(queue[best]);
		if (t < b || (t === b && queue[i].seq < queue[best].seq)) best = i;
	}
	return queue.splice(best, 1)[0];
}

/** A request waiting in a line: its rank, its number, since when it waits, and how it leaves. */
export interface Waiting {
	rank: number;
	seq: number;
	/** When it joined the queue (it moves up as it waits). */
	since: number;
	resolve: (done: () => void) => void;
	reject: (error: Error) => void;
	leave: () => void;
}

/**
 * Joins a line: resolves with what to call once the request's answer has come when its turn is
 * given (`resolve` of its entry), or rejects when it has waited `maxWaitMs` or `signal` fires.
 */
export async function joinLine(
	queue: Waiting[],
	rank: number,
	seq: number,
	maxWaitMs: number,
	signal?: AbortSignal,
): Promise<() => void> {
	return await new Promise<() => void>((resolve, reject) => {
		const since = Date.now();
		const waiting: Waiting = { rank, seq, since, resolve, reject, leave: () => {} };
		const drop = (error: Error) => {
			const at = queue.indexOf(waiting);
			if (at < 0) return;
			queue.splice(at, 1);
			waiting.leave();
			reject(error);
		};
		const deadline = new AbortController();
		sleep(maxWaitMs, deadline.signal).then(
			() => drop(new WaitedTooLong(Date.now() - since)),
			() => undefined, // it left the line before its deadline
		);
		// The execution was cancelled or its run stopped: the caller says which (retries.ts).
		const onAbort = () => drop(new Error('Not sent: no longer wanted'));
		signal?.addEventListener('abort', onAbort, { once: true });
		waiting.leave = () => {
			deadline.abort();
			signal?.removeEventListener('abort', onAbort);
		};
		queue.push(waiting);
	});
}
