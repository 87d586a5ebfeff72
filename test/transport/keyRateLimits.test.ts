// The key's rate limits (transport/rateLimits.ts) and a request's attempts (transport/retries.ts)
// under jest's fake clock: each rule written at the top of rateLimits.ts, decided by the clock it
// is given, not by how busy the machine is.
import type { IExecuteFunctions, IN8nHttpFullResponse, INode, NodeApiError } from 'n8n-workflow';

import { DEFAULT_RETRY, sendWithRetries } from '../../nodes/Captioning/transport/retries';
import { serviceOf } from '../../nodes/Captioning/transport/service';
import {
	ServiceAskedToWait,
	KeyRateLimits,
	rateLimitsFor,
	rateLimitSettings,
	rateLimitsKept,
	forgetRateLimits,
	WaitedTooLong,
} from '../../nodes/Captioning/transport/rateLimits';

let seq = 0;

beforeEach(() => {
	jest.useFakeTimers();
	forgetRateLimits();
});
afterEach(() => jest.useRealTimers());

/** Asks for `n` turns; each is given back at once once granted. Returns when each was granted (ms from now). */
function take(
	pace: KeyRateLimits,
	n: number,
	priority: 'high' | 'normal' | 'low' = 'normal',
	maxWaitMs = 5 * 60000,
	limit: 'read' | 'write' = 'read',
) {
	const start = Date.now();
	const granted: number[] = [];
	const errors: Error[] = [];
	const all = Array.from({ length: n }, async () => {
		try {
			const done = await pace[limit].turn(priority, ++seq, maxWaitMs);
			granted.push(Date.now() - start);
			pace[limit].observe(200, undefined);
			done();
		} catch (error) {
			errors.push(error as Error);
		}
	});
	return { granted, errors, settled: Promise.all(all) };
}

test('a single 429 after a few requests teaches no rate: after its hold the key goes on at full speed', async () => {
	const pace = new KeyRateLimits();
	await take(pace, 2).settled;
	pace.read.observe(429, 1000);
	const after = take(pace, 40);
	await jest.advanceTimersByTimeAsync(1000);
	await after.settled;
	// All forty once the hold (1 s) has passed, none spaced: a rate learned from one refusal would be 1 a second.
	expect(after.granted).toHaveLength(40);
	expect(Math.max(...after.granted)).toBe(1000);
});

test('a Retry-After longer than a request may wait is not held: what waits and what comes fail at once, naming the wait', async () => {
	const pace = new KeyRateLimits();
	// Hold the lane briefly so that requests wait in it.
	pace.read.observe(429, 2000);
	const waiting = take(pace, 3);
	pace.read.observe(429, 3600 * 1000);
	await waiting.settled;
	expect(waiting.granted).toHaveLength(0);
	expect(waiting.errors).toHaveLength(3);
	expect(waiting.errors[0]).toBeInstanceOf(ServiceAskedToWait);
	expect(waiting.errors[0].message).toMatch(
		/asked this API key to wait until .* longer than the 60 s the node holds a key/,
	);
	await expect(pace.read.turn('normal', ++seq, 5 * 60000)).rejects.toBeInstanceOf(
		ServiceAskedToWait,
	);
	// Writes are another lane: not refused.
	const write = await pace.write.turn('normal', ++seq, 5 * 60000);
	write();
	// Once the service's hour has passed, reads go again.
	await jest.advanceTimersByTimeAsync(3600 * 1000);
	const later = take(pace, 1);
	await later.settled;
	expect(later.granted).toHaveLength(1);
});

test('a request that waits for its turn past its deadline fails unsent; the others still go', async () => {
	const pace = new KeyRateLimits();
	pace.read.observe(429, 30000);
	const answer = take(pace, 1, 'high', 8000);
	const work = take(pace, 1, 'normal');
	await jest.advanceTimersByTimeAsync(8000);
	await answer.settled;
	expect(answer.errors[0]).toBeInstanceOf(WaitedTooLong);
	expect(answer.errors[0].message).toMatch(/waited 8 s for its turn/);
	await jest.advanceTimersByTimeAsync(22000);
	await work.settled;
	expect(work.granted).toEqual([30000]);
});

test('waiting requests move up as they wait: bulk work held long enough goes before a newer answer', async () => {
	const pace = new KeyRateLimits();
	// One request a second (learned from a 429 after ten let through in a second).
	await take(pace, 10).settled;
	await jest.advanceTimersByTimeAsync(1000);
	pace.read.observe(429, 1000);
	const order: string[] = [];
	const ask = (name: string, priority: 'high' | 'low') =>
		pace.read.turn(priority, ++seq, 5 * 60000).then((done) => {
			order.push(name);
			done();
		});
	const bulk = ask('low', 'low');
	// The bulk request has waited over two ranks' worth when the answer comes: it goes first.
	await jest.advanceTimersByTimeAsync(rateLimitSettings.ageMs * 2 + 500);
	const answer = ask('high', 'high');
	await jest.advanceTimersByTimeAsync(5000);
	await Promise.all([bulk, answer]);
	expect(order[0]).toBe('low');
});

test('a pace nobody used for a while is forgotten (its memory ends)', async () => {
	rateLimitsFor('key-a');
	rateLimitsFor('key-b');
	expect(rateLimitsKept()).toBe(2);
	await jest.advanceTimersByTimeAsync(rateLimitSettings.idleMs + 1000);
	rateLimitsFor('key-c');
	expect(rateLimitsKept()).toBe(1);
});

test("a run that outlives a limiter's idle time shares its key's limits with the runs that come after", async () => {
	// A node run's view of its credentials, as n8n's context hands them over.
	const run = () =>
		({
			getCredentials: async () => ({ apiKey: 'sk_long', baseUrl: 'https://api.example.com/v1' }),
			getNode: () => ({ name: 'Captioning' }),
		}) as unknown as IExecuteFunctions;
	const long = await serviceOf(run());
	const before = long.rateLimits;
	// Idle past the time a limiter is kept (a Poll wait of 15 minutes): a run that starts now gets another.
	await jest.advanceTimersByTimeAsync(rateLimitSettings.idleMs + 1000);
	rateLimitsFor('another key');
	const later = await serviceOf(run());
	expect(later.rateLimits).not.toBe(before);
	expect(long.rateLimits).toBe(later.rateLimits);
});

test('a longer Retry-After that comes during a hold extends it', async () => {
	const pace = new KeyRateLimits();
	pace.read.observe(429, 2000);
	await jest.advanceTimersByTimeAsync(1000);
	// A request that was under way when the hold began is answered 429 with a longer wait.
	pace.read.observe(429, 5000);
	const after = take(pace, 1);
	await jest.advanceTimersByTimeAsync(5000);
	await after.settled;
	expect(after.granted).toEqual([5000]);
});

test("a 503's Retry-After holds the key as a 429's does from the third 503 in a row (no success between); fewer hold nothing", async () => {
	const pace = new KeyRateLimits();
	pace.write.observe(503, 3000);
	pace.write.observe(503, 3000);
	const alone = take(pace, 1, 'normal', 5 * 60000, 'write');
	await alone.settled;
	expect(alone.granted).toEqual([0]);
	for (let n = 0; n < 3; n++) pace.write.observe(503, 3000);
	const write = pace.write.turn('normal', ++seq, 5 * 60000).then((done) => {
		done();
		return Date.now();
	});
	const start = Date.now();
	await jest.advanceTimersByTimeAsync(3000);
	expect((await write) - start).toBe(3000);
	// Reads are another limit: not held.
	const read = take(pace, 1);
	await read.settled;
	expect(read.granted).toEqual([0]);
});

test("a 503's hold ends when a request of its limit succeeds meanwhile (the service serves again); a 429's does not", async () => {
	const pace = new KeyRateLimits();
	for (let n = 0; n < 3; n++) pace.write.observe(503, 5000);
	const write = take(pace, 1, 'normal', 5 * 60000, 'write');
	await jest.advanceTimersByTimeAsync(1000);
	// A write under way when the 503 came is answered 201.
	pace.write.observe(201, undefined);
	await jest.advanceTimersByTimeAsync(0);
	await write.settled;
	expect(write.granted).toEqual([1000]);
	// A 429 during a 503's hold makes it a 429's: a success no longer ends it.
	for (let n = 0; n < 3; n++) pace.read.observe(503, 5000);
	pace.read.observe(429, 5000);
	const read = take(pace, 1);
	await jest.advanceTimersByTimeAsync(1000);
	pace.read.observe(200, undefined);
	await jest.advanceTimersByTimeAsync(4000);
	await read.settled;
	expect(read.granted).toEqual([5000]);
});

test("one cap per key: a request that waits only briefly does not make the service's wait a refusal for the others", async () => {
	const pace = new KeyRateLimits();
	pace.read.observe(429, 30000);
	// A trigger's read waits 8 s at most; a run's own reads wait longer.
	const brief = take(pace, 1, 'high', 8000);
	const others = take(pace, 3);
	await jest.advanceTimersByTimeAsync(30000);
	await Promise.all([brief.settled, others.settled]);
	expect(brief.errors[0]).toBeInstanceOf(WaitedTooLong);
	expect(others.granted).toEqual([30000, 30000, 30000]);
	expect(others.errors).toEqual([]);
	// Past the key's cap (rateLimitSettings.maxHoldMs) a Retry-After is refused for everyone.
	pace.read.observe(429, rateLimitSettings.maxHoldMs + 1000);
	await expect(pace.read.turn('normal', ++seq, 5 * 60000)).rejects.toBeInstanceOf(
		ServiceAskedToWait,
	);
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
			expect(sent).toBe(DEFAULT_RETRY.maxAttempts);
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
		await jest.advanceTimersByTimeAsync(DEFAULT_RETRY.maxTurnWaitMs);
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
