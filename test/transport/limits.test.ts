// A node run's places (Batching → Concurrency): who waits, and what ends a wait.
import { RunStopped, Limit } from '../../nodes/Captioning/transport/limits';

test('a cancelled execution releases the requests waiting for a place: each is refused, none is granted', async () => {
	const cancel = new AbortController();
	const places = new Limit(1, cancel.signal, true);
	const underWay = await places.take(0);
	const granted: number[] = [];
	const waiting = [1, 2, 3].map(async (i) => {
		const release = await places.take(i);
		granted.push(i);
		release();
	});
	cancel.abort();
	const settled = await Promise.allSettled(waiting);
	expect(settled.map((s) => (s.status === 'rejected' ? s.reason : 'granted'))).toEqual([
		new RunStopped(),
		new RunStopped(),
		new RunStopped(),
	]);
	// The request under way ends as it ends; no place is granted after the cancellation.
	underWay();
	expect(granted).toEqual([]);
	await expect(places.take(4)).rejects.toThrow(RunStopped);
});

test('places are granted lowest position first', async () => {
	const places = new Limit(1);
	const first = await places.take(0);
	const order: number[] = [];
	const waiting = [5, 2, 9, 1].map(async (i) => {
		const release = await places.take(i);
		order.push(i);
		release();
	});
	first();
	await Promise.all(waiting);
	expect(order).toEqual([1, 2, 5, 9]);
});
