// The key's rate limits (transport/limits.ts) and a request's attempts (transport/retries.ts)
// under jest's fake clock: each rule written at the top of places.ts, decided by the clock it
// is given, not by how busy the machine is.
import type { IN8nHttpFullResponse, INode, NodeApiError } from 'n8n-workflow';

import { sendWithRetries } from '../../nodes/Captioning/transport/retries';

/** A request's attempts, and how long a write's 429s go again (README's Limits). */
const ATTEMPTS = 6;
const WRITE_429_MS = 5 * 60000;
import {
	KeyRateLimits,
	rateLimitSettings,
	WaitedTooLong,
} from '../../nodes/Captioning/transport/limits';

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

/**
 * Asks for `n` turns; each is held `busyMs` once granted, then given back. Returns when each was
 * granted (ms from now).
 */
function take(
	pace: KeyRateLimits,
	n: number,
	{ maxWaitMs = 5 * 60000, limit = 'read' as 'read' | 'write', busyMs = 0 } = {},
) {
	const start = Date.now();
	const granted: number[] = [];
	const errors: Error[] = [];
	const all = Array.from({ length: n }, async () => {
		try {
			const done = await pace[limit].take(0, maxWaitMs);
			granted.push(Date.now() - start);
			if (busyMs) await new Promise((r) => setTimeout(r, busyMs));
			pace[limit].observe(200, undefined);
			done();
		} catch (error) {
			errors.push(error as Error);
		}
	});
	return { granted, errors, settled: Promise.all(all) };
}

test('a 429 holds its limit for every request until its Retry-After has passed; then all go, as the cap lets them', async () => {
	const pace = new KeyRateLimits();
	await take(pace, 2).settled;
	pace.read.observe(429, 1000);
	const after = take(pace, 40);
	await jest.advanceTimersByTimeAsync(999);
	expect(after.granted).toHaveLength(0);
	await jest.advanceTimersByTimeAsync(1);
	await after.settled;
	// All forty once the hold (1 s) has passed, none spaced: no rate is learned from a refusal.
	expect(after.granted).toHaveLength(40);
	expect(Math.max(...after.granted)).toBe(1000);
	// Writes are another limit: not held.
	pace.read.observe(429, 1000);
	const write = take(pace, 1, { limit: 'write' });
	await write.settled;
	expect(write.granted).toEqual([0]);
});

test('at most rateLimitSettings.inFlight requests of a limit are under way at once, in the order they came', async () => {
	const pace = new KeyRateLimits();
	const { inFlight } = rateLimitSettings;
	const all = take(pace, inFlight * 2, { busyMs: 100 });
	await jest.advanceTimersByTimeAsync(250);
	await all.settled;
	expect(all.granted).toEqual([
		...Array<number>(inFlight).fill(0),
		...Array<number>(inFlight).fill(100),
	]);
});

test('a Retry-After longer than a request may wait is not held', async () => {
	const pace = new KeyRateLimits();
	pace.read.observe(429, rateLimitSettings.maxHoldMs + 1000);
	const now = take(pace, 1);
	await now.settled;
	expect(now.granted).toEqual([0]);
});

test('a request that waits for its turn past its deadline fails unsent; the others still go', async () => {
	const pace = new KeyRateLimits();
	pace.read.observe(429, 30000);
	const brief = take(pace, 1, { maxWaitMs: 8000 });
	const work = take(pace, 3);
	await jest.advanceTimersByTimeAsync(8000);
	await brief.settled;
	expect(brief.errors[0]).toBeInstanceOf(WaitedTooLong);
	expect(brief.errors[0].message).toMatch(/waited 8 s for its turn/);
	await jest.advanceTimersByTimeAsync(22000);
	await work.settled;
	expect(work.granted).toEqual([30000, 30000, 30000]);
});

test('a request no longer wanted leaves the line unsent', async () => {
	const pace = new KeyRateLimits();
	pace.read.observe(429, 30000);
	const stop = new AbortController();
	const turn = pace.read.take(0, 5 * 60000, stop.signal);
	stop.abort();
	await expect(turn).rejects.toThrow('no longer wanted');
});

test('a longer Retry-After that comes during a hold extends it; a shorter one does not shorten it', async () => {
	const pace = new KeyRateLimits();
	pace.read.observe(429, 2000);
	await jest.advanceTimersByTimeAsync(1000);
	// Requests under way when the hold began are answered 429, with a longer wait and a shorter one.
	pace.read.observe(429, 5000);
	pace.read.observe(429, 1000);
	const after = take(pace, 1);
	await jest.advanceTimersByTimeAsync(5000);
	await after.settled;
	expect(after.granted).toEqual([5000]);
});

test("a 503 holds no one else: only its own request waits (the interface's 5 s)", async () => {
	const pace = new KeyRateLimits();
	for (let n = 0; n < 3; n++) pace.write.observe(503, 3000);
	const write = take(pace, 1, { limit: 'write' });
	await write.settled;
	expect(write.granted).toEqual([0]);
});

describe('attempts', () => {
	const node = { name: 'Captioning', type: 'captioning', typeVersion: 1 } as INode;
	const ctx = { getNode: () => node } as never;
	const answer = (statusCode: number, retryAfter?: number): IN8nHttpFullResponse => ({
		statusCode,
		headers: retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) },
		body: { error: { code: 'rate_limited', message: 'Slow down' } },
	});

	test.each([
		[429, 1],
		[503, 5],
	])(
		'a read answered %i every time is sent exactly its policy’s attempts, under the shared hold too',
		async (status, retryAfter) => {
			const pace = new KeyRateLimits();
			let sent = 0;
			const result = sendWithRetries(
				ctx,
				{ retryable: true, rateLimit: pace.read, target: 'the service' },
				async () => {
					sent += 1;
					return answer(status, retryAfter);
				},
			).catch((error: Error) => error);
			await jest.advanceTimersByTimeAsync(60000);
			const error = await result;
			expect(sent).toBe(ATTEMPTS);
			expect((error as Error).message).toMatch(String(status));
		},
	);

	test('a write answered 429 every time goes again at each Retry-After, past its attempts, until 5 minutes have passed since its first try', async () => {
		const start = Date.now();
		const sentAt: number[] = [];
		const result = sendWithRetries(
			ctx,
			{ retryable: true, rateLimit: new KeyRateLimits().write, target: 'the service' },
			async () => {
				sentAt.push(Date.now() - start);
				return answer(429, 1);
			},
		).catch((error: NodeApiError) => error);
		await jest.advanceTimersByTimeAsync(WRITE_429_MS);
		const error = (await result) as NodeApiError;
		expect(sentAt).toEqual(Array.from({ length: 301 }, (_, n) => n * 1000));
		expect(error.message).toMatch('429');
		expect(error.description).toContain('Attempts: 301.');
	});

	test.each([
		['a 429 with Retry-After: 1', 1000, 429, 1],
		['a 503 without Retry-After', rateLimitSettings.unavailableMs, 503, undefined],
	])(
		'%s is sent again %i ms later, not sooner (jitter at 0)',
		async (_, ms, status, retryAfter) => {
			jest.spyOn(Math, 'random').mockReturnValue(0);
			const start = Date.now();
			const sentAt: number[] = [];
			const result = sendWithRetries(
				ctx,
				{ retryable: true, rateLimit: new KeyRateLimits().read, target: 'the service' },
				async () => {
					sentAt.push(Date.now() - start);
					return sentAt.length === 1 ? answer(status, retryAfter) : answer(200);
				},
			);
			await jest.advanceTimersByTimeAsync(ms - 1);
			expect(sentAt).toEqual([0]);
			await jest.advanceTimersByTimeAsync(1);
			expect((await result).statusCode).toBe(200);
			expect(sentAt).toEqual([0, ms]);
			jest.restoreAllMocks();
		},
	);

	test('the message of a 429 that was not retried says so', async () => {
		const error = await sendWithRetries(
			ctx,
			{ retryable: false, rateLimit: new KeyRateLimits().write, target: 'the service' },
			async () => answer(429, 1),
		).catch((e: Error) => e);
		expect((error as { description?: string }).description).not.toMatch(/waited and retried/);
		expect((error as { description?: string }).description).toMatch(/not sent again/);
	});
});
