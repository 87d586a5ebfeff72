// Long waits on n8n's timers under jest's fake clock: a Poll wait at the longest Timeout the node
// allows ends when asked, not before (a timer past 2^31-1 ms would fire at once).
import type { INode } from 'n8n-workflow';

import { JobWaiter, MAX_TIMEOUT_MINUTES } from '../../nodes/Captioning/waiting/poll';
import type { Job } from '../../nodes/Captioning/model/types';

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

test('a Poll wait at the longest Timeout (35,791 minutes) waits as asked', async () => {
	const node = { name: 'Captioning', type: 'captioning', typeVersion: 1 } as INode;
	// No round is due within the Timeout (the longest Poll Interval): no request is made.
	const waiter = new JobWaiter({ getNode: () => node } as never);
	const job = { id: 'a-job', object: 'job', status: 'queued', progress: null } as unknown as Job;
	let ended: Error | undefined;
	const waiting = waiter
		.wait(job, 0, Math.floor((2 ** 31 - 1) / 1000), MAX_TIMEOUT_MINUTES)
		.catch((error: Error) => (ended = error));
	await jest.advanceTimersByTimeAsync((MAX_TIMEOUT_MINUTES - 1) * 60000);
	expect(ended).toBeUndefined();
	await jest.advanceTimersByTimeAsync(60000);
	await waiting;
	expect(ended?.message).toMatch(/did not finish within 35791 minutes/);
});
