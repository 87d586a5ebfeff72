// Wait for Completion: On Webhook for whole batches, in n8n's engine against the sandbox: the
// execution waits once for all its jobs, the service's events resume it when the last job is final
// (test/engine/waiting.ts plays n8n's waiting webhooks), and a resume by Timeout hands on the jobs.
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import { Captioning } from '../../nodes/Captioning/Captioning.node.js';
import { node } from '../engine/workflow';
import type { WaitingExecution } from '../engine/waiting';
import { runUntilWaiting } from '../engine/waiting';
import { onFastClock, realWait } from '../helpers/clock';
import { MEDIA, orderDirectly, runCaptioning } from '../helpers/captioning';
import { tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';

let sb: Sandbox;
let waiting: WaitingExecution | undefined;
beforeAll(async () => {
	sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
});
afterAll(async () => await sb.close());
beforeEach(() => {
	sb.resetLedger();
	sb.clearFaults();
	sb.setWebhook({ duplicate: false, attempts: 1 });
});
afterEach(async () => {
	await waiting?.close();
	waiting = undefined;
});

let workflows = 0;
const urls = (n: number): INodeExecutionData[] =>
	Array.from({ length: n }, (_, i) => ({ json: { url: `${MEDIA}?batch=${workflows}&item=${i}` } }));

async function orderAndWait(
	input: INodeExecutionData[],
	params: IDataObject = {},
	workflowId = `webhook-wait-${++workflows}`,
): Promise<WaitingExecution> {
	const parameters = {
		resource: 'job',
		operation: 'create',
		source: 'url',
		mediaUrl: '={{ $json.url }}',
		waitForCompletion: 'webhook',
		timeout: 60,
		...params,
	};
	waiting = await runUntilWaiting({
		nodes: [node('Captioning', 'captioning', parameters)],
		nodeName: 'Captioning',
		nodeTypes: { captioning: new Captioning() },
		credentials: { captioningApi: { apiKey: sb.keys.full, baseUrl: sb.baseUrl } },
		input,
		mode: 'webhook',
		workflowId,
	});
	return waiting;
}

const jobIds = () => sb.ledger.jobs.map((j) => j.id);
const reads = () => sb.ledger.requests.filter((r) => r.method === 'GET').length;

test('five items: one wait; events of jobs whose siblings still run are answered and change nothing; the last resumes once, jobs paired in input order', async () => {
	const w = await orderAndWait(urls(5));
	expect(w.first.run.status).toBe('waiting');
	expect(sb.ledger.jobs).toHaveLength(5);
	// Every job was ordered with this execution's resume URL (this node's).
	expect(new Set(sb.ledger.jobs.map((j) => j.body.webhook_url)).size).toBe(1);
	const order = jobIds();
	const readsPerEvent: number[] = [];
	for (const id of order.slice(0, 4).reverse()) {
		const before = reads();
		sb.completeJob(id);
		await sb.settleDeliveries();
		readsPerEvent.push(reads() - before);
	}
	expect(w.answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
	expect(w.answers.map((a) => (a.body as IDataObject).resumed)).toEqual([
		false,
		false,
		false,
		false,
	]);
	const before = reads();
	sb.cancelJob(order[4], 'unsupported_language');
	await sb.settleDeliveries();
	readsPerEvent.push(reads() - before);
	const done = await w.resumed;
	// n8n answers the event that resumed the execution (here with no body).
	expect(w.answers.at(-1)).toEqual({ status: 200, body: {} });
	// An event while siblings are open reads the open lists' first pages, whatever the batch's size;
	// the last one reads them, then the batch once (a page of the job list holds 100).
	expect(readsPerEvent.slice(0, 4).every((n) => n <= 2)).toBe(true);
	expect(readsPerEvent[4]).toBeLessThanOrEqual(4);
	const out = done.output('Captioning');
	expect(out.map((i) => [i.json.id, i.json.status, i.pairedItem])).toEqual(
		order.map((id, i) => [id, i === 4 ? 'cancelled' : 'completed', { item: i }]),
	);
	expect(out[4].json).toMatchObject({
		cancellation: { reason: 'unsupported_language' },
		event_type: 'job.cancelled',
		event_id: expect.stringMatching(/^evt_/),
	});
	expect(out[0].json).toMatchObject({
		event_type: 'job.completed',
		event_id: null,
		idempotent_replayed: false,
	});
	expect(sb.ledger.charges).toHaveLength(5);
});

test('a batch of 150 processing: an event reads the first page of the processing list and its own job, never the whole batch, until the last', async () => {
	const w = await orderAndWait(urls(150));
	const order = jobIds();
	for (const id of order) sb.startJob(id);
	sb.resetLedger();
	for (const id of order.slice(0, 149)) sb.completeJob(id);
	await sb.settleDeliveries();
	// A page of the processing list holds an open job of the batch, and its own job shows completed.
	const routes = sb.ledger.requests.map((r) => r.query.status ?? r.route);
	expect([routes.length, routes.filter((r) => r === 'processing').length]).toEqual([298, 149]);
	expect(routes.filter((r) => r === 'GET /jobs/{id}')).toHaveLength(149);
	sb.resetLedger();
	sb.completeJob(order[149]);
	await sb.settleDeliveries();
	const done = await w.resumed;
	expect(done.output('Captioning').map((i) => i.json.status)).toEqual(Array(150).fill('completed'));
	// The last: a page of each open list (empty), then the batch (two pages), which decides.
	expect(sb.ledger.requests.map((r) => r.query.status ?? 'all')).toEqual([
		'processing',
		'queued',
		'all',
		'all',
	]);
}, 30000);

test('a batch left queued: an event reads the first page of each open list, whatever the batch size', async () => {
	const w = await orderAndWait(urls(20));
	const order = jobIds();
	sb.resetLedger();
	for (const id of order.slice(0, 19)) {
		sb.completeJob(id);
		await sb.settleDeliveries();
	}
	expect(sb.ledger.requests.map((r) => r.query.status)).toEqual(
		Array(19).fill(['processing', 'queued']).flat(),
	);
	sb.resetLedger();
	sb.completeJob(order[19]);
	await sb.settleDeliveries();
	expect((await w.resumed).output('Captioning')).toHaveLength(20);
	expect(sb.ledger.requests.map((r) => r.query.status ?? 'all')).toEqual([
		'processing',
		'queued',
		'all',
	]);
}, 30000);

test("a job of the batch that the open lists' first pages do not show is still waited for: the batch as read decides", async () => {
	const w = await orderAndWait(urls(3));
	const order = jobIds();
	// 100 newer open jobs of another workflow push the batch's last job off the first page.
	for (let n = 0; n < 100; n++) await orderDirectly(sb, { media_url: `${MEDIA}?newer=${n}` });
	sb.completeJob(order[0]);
	sb.completeJob(order[1]);
	await sb.settleDeliveries();
	expect(w.answers.map((a) => [a.status, (a.body as IDataObject).resumed])).toEqual([
		[200, false],
		[200, false],
	]);
	sb.completeJob(order[2]);
	await sb.settleDeliveries();
	expect((await w.resumed).output('Captioning').map((i) => i.json.status)).toEqual(
		Array(3).fill('completed'),
	);
}, 30000);

test('the last two events at the same moment: one resumes the execution, the other is answered that it did not', async () => {
	const w = await orderAndWait(urls(5));
	const order = jobIds();
	for (const id of order.slice(0, 3)) sb.completeJob(id);
	await sb.settleDeliveries();
	sb.completeJob(order[3]);
	sb.completeJob(order[4]);
	await sb.settleDeliveries();
	const done = await w.resumed;
	expect(w.answers.slice(0, 3)).toEqual(
		Array(3).fill({ status: 200, body: { received: true, resumed: false } }),
	);
	expect(w.answers).toHaveLength(5);
	expect(w.answers.slice(3)).toContainEqual({
		status: 200,
		body: { received: true, resumed: false },
	});
	expect(w.handed()).toBe(1);
	expect(done.output('Captioning').map((i) => i.json.status)).toEqual(Array(5).fill('completed'));
});

test('Timeout with no event hands on the jobs as ordered (ids and statuses), never the input items', async () => {
	const w = await orderAndWait(urls(3));
	const done = await w.resumeByTime();
	expect(done.output('Captioning').map((i) => [i.json.id, i.json.status, i.pairedItem])).toEqual(
		jobIds().map((id, i) => [id, 'queued', { item: i }]),
	);
});

test('equal items share one order and one wait: the resume hands the job to each, the second as a replay', async () => {
	const [one] = urls(1);
	const w = await orderAndWait([one, one, { json: { url: `${MEDIA}?another` } }]);
	expect(w.first.run.status).toBe('waiting');
	expect(sb.ledger.jobs).toHaveLength(2);
	for (const id of jobIds()) sb.completeJob(id);
	await sb.settleDeliveries();
	const out = (await w.resumed).output('Captioning');
	const [first, second] = jobIds();
	expect(out.map((i) => [i.json.id, i.pairedItem, i.json.idempotent_replayed])).toEqual([
		[first, { item: 0 }, false],
		[first, { item: 1 }, true],
		[second, { item: 2 }, false],
	]);
});

test('an item that fails (Continue On Fail) keeps its error item: the others are waited for on the webhook, and the resume hands on both, paired', async () => {
	sb.injectFault('POST /jobs', { status: 422, code: 'unprocessable', message: 'Cannot', after: 1 });
	waiting = await runUntilWaiting({
		nodes: [
			node(
				'Captioning',
				'captioning',
				{
					resource: 'job',
					operation: 'create',
					source: 'url',
					mediaUrl: '={{ $json.url }}',
					waitForCompletion: 'webhook',
					timeout: 60,
					concurrency: 1,
				},
				{ continueOnFail: true },
			),
		],
		nodeName: 'Captioning',
		nodeTypes: { captioning: new Captioning() },
		credentials: { captioningApi: { apiKey: sb.keys.full, baseUrl: sb.baseUrl } },
		input: urls(2),
		mode: 'webhook',
	});
	expect(waiting.first.run.status).toBe('waiting');
	sb.completeJob(jobIds()[0]);
	await sb.settleDeliveries();
	const out = (await waiting.resumed).output('Captioning');
	expect(out.map((i) => [i.json.status ?? 'error', i.pairedItem])).toEqual([
		['completed', { item: 0 }],
		['error', { item: 1 }],
	]);
	expect(out[1].json.error).toMatch(/^Cannot/);
});

test('an event of a job this execution does not wait for is refused at once (403), whatever Webhook URL it was ordered with', async () => {
	const w = await orderAndWait(urls(2));
	const [a, b] = jobIds();
	const resumeUrl = String(sb.ledger.jobs[0].body.webhook_url);
	// A job ordered elsewhere with this execution's URL (as a forger who learned it could).
	const other = (await (
		await fetch(`${sb.baseUrl}/jobs`, {
			method: 'POST',
			headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
			body: JSON.stringify({ media_url: `${MEDIA}?elsewhere`, webhook_url: resumeUrl }),
		})
	).json()) as { id: string };
	sb.resetLedger();
	sb.completeJob(other.id);
	await sb.settleDeliveries();
	expect(w.answers.map((x) => x.status)).toEqual([403]);
	expect(sb.ledger.requests.filter((r) => r.method === 'GET')).toHaveLength(0);
	sb.completeJob(a);
	sb.completeJob(b);
	await sb.settleDeliveries();
	const out = (await w.resumed).output('Captioning');
	expect(out.map((i) => i.json.id)).toEqual([a, b]);
});

test('five events, each delivered once and 3 s before reads show its job completed: each answered at once, and the execution resumes once with the five completed jobs', async () => {
	const w = await orderAndWait(urls(5));
	sb.setWebhook({ leadMs: 3000 });
	try {
		for (const id of jobIds()) sb.completeJob(id);
		const done = await w.resumed;
		expect(done.output('Captioning').map((i) => [i.json.id, i.json.status])).toEqual(
			jobIds().map((id) => [id, 'completed']),
		);
		await sb.settleDeliveries();
		expect(sb.ledger.deliveries.map((d) => [d.attempt, d.status])).toEqual(Array(5).fill([1, 200]));
		expect(Math.max(...sb.ledger.deliveries.map((d) => d.ms ?? 0))).toBeLessThan(3000);
		// The five go on reading after their answers, and decide together: one hands n8n the resume.
		await realWait(9000);
		expect(w.handed()).toBe(1);
	} finally {
		sb.setWebhook({ leadMs: 0 });
	}
}, 60000);

test("an event 30 s ahead of its job's status, 45 s into a 1-minute Timeout: answered at once, and never resumes the execution after the Timeout (n8n has by then)", async () => {
	const w = await orderAndWait(urls(1), { timeout: 1 });
	await onFastClock(async () => {
		await new Promise((resolve) => setTimeout(resolve, 45000));
		sb.setWebhook({ leadMs: 30000 });
		sb.completeJob(jobIds()[0]);
		await sb.settleDeliveries();
		await new Promise((resolve) => setTimeout(resolve, 90000));
	});
	sb.setWebhook({ leadMs: 0 });
	expect(w.answers).toEqual([{ status: 200, body: { received: true, resumed: false } }]);
	expect(w.handed()).toBe(0);
}, 60000);

test('in a sub-workflow its parent waits for, On Webhook waits in place (n8n 1.x would hand the parent its own input): the jobs, paired, and a hint that says why', async () => {
	await onFastClock(async () => {
		const running = runCaptioning(
			sb,
			{
				resource: 'job',
				operation: 'create',
				source: 'url',
				mediaUrl: '={{ $json.url }}',
				waitForCompletion: 'webhook',
				timeout: 5,
			},
			{ input: urls(3), mode: 'integrated' },
		);
		while (sb.ledger.jobs.length < 3) await realWait(50);
		// No resume URL was given to the service: nothing will call this execution back.
		expect(sb.ledger.jobs.map((j) => j.body.webhook_url)).toEqual([
			undefined,
			undefined,
			undefined,
		]);
		const order = jobIds();
		for (const id of order) sb.completeJob(id);
		const run = await running;
		expect(run.run.status).toBe('success');
		expect(run.items.map((i) => [i.json.id, i.json.status, i.pairedItem])).toEqual(
			order.map((id, i) => [id, 'completed', { item: i }]),
		);
		expect(run.hints).toEqual([
			{
				message: expect.stringMatching(
					/^On Webhook waited here by checking the jobs every 15 s, as Poll does: this workflow ran as a sub-workflow/,
				),
				location: 'outputPane',
			},
		]);
	});
});

describe('a repeat of an On Webhook order by another execution (a re-run, a schedule, the Retry) pays nothing', () => {
	test.each<[string, IDataObject]>([
		['Automatic', {}],
		['a Custom Key', { idempotency: 'custom', idempotencyKey: `drive-file-${Date.now()}` }],
	])(
		'with %s, after the first resumed: no second job or charge; the repeat ends at once with the completed job',
		async (_name, params) => {
			const workflowId = `webhook-repeat-${++workflows}`;
			const input = urls(1);
			const first = await orderAndWait(input, params, workflowId);
			const [id] = jobIds();
			sb.completeJob(id);
			await sb.settleDeliveries();
			expect((await first.resumed).output('Captioning')[0].json).toMatchObject({
				id,
				status: 'completed',
				idempotent_replayed: false,
			});
			await first.close();

			const repeat = await orderAndWait(input, params, workflowId);
			expect(repeat.first.run.status).toBe('success');
			expect(
				repeat.first
					.output('Captioning')
					.map((i) => [i.json.id, i.json.status, i.json.idempotent_replayed]),
			).toEqual([[id, 'completed', true]]);
			expect(sb.ledger.jobs).toHaveLength(1);
			expect(sb.ledger.charges).toHaveLength(1);
		},
	);

	test('while the first still waits: the repeat checks the job here until it completes (its events go to the first), and says so', async () => {
		await onFastClock(async () => {
			const workflowId = `webhook-repeat-${++workflows}`;
			const input = urls(1);
			const first = await orderAndWait(input, {}, workflowId);
			const [id] = jobIds();
			const reads = () => sb.ledger.requests.filter((r) => r.route === 'GET /jobs/{id}').length;
			const before = reads();
			const repeating = runUntilWaiting({
				nodes: [
					node('Captioning', 'captioning', {
						resource: 'job',
						operation: 'create',
						source: 'url',
						mediaUrl: '={{ $json.url }}',
						waitForCompletion: 'webhook',
						timeout: 60,
					}),
				],
				nodeName: 'Captioning',
				nodeTypes: { captioning: new Captioning() },
				credentials: { captioningApi: { apiKey: sb.keys.full, baseUrl: sb.baseUrl } },
				input,
				mode: 'webhook',
				workflowId,
			});
			// The repeat reads the first order's job (no second POST), then checks the job here.
			while (reads() < before + 2) await realWait(20);
			expect(sb.ledger.requests.filter((r) => r.route === 'POST /jobs')).toHaveLength(1);
			sb.completeJob(id);
			await sb.settleDeliveries();
			const repeat = await repeating;
			expect(repeat.first.run.status).toBe('success');
			expect(
				repeat.first
					.output('Captioning')
					.map((i) => [i.json.id, i.json.status, i.json.idempotent_replayed]),
			).toEqual([[id, 'completed', true]]);
			expect(repeat.first.run.data.resultData.runData.Captioning[0].hints).toEqual([
				expect.objectContaining({ message: expect.stringMatching(/^1 of 1 order replayed/) }),
				expect.objectContaining({
					message: expect.stringMatching(
						/^On Webhook waited here by checking the jobs every 15 s, as Poll does: some orders replayed jobs an earlier execution of this workflow ordered with On Webhook/,
					),
				}),
			]);
			// The first execution resumed from the event as usual.
			expect((await first.resumed).output('Captioning')[0].json).toMatchObject({
				id,
				status: 'completed',
			});
			expect(sb.ledger.jobs).toHaveLength(1);
			expect(sb.ledger.charges).toHaveLength(1);
			await repeat.close();
		});
	});
});
