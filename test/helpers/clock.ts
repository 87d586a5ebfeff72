// A fast fake clock for bounds of minutes in the shipped code (a Timeout, the trigger's wait for a
// job's status): while `work` runs, jest's fake clock moves `stepMs` every few real milliseconds,
// and real I/O (the sandbox, n8n's request helpers) goes on meanwhile.
import { setTimeout as realDelay } from 'node:timers/promises';

export async function onFastClock<T>(work: () => Promise<T>, stepMs = 1000): Promise<T> {
	jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
	try {
		let done = false;
		const result = work().finally(() => (done = true));
		while (!done) {
			await jest.advanceTimersByTimeAsync(stepMs);
			await realDelay(5);
		}
		return await result;
	} finally {
		jest.useRealTimers();
	}
}

/** Waits real milliseconds, also on a fake clock. */
export const realWait = async (ms: number) => await realDelay(ms);
