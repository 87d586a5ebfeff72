// Batches in n8n's engine against the sandbox: every item checked before the
// first request, requests within Batching → Concurrency and one shared pacing, waits together,
// outputs in input order and paired, exactly one job and one charge per item whatever fails.
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import { binaryDataService, storeBinary } from '../engine/workflow';
import { MEDIA, orderDirectly, runCaptioning } from '../helpers/captioning';
import { generatedMedia } from '../helpers/media';
import type { Sandbox } from '../helpers/sandbox';
import { useSandbox } from '../helpers/sandbox';
import { onFastClock, realWait } from '../helpers/clock';

let sb: Sandbox;
useSandbox((s) => (sb = s));

const create = (params: IDataObject = {}) => ({
	resource: 'job',
	operation: 'create',
	source: 'url',
	mediaUrl: '={{ $json.url }}',
	...params,
});
const urls = (n: number, bad: Record<number, string> = {}): INodeExecutionData[] =>
	Array.from({ length: n }, (_, i) => ({ json: { url: bad[i] ?? `${MEDIA}?item=${i}` } }));
const requests = (route: string) => sb.ledger.requests.filter((r) => r.route === route);

const order = async (body: IDataObject = {}) => await orderDirectly(sb, body);

describe('every item is checked before the first request', () => {
	test('one bad item: nothing is ordered, and the error names the item and the field', async () => {
		const run = await runCaptioning(sb, create(), { input: urls(5, { 3: 'ftp://x' }) });
		expect(run.failure).toMatchObject({
			message: 'Media URL "ftp://x" is not an http(s) URL',
			context: { itemIndex: 3 },
		});
		expect(sb.ledger.requests).toHaveLength(0);
	});

	test('a bad binary item stops the batch before any upload', async () => {
		const binary = await storeBinary(Buffer.from('media'), {
			fileName: 'a.mp4',
			mimeType: 'video/mp4',
		});
		const run = await runCaptioning(sb, create({ source: 'binary', binaryPropertyName: 'data' }), {
			input: [{ json: {}, binary }, { json: {} }],
		});
		expect(run.failure).toMatchObject({
			message: expect.stringMatching(/holds no file in item 1/),
			context: { itemIndex: 1 },
		});
		expect(sb.ledger.requests).toHaveLength(0);
		expect(sb.ledger.storageRequests).toHaveLength(0);
	});

	test('with Continue On Fail, bad items become error items and the good ones are ordered, in input order', async () => {
		const run = await runCaptioning(sb, create(), {
			input: urls(6, { 1: 'ftp://x', 4: '' }),
			settings: { continueOnFail: true },
		});
		expect(run.items.map((i) => [i.pairedItem, i.json.object ?? i.json.error])).toEqual([
			[{ item: 0 }, 'job'],
			[{ item: 1 }, 'Media URL "ftp://x" is not an http(s) URL'],
			[{ item: 2 }, 'job'],
			[{ item: 3 }, 'job'],
			[{ item: 4 }, 'Media URL is empty'],
			[{ item: 5 }, 'job'],
		]);
		expect(
			run.items.filter((i) => i.json.object).map((i) => (i.json.media as IDataObject).url),
		).toEqual([0, 2, 3, 5].map((n) => `${MEDIA}?item=${n}`));
		expect(sb.ledger.jobs).toHaveLength(4);
	});
});

describe('concurrency', () => {
	test('orders run together, never more than Batching → Concurrency at once', async () => {
		sb.setLatency(150);
		const run = await runCaptioning(sb, create({ concurrency: 3 }), {
			input: urls(12),
		});
		expect(run.failure).toBeUndefined();
		// Three under way at once, never more (the sandbox counts what it holds at a time).
		expect(sb.maxInFlight()).toBe(3);
		expect(sb.ledger.jobs).toHaveLength(12);
	});

	test('the default is 4', async () => {
		sb.setLatency(60);
		await runCaptioning(sb, create(), { input: urls(10) });
		expect(sb.maxInFlight()).toBe(4);
	});

	test('binary files upload together (streamed, each whole), within the limit', async () => {
		sb.setLatency(50);
		const size = 8 * 1024 * 1024;
		const input: INodeExecutionData[] = [];
		const hashes: string[] = [];
		for (let n = 0; n < 6; n++) {
			const media = generatedMedia(size + n * 65536);
			input.push({
				json: {},
				binary: await storeBinary(media.stream, {
					fileName: `clip-${n}.mp4`,
					mimeType: 'video/mp4',
				}),
			});
			hashes.push(media.sha256());
		}
		const run = await runCaptioning(
			sb,
			create({ source: 'binary', binaryPropertyName: 'data', concurrency: 2 }),
			{ input },
		);
		expect(run.failure).toBeUndefined();
		expect(sb.maxInFlight()).toBe(2);
		const byName = new Map(sb.ledger.uploads.map((u) => [u.filename, u]));
		hashes.forEach((hash, n) =>
			expect(byName.get(`clip-${n}.mp4`)).toMatchObject({
				receivedBytes: size + n * 65536,
				complete: true,
				sha256: hash,
			}),
		);
		expect(run.items.map((i) => i.json.title)).toEqual(hashes.map((_, n) => `clip-${n}.mp4`));
	});

	test('Get Captions downloads for several jobs together, within the limit, in input order', async () => {
		const ids = [
			await order({ title: 'A' }),
			await order({ title: 'B' }),
			await order({ title: 'C' }),
			await order({ title: 'D' }),
		];
		ids.forEach((id) => sb.completeJob(id));
		sb.resetLedger();
		sb.setLatency(80);
		const run = await runCaptioning(
			sb,
			{
				resource: 'job',
				operation: 'getCaptions',
				jobId: '={{ $json.id }}',
				formats: ['srt', 'vtt'],
				binaryPropertyName: 'data',
				concurrency: 3,
			},
			{ input: ids.map((id) => ({ json: { id } })) },
		);
		expect(run.failure).toBeUndefined();
		expect(sb.maxInFlight()).toBe(3);
		expect(run.items.map((i) => [i.json.title, i.binary!.data_srt.fileName])).toEqual([
			['A', 'A.srt'],
			['B', 'B.srt'],
			['C', 'C.srt'],
			['D', 'D.srt'],
		]);
		expect(sb.ledger.captionDownloads).toHaveLength(8);
	});
});

describe('one pacing for the whole batch', () => {
	test('429s under a write limit: every item ordered and charged once, each refused order sent again and nothing else', async () => {
		sb.setRateLimits({ writePerSecond: 10 });
		const run = await runCaptioning(sb, create({ concurrency: 4 }), {
			input: urls(40),
		});
		expect(run.failure).toBeUndefined();
		expect(sb.ledger.jobs).toHaveLength(40);
		expect(sb.ledger.charges).toHaveLength(40);
		// The hold a 429 puts on the key is proven on a fake clock (keyRateLimits.test.ts); how few
		// are refused is a figure of the bench (batchVsFloor).
		const limited = requests('POST /jobs').filter((r) => r.status === 429);
		expect(limited.length).toBeGreaterThan(0);
		expect(requests('POST /jobs')).toHaveLength(40 + limited.length);
	}, 30000);
});

describe('nothing lost, nothing doubled', () => {
	test('lost responses and resets under concurrency: exactly one job and one charge per item, outputs paired', async () => {
		sb.setRandomFaults(
			{ rate: 0.3, match: 'POST /jobs', kinds: [{ kind: 'lose-response' }, { kind: 'reset' }] },
			7,
		);
		const run = await runCaptioning(sb, create({ concurrency: 6 }), {
			input: urls(40),
		});
		expect(run.failure).toBeUndefined();
		expect(requests('POST /jobs').filter((r) => r.fault !== undefined).length).toBeGreaterThan(5);
		expect(sb.ledger.jobs).toHaveLength(40);
		expect(sb.ledger.charges).toHaveLength(40);
		expect(run.items.map((i) => i.pairedItem)).toEqual(
			Array.from({ length: 40 }, (_, item) => ({ item })),
		);
		expect(run.items.map((i) => (i.json.media as IDataObject).url)).toEqual(
			urls(40).map((i) => i.json.url),
		);
	});

	test('a failure without Continue On Fail names the items already ordered, and Retry On Fail replays them', async () => {
		// The fourth order is refused once (not retried): the node stops after three, nothing more sent.
		sb.injectFault('POST /jobs', {
			status: 400,
			code: 'invalid_request',
			message: 'Injected refusal',
			after: 3,
		});
		const failed = await runCaptioning(sb, create({ concurrency: 1 }), {
			input: urls(8),
		});
		expect(failed.failure).toMatchObject({ message: expect.stringMatching(/^Injected refusal/) });
		const ordered = sb.ledger.jobs.map((j) => j.id);
		expect(ordered).toHaveLength(3);
		expect(failed.failure!.description).toContain(
			`Ordered before the node stopped, and not lost: item 0 → job ${ordered[0]}, item 1 → job ${ordered[1]}, item 2 → job ${ordered[2]}`,
		);
		expect((failed.failure!.context as IDataObject).orderedJobs).toHaveLength(ordered.length);

		sb.resetLedger();
		sb.injectFault('POST /jobs', {
			status: 400,
			code: 'invalid_request',
			message: 'Injected refusal',
			after: 3,
		});
		const retried = await runCaptioning(sb, create({ concurrency: 1 }), {
			input: urls(8),
			settings: { retryOnFail: true, maxTries: 2, waitBetweenTries: 10 },
		});
		expect(retried.failure).toBeUndefined();
		expect(sb.ledger.jobs).toHaveLength(8);
		expect(sb.ledger.charges).toHaveLength(8);
		// The items ordered before the failure were found by their tags (replayed, no second POST), the others created.
		const replayed = retried.items.filter((i) => i.json.idempotent_replayed === true);
		expect(replayed.map((i) => i.json.id)).toEqual(sb.ledger.jobs.slice(0, 3).map((j) => j.id));
		expect(requests('POST /jobs').filter((r) => r.status === 200)).toHaveLength(0);
		expect(requests('POST /jobs').filter((r) => r.status === 201)).toHaveLength(8);
	});

	test('Idempotency None: Retry On Fail reads back what this execution ordered instead of ordering again', async () => {
		sb.setTiming({ queuedMs: 20, processingMs: 60 });
		// The first round is refused for good (a 403 ends the waits): the node fails after ordering.
		sb.injectFault('GET /jobs', {
			status: 403,
			code: 'insufficient_permissions',
			message: 'Injected failure after the orders',
		});
		const run = await runCaptioning(
			sb,
			create({ idempotency: 'none', waitForCompletion: 'poll', pollInterval: 1, timeout: 1 }),
			{
				input: urls(3),
				settings: { retryOnFail: true, maxTries: 2, waitBetweenTries: 10 },
			},
		);
		expect(run.failure).toBeUndefined();
		expect(sb.ledger.jobs).toHaveLength(3);
		expect(sb.ledger.charges).toHaveLength(3);
		expect(run.items.map((i) => [i.json.status, i.json.idempotent_replayed])).toEqual([
			['completed', true],
			['completed', true],
			['completed', true],
		]);
	});
});

describe('waiting together (Wait for Completion: Poll)', () => {
	test('20 jobs are checked in one list read per round, and finish as the slowest does', async () => {
		sb.setTiming({ queuedMs: 100, processingMs: 1500 });
		const run = await runCaptioning(
			sb,
			create({ waitForCompletion: 'poll', pollInterval: 1, timeout: 1 }),
			{ input: urls(20) },
		);
		expect(run.failure).toBeUndefined();
		expect(run.items.map((i) => [i.pairedItem, i.json.status])).toEqual(
			Array.from({ length: 20 }, (_, item) => [{ item }, 'completed']),
		);
		// Each round is the first page of the job list, which holds all twenty: no job is read alone.
		expect(requests('GET /jobs/{id}')).toHaveLength(0);
		const lists = requests('GET /jobs');
		expect(lists.length).toBeGreaterThanOrEqual(1);
		expect(lists.every((r) => r.query.starting_after === undefined)).toBe(true);
	});

	test('equal rows (a duplicated sheet row) share one job, and each ends its own wait', async () => {
		sb.setTiming({ queuedMs: 100, processingMs: 600 });
		const same = { json: { url: `${MEDIA}?row=same` } };
		const run = await runCaptioning(
			sb,
			create({ waitForCompletion: 'poll', pollInterval: 1, timeout: 1 }),
			{ input: [same, same, { json: { url: `${MEDIA}?row=other` } }] },
		);
		expect(run.failure).toBeUndefined();
		expect(sb.ledger.jobs).toHaveLength(2);
		expect(run.items.map((i) => [i.pairedItem, i.json.status])).toEqual(
			[0, 1, 2].map((item) => [{ item }, 'completed']),
		);
		expect(run.items[0].json.id).toBe(run.items[1].json.id);
	});

	test('a round that cannot read the jobs ends no wait: the next round reads them', async () => {
		sb.setTiming({ queuedMs: 100, processingMs: 600 });
		// The first round's list read is refused (not retried); the jobs are read again a second later.
		sb.injectFault('GET /jobs', {
			status: 400,
			code: 'invalid_request',
			message: 'Injected refusal of a round',
		});
		const run = await runCaptioning(
			sb,
			create({ waitForCompletion: 'poll', pollInterval: 1, timeout: 1 }),
			{ input: urls(3) },
		);
		expect(run.failure).toBeUndefined();
		expect(run.items.map((i) => i.json.status)).toEqual(['completed', 'completed', 'completed']);
		expect(requests('GET /jobs').map((r) => r.status)).toContain(400);
	});

	test('every wait ends by its Timeout, also while a round waits for an answer that does not come', async () => {
		try {
			const done = await onFastClock(async () => {
				const run = runCaptioning(
					sb,
					create({ waitForCompletion: 'poll', pollInterval: 1, timeout: 1 }),
					{ input: urls(2) },
				);
				while (sb.ledger.jobs.length < 2) await realWait(10);
				// From now on the service answers each request an hour late: the first round hangs.
				sb.setLatency(3600000);
				return await run;
			});
			expect(done.failure).toMatchObject({
				message: expect.stringMatching(/did not finish within 1 minutes \(status queued\)/),
			});
			expect(sb.ledger.jobs).toHaveLength(2);
		} finally {
			sb.setLatency(0);
		}
	});

	test('jobs the list pages do not reach (many jobs ordered elsewhere meanwhile) are read one by one', async () => {
		// The first round comes 5 s after the orders: time to bury them, also on a busy machine.
		const run = runCaptioning(
			sb,
			create({ waitForCompletion: 'poll', pollInterval: 5, timeout: 1 }),
			{ input: urls(3) },
		);
		// Wait for the three orders, then bury them under 250 newer jobs of someone else.
		while (sb.ledger.jobs.length < 3) await new Promise((r) => setTimeout(r, 10));
		const ours = sb.ledger.jobs.map((j) => j.id);
		for (let n = 0; n < 250; n += 25) await Promise.all(Array.from({ length: 25 }, order));
		ours.forEach((id) => sb.completeJob(id));
		const done = await run;
		expect(done.failure).toBeUndefined();
		expect(done.items.map((i) => [i.json.id, i.json.status])).toEqual(
			ours.map((id) => [id, 'completed']),
		);
		// Two pages (the most a round reads for 3 jobs), then each of the three by id.
		expect(requests('GET /jobs')).toHaveLength(2);
		expect(
			requests('GET /jobs/{id}')
				.map((r) => r.path.split('/').at(-1))
				.sort(),
		).toEqual([...ours].sort());
	});

	test('cancelling the execution ends the wait of the whole batch at once', async () => {
		const run = await runCaptioning(
			sb,
			create({ waitForCompletion: 'poll', pollInterval: 30, timeout: 60 }),
			{
				input: urls(5),
				onStart: (cancel) => setTimeout(cancel, 400),
			},
		);
		// Ended before the first round (30 s on): no read of the jobs was sent.
		expect(run.run.status).toBe('canceled');
		expect(sb.ledger.jobs).toHaveLength(5);
		expect(requests('GET /jobs')).toHaveLength(0);
	});

	test("a job that times out is that item's error; the others still come out", async () => {
		const done = await onFastClock(async () => {
			const run = runCaptioning(
				sb,
				create({ waitForCompletion: 'poll', pollInterval: 1, timeout: 1 }),
				{ input: urls(3), settings: { continueOnFail: true } },
			);
			while (sb.ledger.jobs.length < 3) await realWait(10);
			const [first, , third] = sb.ledger.jobs.map((j) => j.id);
			sb.completeJob(first);
			sb.cancelJob(third, 'unsupported_language');
			return await run;
		});
		expect(done.items.map((i) => [i.pairedItem, i.json.status ?? i.json.error])).toEqual([
			[{ item: 0 }, 'completed'],
			[
				{ item: 1 },
				expect.stringMatching(/^Job [0-9a-f-]+ did not finish within 1 minutes \(status queued\)$/),
			],
			[{ item: 2 }, 'cancelled'],
		]);
	});
});

describe('memory per file, not per batch', () => {
	test('a batch of 12 Binary Files with Concurrency 2 reads at most two files at once (probe, hash and upload alike)', async () => {
		const service = await binaryDataService();
		let open = 0;
		let most = 0;
		const original = service.getAsStream.bind(service);
		const spy = jest.spyOn(service, 'getAsStream').mockImplementation(async (id, chunk) => {
			const stream = await original(id, chunk);
			open += 1;
			most = Math.max(most, open);
			stream.once('close', () => (open -= 1));
			return stream;
		});
		try {
			const input = await Promise.all(
				Array.from({ length: 12 }, async (_, n) => ({
					json: {},
					binary: await storeBinary(Buffer.from(`clip ${n} `.repeat(20000)), {
						fileName: `clip${n}.mp4`,
						mimeType: 'video/mp4',
					}),
				})),
			);
			const run = await runCaptioning(
				sb,
				create({ source: 'binary', binaryPropertyName: 'data', concurrency: 2 }),
				{ input },
			);
			expect(run.failure).toBeUndefined();
			expect(sb.ledger.jobs).toHaveLength(12);
			expect(most).toBeGreaterThan(0);
			expect(most).toBeLessThanOrEqual(2);
		} finally {
			spy.mockRestore();
		}
	}, 60000);
});
