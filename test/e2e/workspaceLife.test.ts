// A workspace's whole life, in real n8n over HTTPS (npm run test:e2e), each event delivered once:
// the API key rotated while jobs are in flight, a trigger on a read-only key, a job ordered outside
// n8n, an hourly listing repeated after 1,200 newer jobs (the service keeping its keys, and having
// forgotten them), On Webhook with events 150 s ahead of their jobs' status and with 1,500 newer
// jobs, and n8n's Retry seconds after an order got 500 on every attempt.
// Versions: N8N_E2E_VERSIONS (default 2.41.1 on Node 24, 1.122.5 on Node 20).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import type { Execution } from '../real/executions';
import { executionsApi } from '../real/executions';
import type { N8n } from '../real/instance';
import { createN8n, installN8n, tempFolder, tempJson } from '../real/instance';
import { batchWaitWorkflow, chainWorkflow, node, webhookNode } from '../real/workflows';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const MEDIA = 'https://media.example.com/workspace-life';
/** The credentials: the rotated one (no token), a read-only key, one with a token of its own, one for orders. */
const ROTATED = 'captioningLifeRotated';
const READ_ONLY = 'captioningLifeReadOnly';
const OWN_TOKEN = 'captioningLifeOwnToken';
const ORDERS = 'captioningLifeOrders';
const OUTSIDE_TOKEN = 'a-long-random-text-of-the-users-own-7c1d';
const TRIGGERS = {
	rotated: { workflow: 'wfLifeTrigRotate', webhookId: 'a1f0c2d3-4e5f-4a6b-8c7d-9e0f1a2b3c41' },
	readOnly: { workflow: 'wfLifeTrigRead01', webhookId: 'b2e1d3c4-5f6a-4b7c-9d8e-0f1a2b3c4d52' },
	outside: { workflow: 'wfLifeTrigOwn001', webhookId: 'c3d2e4f5-6a7b-4c8d-8e9f-1a2b3c4d5e63' },
};

const credential = (id: string) => ({ captioningApi: { id, name: id } });

/** Webhook (POST /webhook/<hook>, body {media_url, title}) → Job → Create with the trigger's URL, Don't Wait. */
const orderWorkflow = (id: string, hook: string, triggerUrl: string, credentialId: string) =>
	chainWorkflow(id, `Life: ${id}`, [
		webhookNode(id, hook),
		node(
			id,
			'Order',
			'n8n-nodes-captioning.captioning',
			1,
			{
				resource: 'job',
				operation: 'create',
				source: 'url',
				mediaUrl: '={{ $json.body.media_url }}',
				title: '={{ $json.body.title }}',
				options: { webhookUrl: triggerUrl },
			},
			220,
			{ credentials: credential(credentialId) },
		),
	]);

/** Captioning Trigger (Attach Captions: SRT) → the SRT appended to <folder>/<job id>.srt. */
const triggerWorkflow = (id: string, webhookId: string, credentialId: string, folder: string) =>
	chainWorkflow(id, `Life: ${id}`, [
		node(
			id,
			'Job Event',
			'n8n-nodes-captioning.captioningTrigger',
			2,
			{
				events: ['job.completed', 'job.cancelled'],
				verify: true,
				attachCaptions: true,
				formats: ['srt'],
				binaryPropertyName: 'data',
			},
			0,
			{ webhookId, credentials: credential(credentialId) },
		),
		node(
			id,
			'Write SRT',
			'n8n-nodes-base.readWriteFile',
			1,
			{
				operation: 'write',
				fileName: `=${folder}/{{ $json.id }}.srt`,
				dataPropertyName: 'data',
				options: { append: true },
			},
			220,
		),
	]);

/** Webhook (body {urls}) → one item per URL → Job → Create (Automatic, Don't Wait): an hourly listing's shape. */
const listingWorkflow = (id: string, hook: string) =>
	chainWorkflow(id, `Life: ${id}`, [
		webhookNode(id, hook),
		node(
			id,
			'Each',
			'n8n-nodes-base.splitOut',
			1,
			{ fieldToSplitOut: 'body.urls', options: { destinationFieldName: 'url' } },
			220,
		),
		node(
			id,
			'Order',
			'n8n-nodes-captioning.captioning',
			1,
			{ resource: 'job', operation: 'create', source: 'url', mediaUrl: '={{ $json.url }}' },
			440,
			{ credentials: credential(ORDERS) },
		),
	]);

describe.each(VERSIONS)("n8n %s: a workspace's whole life", (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	/** The key the rotated credential holds first (revoked in the test). */
	let firstKey = '';
	const srts = tempFolder('captioning-life-');
	const { executions, waitFor, runDataOf, activate } = executionsApi(() => n8n);
	const triggerUrl = (webhookId: string) => `${n8n.url}/webhook/${webhookId}/captioning`;
	const urls = (name: string, n: number, from = 0) =>
		Array.from({ length: n }, (_, i) => `${MEDIA}/${name}-${from + i}.mp4`);
	const jobsOf = (list: string[]) =>
		list.map((url) => sb.ledger.jobs.filter((j) => j.body.media_url === url));
	const chargesOf = (list: string[]) => {
		const ids = new Set(jobsOf(list).flatMap((jobs) => jobs.map((j) => j.id)));
		return sb.ledger.charges.filter((c) => ids.has(c.jobId));
	};
	const srtOf = (id: string) => path.join(srts, `${id}.srt`);
	/** Orders one job through an order workflow: its id once the service has it. */
	const orderThrough = async (hook: string, title: string): Promise<string> => {
		const url = `${MEDIA}/${title}.mp4`;
		const res = await n8n.post(`/webhook/${hook}`, { media_url: url, title });
		expect(res.status).toBe(200);
		return await waitFor(`the order of ${title}`, async () => jobsOf([url])[0][0]?.id);
	};
	/**
	 * Completes the jobs (each event delivered once); once every SRT is written: per job, the answers
	 * its event got, and whether its SRT was written once (a second run would append it again).
	 */
	const completeAndCaption = async (jobIds: string[]) => {
		for (const id of jobIds) sb.completeJob(id);
		await sb.settleDeliveries();
		await waitFor('the SRT files', async () =>
			jobIds.every((id) => existsSync(srtOf(id))) ? true : undefined,
		);
		await new Promise((r) => setTimeout(r, 2000));
		return jobIds.map((id) => {
			const srt = readFileSync(srtOf(id), 'utf8');
			const twice = srt.length % 2 === 0 && srt.slice(0, srt.length / 2).repeat(2) === srt;
			const answers = sb.ledger.deliveries.filter((d) => d.jobId === id).map((d) => d.status);
			return [answers, srt.startsWith('1\n') && !twice];
		});
	};
	const finished = async (workflowId: string, since = new Set<string>()) =>
		await waitFor(`an execution of ${workflowId} to end`, async () =>
			(await executions(workflowId)).find(
				(e) => !since.has(e.id) && !['waiting', 'running', 'new'].includes(e.status),
			),
		);
	const ids = async (workflowId: string) =>
		new Set((await executions(workflowId)).map((e) => e.id));

	beforeAll(
		async () => {
			sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
			firstKey = sb.addKey({ name: 'lifeFirst' });
			n8n = await createN8n(await installN8n(version), [srts]);
			n8n.importCredentials(
				[
					{ id: ROTATED, data: { apiKey: firstKey } },
					{ id: READ_ONLY, data: { apiKey: sb.keys.readOnly } },
					{ id: OWN_TOKEN, data: { apiKey: sb.keys.full, webhookToken: OUTSIDE_TOKEN } },
					{ id: ORDERS, data: { apiKey: sb.keys.full } },
				].map(({ id, data }) => ({
					id,
					name: id,
					type: 'captioningApi',
					data: { baseUrl: sb.baseUrl, ...data },
				})),
			);
			n8n.importWorkflows([
				triggerWorkflow(TRIGGERS.rotated.workflow, TRIGGERS.rotated.webhookId, ROTATED, srts),
				triggerWorkflow(TRIGGERS.readOnly.workflow, TRIGGERS.readOnly.webhookId, READ_ONLY, srts),
				triggerWorkflow(TRIGGERS.outside.workflow, TRIGGERS.outside.webhookId, OWN_TOKEN, srts),
				orderWorkflow(
					'wfLifeOrderRot1',
					'life-order-rotated',
					triggerUrl(TRIGGERS.rotated.webhookId),
					ROTATED,
				),
				orderWorkflow(
					'wfLifeOrderRead',
					'life-order-read',
					triggerUrl(TRIGGERS.readOnly.webhookId),
					ORDERS,
				),
				listingWorkflow('wfLifeListing01', 'life-listing'),
				batchWaitWorkflow(
					'wfLifeAhead0001',
					'life-ahead',
					urls('ahead', 2),
					10,
					ORDERS,
					{},
					undefined,
					[
						// Each run of Next asks GET /jobs/<id>?from=next per item (no key: answered 401, ignored).
						node(
							'wfLifeAhead0001',
							'Probe',
							'n8n-nodes-base.httpRequest',
							4.2,
							{
								url: `=${sb.baseUrl}/jobs/{{ $json.id }}?from=next`,
								options: { response: { response: { neverError: true } } },
							},
							1000,
						),
					],
				),
				batchWaitWorkflow('wfLifeHistory01', 'life-history', urls('history', 1), 10, ORDERS),
				...(['a', 'b'] as const).map((retry) =>
					batchWaitWorkflow(
						`wfLifeRetry000${retry}`,
						`life-retry-${retry}`,
						urls(`retry-${retry}`, 5),
						1,
						ORDERS,
						{},
						{
							waitForCompletion: 'none',
							concurrency: 1,
						},
					),
				),
			]);
			await n8n.start();
			await activate([
				...Object.values(TRIGGERS).map((t) => t.workflow),
				'wfLifeOrderRot1',
				'wfLifeOrderRead',
				'wfLifeListing01',
				'wfLifeAhead0001',
				'wfLifeHistory01',
				'wfLifeRetry000a',
				'wfLifeRetry000b',
			]);
		},
		40 * 60 * 1000,
	);

	afterAll(async () => {
		await n8n?.stop();
		await sb?.close();
	});

	test('the API key rotated between three orders and their events, no token set: 3 of 3 runs with their SRT, and 2 of 2 for jobs ordered after it', async () => {
		const before = [];
		for (const n of [1, 2, 3])
			before.push(await orderThrough('life-order-rotated', `rotate-before-${n}`));
		// The user puts a new key of the workspace into the credential; the service revokes the old one.
		const second = sb.addKey({ name: 'lifeSecond' });
		await n8n.cli([
			'import:credentials',
			`--input=${tempJson('life-rotated.json', [{ id: ROTATED, name: ROTATED, type: 'captioningApi', data: { apiKey: second, baseUrl: sb.baseUrl } }])}`,
		]);
		sb.revokeKey(firstKey);
		const ran = await completeAndCaption(before);
		expect(ran).toEqual(before.map(() => [[200], true]));
		const after = [];
		for (const n of [1, 2])
			after.push(await orderThrough('life-order-rotated', `rotate-after-${n}`));
		expect(await completeAndCaption(after)).toEqual(after.map(() => [[200], true]));
		console.log(
			`n8n ${version}: key rotated: ${before.length} of 3 and ${after.length} of 2 runs, each SRT written once`,
		);
	}, 300000);

	test('the trigger on a read-only key, the orders on a full key of the workspace: 2 of 2 runs with their SRT', async () => {
		const ordered = [];
		for (const n of [1, 2]) ordered.push(await orderThrough('life-order-read', `read-only-${n}`));
		expect(await completeAndCaption(ordered)).toEqual(ordered.map(() => [[200], true]));
	}, 300000);

	test("a job ordered outside n8n, as README says (the trigger's Production URL with ?token= and the credential's own Webhook Secret Token): its event starts its run", async () => {
		const res = await fetch(`${sb.baseUrl}/jobs`, {
			method: 'POST',
			headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
			body: JSON.stringify({
				media_url: `${MEDIA}/outside.mp4`,
				webhook_url: `${triggerUrl(TRIGGERS.outside.webhookId)}?token=${OUTSIDE_TOKEN}`,
			}),
		});
		const { id } = (await res.json()) as { id: string };
		expect(await completeAndCaption([id])).toEqual([[[200], true]]);
	}, 300000);

	test.each([
		['keeping its keys', false],
		['having forgotten its keys', true],
	])(
		'20 videos listed, 1,200 other orders, the same 20 and 3 new listed again, the service %s: the 3 ordered once each, none of the 20 charged again, the run succeeds',
		async (name, forget) => {
			const set = forget ? 'forgot' : 'kept';
			const twenty = urls(`listing-${set}`, 20);
			const three = urls(`listing-${set}`, 3, 20);
			const listed = async (list: string[]) => {
				const since = await ids('wfLifeListing01');
				expect((await n8n.post('/webhook/life-listing', { urls: list })).status).toBe(200);
				return await finished('wfLifeListing01', since);
			};
			expect((await listed(twenty)).status).toBe('success');
			await new Promise((r) => setTimeout(r, 1000));
			sb.seedHistory(1200, { withinMs: 500 });
			if (forget) sb.forgetIdempotencyKeys();
			const postsBefore = sb.ledger.requests.filter((r) => r.route === 'POST /jobs').length;
			const again = await listed([...twenty, ...three]);
			expect(again.status).toBe('success');
			expect(jobsOf(twenty).map((jobs) => jobs.length)).toEqual(Array(20).fill(1));
			expect(jobsOf(three).map((jobs) => jobs.length)).toEqual([1, 1, 1]);
			expect(chargesOf([...twenty, ...three])).toHaveLength(23);
			const out = (await runDataOf(again.id)).Order[0].data!.main![0]!;
			expect(out.map((i) => i.json.idempotent_replayed)).toEqual([
				...Array(20).fill(true),
				false,
				false,
				false,
			]);
			console.log(
				`n8n ${version}, the service ${name}: the repeat of 20 behind 1,200 newer jobs and 3 new: ${sb.ledger.requests.filter((r) => r.route === 'POST /jobs').length - postsBefore} POSTs, 23 jobs, 23 charges, the run ${again.status}`,
			);
		},
		300000,
	);

	test('On Webhook, two items whose events come 150 s before reads show the jobs completed: each answered at once, the execution resumes once with both completed, well before its 10-minute Timeout', async () => {
		const list = urls('ahead', 2);
		const since = await ids('wfLifeAhead0001');
		expect((await n8n.post('/webhook/life-ahead', {})).status).toBe(200);
		const waiting = await waitFor('the execution to wait', async () =>
			(await executions('wfLifeAhead0001')).find((e) => !since.has(e.id) && e.status === 'waiting'),
		);
		const jobs = jobsOf(list).map(([job]) => job.id);
		sb.setWebhook({ leadMs: 150000 });
		const completedAt = Date.now();
		try {
			for (const id of jobs) sb.completeJob(id);
			await sb.settleDeliveries();
		} finally {
			sb.setWebhook({ leadMs: 0 });
		}
		const answers = sb.ledger.deliveries.filter((d) => jobs.includes(d.jobId));
		expect(answers.map((d) => [d.attempt, d.status])).toEqual([
			[1, 200],
			[1, 200],
		]);
		expect(Math.max(...answers.map((d) => d.ms ?? Infinity))).toBeLessThan(10000);
		const done = await waitFor(
			'the execution to end',
			async () => {
				const e = (await executions('wfLifeAhead0001')).find((x) => x.id === waiting.id);
				return e && e.status !== 'waiting' && e.status !== 'running' ? e : undefined;
			},
			8 * 60000,
		);
		const endedAfterS = (Date.now() - completedAt) / 1000;
		expect(done.status).toBe('success');
		const next = (await runDataOf(waiting.id)).Next[0].data!.main![0]!;
		expect(next.map((i) => [i.json.id, i.json.status])).toEqual(
			jobs.map((id) => [id, 'completed']),
		);
		expect(endedAfterS).toBeLessThan(300);
		// Both events' reads show the jobs completed at once: the execution resumes once, not twice.
		const probes = sb.ledger.requests.filter((r) => r.query.from === 'next');
		expect(probes.map((r) => r.path).sort()).toEqual(jobs.map((id) => `/jobs/${id}`).sort());
		console.log(
			`n8n ${version}: 2 events 150 s ahead, answered in ${answers.map((d) => d.ms).join(', ')} ms: resumed with both completed ${endedAfterS.toFixed(0)} s after`,
		);
	}, 600000);

	test('On Webhook, 1,500 other orders between the order and its event: it resumes with the job completed', async () => {
		const list = urls('history', 1);
		const since = await ids('wfLifeHistory01');
		expect((await n8n.post('/webhook/life-history', {})).status).toBe(200);
		const waiting: Execution = await waitFor('the execution to wait', async () =>
			(await executions('wfLifeHistory01')).find((e) => !since.has(e.id) && e.status === 'waiting'),
		);
		await new Promise((r) => setTimeout(r, 1000));
		sb.seedHistory(1500, { withinMs: 500 });
		const [[job]] = jobsOf(list);
		sb.completeJob(job.id);
		await sb.settleDeliveries();
		const done = await finished('wfLifeHistory01', since);
		expect(done.id).toBe(waiting.id);
		expect(done.status).toBe('success');
		const next = (await runDataOf(waiting.id)).Next[0].data!.main![0]!;
		expect(next.map((i) => [i.json.id, i.json.status])).toEqual([[job.id, 'completed']]);
	}, 300000);

	test.each([
		['the original workflow (loadWorkflow: false)', 'a', false],
		['the saved workflow (loadWorkflow: true)', 'b', true],
	] as const)(
		"a batch of 5 whose 4th order gets 500 on every attempt, then n8n's Retry with %s a few seconds later: 5 jobs, 5 charges, the retried node outputs all 5 in order",
		async (_name, retry, loadWorkflow) => {
			const workflowId = `wfLifeRetry000${retry}`;
			const list = urls(`retry-${retry}`, 5);
			// From the fourth order on, every attempt is answered 500 (no job made): the orders' outcome is unknown.
			sb.injectFault('POST /jobs', { status: 500, code: 'internal_error', after: 3, times: 1000 });
			const since = await ids(workflowId);
			expect((await n8n.post(`/webhook/life-retry-${retry}`, {})).status).toBe(200);
			const failed = await finished(workflowId, since);
			expect(failed.status).toBe('error');
			expect(jobsOf(list).map((jobs) => jobs.length)).toEqual([1, 1, 1, 0, 0]);
			sb.clearFaults();
			await new Promise((r) => setTimeout(r, 3000));
			const before = await ids(workflowId);
			const res = await n8n.rest('POST', `/executions/${failed.id}/retry`, { loadWorkflow });
			expect(res.status).toBe(200);
			const retried = await finished(workflowId, before);
			expect(retried.status).toBe('success');
			expect(jobsOf(list).map((jobs) => jobs.length)).toEqual([1, 1, 1, 1, 1]);
			expect(chargesOf(list)).toHaveLength(5);
			const out = (await runDataOf(retried.id)).Order[0].data!.main![0]!;
			expect(out.map((i) => [i.json.id, i.json.idempotent_replayed])).toEqual(
				jobsOf(list).map(([job], n) => [job.id, n < 3]),
			);
		},
		300000,
	);
});
