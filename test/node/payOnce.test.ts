// Paying once across executions, in n8n's engine against the sandbox: a Retry of a failed
// execution (a new execution id, n8n's copy of the node context), a crashed execution's Retry (a
// new execution id, an empty context), a second run over the same input, Binary File sources run
// twice. n8n's deduplication store is the harness's in-memory one (test/engine/processed.ts).
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import { storeBinary } from '../engine/workflow';
import { clearProcessedData, processedCalls, setProcessedDelay } from '../engine/processed';
import { MEDIA, runCaptioning } from '../helpers/captioning';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox, useSandbox } from '../helpers/sandbox';

let sb: Sandbox;
useSandbox((s) => (sb = s));

const create = (params: IDataObject = {}) => ({
	resource: 'job',
	operation: 'create',
	source: 'url',
	mediaUrl: '={{ $json.url }}',
	...params,
});
const urls = (names: string[]): INodeExecutionData[] =>
	names.map((name) => ({ json: { url: `${MEDIA}?file=${name}` } }));
const posts = () => sb.ledger.requests.filter((r) => r.route === 'POST /jobs');
const counts = () => ({
	jobs: sb.ledger.jobs.length,
	charges: sb.ledger.charges.length,
	uploads: sb.ledger.uploads.length,
});
let workflow = 0;
const newWorkflow = () => `pay-once-${++workflow}`;

async function videos(
	names: string[],
	bytes: (name: string) => string = (name) => `video ${name} `.repeat(500),
): Promise<INodeExecutionData[]> {
	return await Promise.all(
		names.map(async (name) => ({
			json: { name },
			binary: await storeBinary(Buffer.from(bytes(name)), {
				fileName: `${name}.mp4`,
				mimeType: 'video/mp4',
			}),
		})),
	);
}

describe("a failed batch, then the execution's Retry", () => {
	test.each([['refused (400, not retried)', 400, 1]])(
		'the fourth order %s: every item one job and one charge in all; the retry replays what was ordered',
		async (_name, status, times) => {
			const workflowId = newWorkflow();
			const input = urls([`a${status}`, `b${status}`, `c${status}`, `d${status}`, `e${status}`]);
			// Items go one at a time; the fourth order fails, so the node stops after three.
			sb.injectFault('POST /jobs', {
				status,
				code: 'invalid_request',
				message: 'Injected refusal',
				after: 3,
				times,
			});
			const params = create({ concurrency: 1 });
			const failed = await runCaptioning(sb, params, { input, workflowId, mode: 'trigger' });
			expect(failed.failure?.message).toMatch(/^Injected refusal/);
			sb.clearFaults();
			const ordered = sb.ledger.jobs.map((j) => j.id);
			expect(ordered).toHaveLength(3);
			const replays =
				"Retry On Fail, the execution's Retry and a new run replay these orders instead of paying for them again.";
			expect(failed.failure!.description).toContain(
				`Ordered before the node stopped, and not lost: item 0 → job ${ordered[0]}, item 1 → job ${ordered[1]}, item 2 → job ${ordered[2]}`,
			);
			expect(failed.failure!.description!.endsWith(replays)).toBe(true);

			// n8n's Retry: a new execution id, the failed node's input and node context copied.
			const retried = await runCaptioning(sb, params, {
				input,
				workflowId,
				mode: 'retry',
				contextData: failed.contextData(),
			});
			expect(retried.failure).toBeUndefined();
			const jobOf = (url: string) => sb.ledger.jobs.find((j) => j.body.media_url === url)!.id;
			expect(retried.items.map((i) => [i.json.id, i.json.idempotent_replayed])).toEqual(
				input.map(({ json }) => [
					jobOf(json.url as string),
					ordered.includes(jobOf(json.url as string)),
				]),
			);
		},
	);
});

describe('n8n crashes during a Poll wait, then the crashed execution is retried', () => {
	test.each(['url', 'binary'])(
		'source %s: the retry (empty context) replays every order; the next node gets the jobs first ordered',
		async (source) => {
			const workflowId = newWorkflow();
			sb.setTiming({ queuedMs: 50, processingMs: 400 });
			const input = source === 'url' ? urls(['x', 'y', 'z']) : await videos(['x', 'y', 'z']);
			const params = create({
				source,
				binaryPropertyName: 'data',
				waitForCompletion: 'poll',
				pollInterval: 1,
				timeout: 1,
			});
			// The crash: the execution ends during the wait, and n8n keeps none of its context.
			const crashed = await runCaptioning(sb, params, {
				input,
				workflowId,
				mode: 'trigger',
				// Once the three orders are in (and the wait has begun).
				onStart: (cancel) => {
					const check = setInterval(() => {
						if (sb.ledger.jobs.length === 3) {
							clearInterval(check);
							setTimeout(cancel, 100);
						}
					}, 10);
				},
			});
			expect(crashed.items).toHaveLength(0);
			expect(counts()).toMatchObject({ jobs: 3, charges: 3, uploads: source === 'binary' ? 3 : 0 });
			const first = sb.ledger.jobs.map((j) => j.id);

			const retried = await runCaptioning(sb, params, { input, workflowId, mode: 'retry' });
			expect(retried.failure).toBeUndefined();
			expect(counts()).toMatchObject({ jobs: 3, charges: 3, uploads: source === 'binary' ? 3 : 0 });
			// Each item gets the job first ordered for it (binary orders go out concurrently, in any order).
			const jobFor = (item: INodeExecutionData) =>
				sb.ledger.jobs.find((j) =>
					source === 'url'
						? j.body.media_url === item.json.url
						: j.body.title === `${String(item.json.name)}.mp4`,
				)!.id;
			expect(first).toHaveLength(3);
			expect(
				retried.items.map((i) => [i.json.id, i.json.status, i.json.idempotent_replayed]),
			).toEqual(input.map((item) => [jobFor(item), 'completed', true]));
			expect(posts().filter((r) => r.status === 409)).toHaveLength(0);
		},
	);
});

describe('a new run over the same input replays', () => {
	test('a listing that gains a file in front orders only the new file', async () => {
		const workflowId = newWorkflow();
		await runCaptioning(sb, create(), { input: urls(['one', 'two']), workflowId, mode: 'trigger' });
		const run = await runCaptioning(sb, create(), {
			input: urls(['new', 'one', 'two']),
			workflowId,
			mode: 'trigger',
		});
		expect(counts()).toMatchObject({ jobs: 3, charges: 3 });
		expect(run.items.map((i) => [i.json.media, i.json.idempotent_replayed])).toEqual([
			[expect.objectContaining({ url: `${MEDIA}?file=new` }), false],
			[expect.objectContaining({ url: `${MEDIA}?file=one` }), true],
			[expect.objectContaining({ url: `${MEDIA}?file=two` }), true],
		]);
	});

	test('other options are another order; Idempotency None orders again on purpose', async () => {
		const workflowId = newWorkflow();
		await runCaptioning(sb, create(), { input: urls(['talk']), workflowId });
		await runCaptioning(sb, create({ options: { style: 'verbatim' } }), {
			input: urls(['talk']),
			workflowId,
		});
		await runCaptioning(sb, create({ idempotency: 'none' }), { input: urls(['talk']), workflowId });
		await runCaptioning(sb, create({ idempotency: 'custom', idempotencyKey: 'talk-v2' }), {
			input: urls(['talk']),
			workflowId,
		});
		expect(counts()).toMatchObject({ jobs: 4, charges: 4 });
	});
});

describe('Binary File sources repeat cleanly', () => {
	test.each([
		[
			'Custom Key (the templates)',
			{
				idempotency: 'custom',
				idempotencyKey: '={{ "drive-" + $json.name + "-" + $workflow.id }}',
			},
		],
		['Automatic', {}],
	])(
		'%s, run twice: one upload, one job, one charge; the second run finds the first order by its tag and sends none',
		async (_name, idempotency) => {
			const workflowId = newWorkflow();
			const params = create({ source: 'binary', binaryPropertyName: 'data', ...idempotency });
			const first = await runCaptioning(sb, params, {
				input: await videos(['lecture', 'demo']),
				workflowId,
				mode: 'trigger',
			});
			// The second run downloads the files again: new binary ids, the same bytes.
			const second = await runCaptioning(sb, params, {
				input: await videos(['lecture', 'demo']),
				workflowId,
				mode: 'trigger',
			});
			expect(second.failure).toBeUndefined();
			expect(counts()).toEqual({ jobs: 2, charges: 2, uploads: 2 });
			expect(second.items.map((i) => [i.json.id, i.json.idempotent_replayed])).toEqual(
				first.items.map((i) => [i.json.id, true]),
			);
			expect(posts().map((r) => r.status)).toEqual([201, 201]);
			// Shown above the output, once for the run; the first run, which paid, shows none.
			expect(second.hints).toEqual([
				{
					message:
						'2 of 2 orders replayed a job ordered before (Idempotency), so nothing was charged for them. Their items have idempotent_replayed: true.',
					location: 'outputPane',
				},
			]);
			expect(first.hints).toEqual([]);
		},
	);

	test('a Custom Key reused for a different file stays a clear error that says so', async () => {
		const workflowId = newWorkflow();
		const params = create({
			source: 'binary',
			binaryPropertyName: 'data',
			idempotency: 'custom',
			idempotencyKey: 'drive-123',
		});
		await runCaptioning(sb, params, { input: await videos(['v1']), workflowId });
		const run = await runCaptioning(sb, params, {
			input: await videos(['v1'], () => 'other bytes'.repeat(100)),
			workflowId,
		});
		expect(run.failure).toMatchObject({ httpCode: '409' });
		expect(run.failure!.description).toMatch(
			/^The Idempotency Key "drive-123" was used before for a different order than the file v1\.mp4 with these options \(or by another workflow\)\. A key names one order/,
		);
		expect(counts()).toMatchObject({ jobs: 1, charges: 1 });
	});

	test('when n8n forgot its hint (a new database): the file goes up again, the service refuses the new body, and the earlier job of the same bytes is the replay', async () => {
		const workflowId = newWorkflow();
		const params = create({ source: 'binary', binaryPropertyName: 'data' });
		const first = await runCaptioning(sb, params, { input: await videos(['old']), workflowId });
		clearProcessedData();
		const run = await runCaptioning(sb, params, { input: await videos(['old']), workflowId });
		expect(run.failure).toBeUndefined();
		expect(run.items[0].json).toMatchObject({
			id: first.items[0].json.id,
			idempotent_replayed: true,
		});
		expect(counts()).toMatchObject({ jobs: 1, charges: 1, uploads: 2 });
	});

	test('two different files of the same name and size without a binary id (n8n 1.x keeps files in memory) are two orders', async () => {
		const workflowId = newWorkflow();
		const params = create({ source: 'binary', binaryPropertyName: 'data' });
		const inMemory = (text: string) => ({
			json: {},
			binary: {
				data: {
					data: Buffer.from(text).toString('base64'),
					fileName: 'recording.wav',
					mimeType: 'audio/wav',
				},
			},
		});
		const run = await runCaptioning(sb, params, {
			input: [inMemory('first recording'), inMemory('other recording')],
			workflowId,
		});
		expect(run.failure).toBeUndefined();
		expect(run.items.map((i) => i.json.idempotent_replayed)).toEqual([false, false]);
		expect(new Set(run.items.map((i) => i.json.id)).size).toBe(2);
		expect(counts()).toMatchObject({ jobs: 2, charges: 2, uploads: 2 });
	});

	test('a batch of repeats: all find their earlier orders in one read of the job list (no filter: the interface names none), and upload nothing', async () => {
		const workflowId = newWorkflow();
		const params = create({
			source: 'binary',
			binaryPropertyName: 'data',
			concurrency: 4,
		});
		const names = Array.from({ length: 12 }, (_, n) => `clip${n}`);
		await runCaptioning(sb, params, { input: await videos(names), workflowId });
		sb.resetLedger();
		const run = await runCaptioning(sb, params, { input: await videos(names), workflowId });
		expect(run.items.every((i) => i.json.idempotent_replayed === true)).toBe(true);
		const lookups = sb.ledger.requests.filter((r) => r.route === 'GET /jobs');
		expect(lookups.map((r) => r.query)).toEqual([{ limit: '100' }]);
		expect(sb.ledger.uploads).toHaveLength(0);
		expect(posts()).toHaveLength(0);
	});
});

describe('a repeat never rests on how long the service keeps an Idempotency-Key', () => {
	test.each([
		['Media URL', 'url'],
		['Upload ID', 'upload'],
		['Binary File', 'binary'],
	])(
		'%s: repeated after the service forgot the key, it finds and returns the first job (one job, one charge, no second POST)',
		async (_name, source) => {
			const workflowId = newWorkflow();
			let params = create();
			let input = urls(['kept']);
			if (source === 'upload') {
				const upload = await runCaptioning(
					sb,
					{ resource: 'upload', operation: 'create', binaryPropertyName: 'data' },
					{ input: await videos(['for-upload']) },
				);
				params = create({ source: 'upload', uploadId: String(upload.items[0].json.id) });
			}
			if (source === 'binary') params = create({ source: 'binary', binaryPropertyName: 'data' });
			const inputOf = async () => (source === 'binary' ? await videos(['kept']) : input);
			input = await inputOf();
			const first = await runCaptioning(sb, params, { input, workflowId });
			sb.forgetIdempotencyKeys();
			const before = posts().length;
			const again = await runCaptioning(sb, params, { input: await inputOf(), workflowId });
			expect(again.failure).toBeUndefined();
			expect(again.items[0].json).toMatchObject({
				id: first.items[0].json.id,
				idempotent_replayed: true,
			});
			expect(posts()).toHaveLength(before);
			expect({ jobs: sb.ledger.jobs.length, charges: sb.ledger.charges.length }).toEqual({
				jobs: 1,
				charges: 1,
			});
		},
	);

	test('an earlier order behind 1,200 newer jobs, no record of its job (a manual run keeps none), the key forgotten: that item alone stops, naming it, and orders nothing; the new one beside it is ordered', async () => {
		const workflowId = newWorkflow();
		const params = create({ title: '={{ $json.title }}' });
		const old = { json: { url: `${MEDIA}?file=old-order`, title: 'Old talk' } };
		const first = await runCaptioning(sb, params, { input: [old], workflowId });
		expect(first.failure).toBeUndefined();
		sb.seedHistory(1200);
		sb.forgetIdempotencyKeys();
		sb.resetLedger();
		const fresh = { json: { url: `${MEDIA}?file=new-order`, title: 'New talk' } };
		const again = await runCaptioning(sb, params, { input: [old, fresh], workflowId });
		const tag = (first.items[0].json.metadata as IDataObject).n8n_order as string;
		expect(again.failure?.message).toBe(
			`The order "Old talk" of ${MEDIA}?file=old-order may have been placed before, and was not found`,
		);
		expect(again.failure?.description).toContain(`n8n_order ${tag}`);
		expect(again.failure?.description).toContain('Custom Key with a key not used before');
		expect(again.failure?.description).toMatch(
			/Ordered before the node stopped, and not lost: item 1 → job/,
		);
		expect(sb.ledger.jobs.map((j) => j.body.title)).toEqual(['New talk']);
		const continued = await runCaptioning(sb, params, {
			input: [old, fresh],
			workflowId,
			settings: { onError: 'continueRegularOutput' },
		});
		expect(
			continued.items.map((i) => [i.json.error ?? i.json.title, i.json.idempotent_replayed]),
		).toEqual([
			[expect.stringMatching(/may have been placed before, and was not found$/), undefined],
			['New talk', true],
		]);
	});

	test('a list that lags: a repeat of an order not listed yet stops with the error, and orders nothing', async () => {
		const lagging = await createSandbox({ timing: null, listLagMs: 60000 });
		try {
			const workflowId = newWorkflow();
			await runCaptioning(lagging, create(), { input: urls(['lagging']), workflowId });
			lagging.forgetIdempotencyKeys();
			const again = await runCaptioning(lagging, create(), {
				input: urls(['lagging']),
				workflowId,
			});
			expect(again.failure?.message).toMatch(/may have been placed before, and was not found$/);
			expect(lagging.ledger.jobs).toHaveLength(1);
		} finally {
			await lagging.close();
		}
	});

	test('an order the service refused (402, no funds) is a first order again in the next run: no error, one job', async () => {
		const workflowId = newWorkflow();
		sb.injectFault('POST /jobs', { status: 402, code: 'insufficient_funds', times: 1000 });
		const refused = await runCaptioning(sb, create(), { input: urls(['refused']), workflowId });
		expect(refused.failure).toMatchObject({ httpCode: '402' });
		sb.clearFaults();
		sb.resetLedger();
		const next = await runCaptioning(sb, create(), { input: urls(['refused']), workflowId });
		expect(next.failure).toBeUndefined();
		expect(sb.ledger.requests.map((r) => `${r.route} ${r.status}`)).toEqual(['POST /jobs 201']);
	});

	test.each([
		['made, then answered 500 on every attempt', 'fail-after', 1, 1],
		['answered 500 on every attempt before any job was made', 'status', 1000, 0],
	])(
		'an order %s may be placed: the error says so, and a repeat after the service forgot its keys looks for it, replays it or stops naming it, and never POSTs again',
		async (_name, kind, times, jobs) => {
			const workflowId = newWorkflow();
			const url = `maybe-${kind}`;
			// The first attempt is carried out (or not), then every attempt is answered 500.
			sb.injectFault('POST /jobs', { kind, status: 500, times });
			if (kind === 'fail-after')
				sb.injectFault('POST /jobs', { status: 500, code: 'internal_error', times: 1000 });
			const first = await runCaptioning(sb, create(), { input: urls([url]), workflowId });
			expect(first.failure).toMatchObject({ httpCode: '500' });
			expect(first.failure!.description).toMatch(/a job may exist and be charged/);
			expect(first.failure!.description).not.toMatch(/Run again in a little while\.$/);
			sb.clearFaults();
			sb.forgetIdempotencyKeys();
			sb.resetLedger();
			const repeat = await runCaptioning(sb, create(), { input: urls([url]), workflowId });
			expect(sb.ledger.requests.filter((r) => r.route === 'POST /jobs')).toHaveLength(0);
			const made = sb.ledger.jobs.length;
			expect(made).toBe(0); // the ledger was reset: no job made by the repeat
			if (jobs === 1) {
				expect(repeat.failure).toBeUndefined();
				expect(repeat.items[0].json.idempotent_replayed).toBe(true);
			} else {
				expect(repeat.failure?.message).toMatch(/may have been placed before, and was not found/);
			}
		},
	);

	test('a job list that cannot be read fails every repeat of the run with that error, never with "not found", and orders nothing', async () => {
		const workflowId = newWorkflow();
		const input = urls(['unreadable-1', 'unreadable-2']);
		await runCaptioning(sb, create(), { input, workflowId });
		sb.resetLedger();
		sb.injectFault('GET /jobs', { status: 403, code: 'forbidden', message: 'Injected: no reads' });
		const again = await runCaptioning(sb, create(), {
			input,
			workflowId,
			settings: { onError: 'continueRegularOutput' },
		});
		expect(again.items.map((i) => String(i.json.error))).toEqual([
			expect.stringMatching(/^Injected: no reads/),
			expect.stringMatching(/^Injected: no reads/),
		]);
		expect(sb.ledger.requests.map((r) => `${r.route} ${r.status}`)).toEqual(['GET /jobs 403']);
	});

	test("without n8n's deduplication store (a workflow without an id, as an AI Agent's tool call runs): a first order is placed, a new run sends it again with its key and the service replays it", async () => {
		const first = await runCaptioning(sb, create(), { input: urls(['no-store']), workflowId: '' });
		expect(first.failure).toBeUndefined();
		expect(first.items[0].json.idempotent_replayed).toBe(false);
		const again = await runCaptioning(sb, create(), { input: urls(['no-store']), workflowId: '' });
		expect(again.items[0].json).toMatchObject({
			id: first.items[0].json.id,
			idempotent_replayed: true,
		});
		expect(sb.ledger.requests.map((r) => `${r.route} ${r.status}`)).toEqual([
			'POST /jobs 201',
			'POST /jobs 200',
		]);
		expect(sb.ledger.charges).toHaveLength(1);
	});

	test("a first order reads nothing: n8n's deduplication store says this node never sent it", async () => {
		const run = await runCaptioning(sb, create(), {
			input: urls(['fresh-1', 'fresh-2', 'fresh-3']),
			workflowId: newWorkflow(),
		});
		expect(run.failure).toBeUndefined();
		expect(sb.ledger.requests.map((r) => r.route)).toEqual([
			'POST /jobs',
			'POST /jobs',
			'POST /jobs',
		]);
	});
});

describe("the order's tag takes one of the workspace's metadata keys", () => {
	test('a workspace that takes 5 metadata keys, an order with 5 of its own: refused, nothing charged, the error names the tag and the fix; with 4 it is ordered and a repeat finds it by its tag', async () => {
		const limits = sb.limits as { metadataKeysMax: number };
		const max = limits.metadataKeysMax;
		limits.metadataKeysMax = 5;
		try {
			const pairs = [1, 2, 3, 4, 5].map((n) => ({ key: `k${n}`, value: `v${n}` }));
			const workflowId = newWorkflow();
			const five = create({ options: { metadata: { pair: pairs } } });
			const refused = await runCaptioning(sb, five, { input: urls(['five-keys']), workflowId });
			expect(refused.failure?.message).toMatch(/metadata/);
			expect(refused.failure?.description).toMatch(/n8n_order.*remove one metadata pair/);
			expect(sb.ledger.charges).toHaveLength(0);
			const four = create({ options: { metadata: { pair: pairs.slice(0, 4) } } });
			const tagged = await runCaptioning(sb, four, { input: urls(['four-keys']), workflowId });
			expect(sb.ledger.jobs[0].body.metadata).toHaveProperty('n8n_order');
			sb.forgetIdempotencyKeys();
			const found = await runCaptioning(sb, four, { input: urls(['four-keys']), workflowId });
			expect(found.items[0].json).toMatchObject({
				id: tagged.items[0].json.id,
				idempotent_replayed: true,
			});
			expect({ jobs: sb.ledger.jobs.length, charges: sb.ledger.charges.length }).toEqual({
				jobs: 1,
				charges: 1,
			});
		} finally {
			limits.metadataKeysMax = max;
		}
	});
});

describe("n8n's deduplication store, called per run", () => {
	afterEach(() => setProcessedDelay(0));

	test('a store as slow as a database (50 ms a call): a refused order still stops the batch before the next is sent', async () => {
		setProcessedDelay(50);
		sb.injectFault('POST /jobs', { status: 400, code: 'invalid_request', after: 3, times: 1 });
		const input = urls(['slow-a', 'slow-b', 'slow-c', 'slow-d', 'slow-e']);
		const params = create({ concurrency: 1 });
		const run = await runCaptioning(sb, params, { input, workflowId: newWorkflow() });
		expect(run.failure?.httpCode).toBe('400');
		expect(posts()).toHaveLength(4);
		expect(counts().jobs).toBe(3);
	});

	test('100 first orders, then their repeat: one call to the store each run (it reads and writes the whole record per call)', async () => {
		const workflowId = newWorkflow();
		const input = urls(Array.from({ length: 100 }, (_, n) => `store-${n}`));
		const before = processedCalls();
		const first = await runCaptioning(sb, create(), { input, workflowId, mode: 'trigger' });
		expect(first.failure).toBeUndefined();
		expect(processedCalls() - before).toBe(1);
		const between = processedCalls();
		const repeat = await runCaptioning(sb, create(), { input, workflowId, mode: 'trigger' });
		expect(repeat.failure).toBeUndefined();
		expect(repeat.items.every((i) => i.json.id !== undefined)).toBe(true);
		expect(processedCalls() - between).toBe(1);
		expect(counts().jobs).toBe(100);
		expect(posts()).toHaveLength(100);
	});
});
