// Wait for Completion: On Webhook for whole batches, in real n8n over HTTPS (npm run test:e2e):
// five items resumed once by the service's events, under a per-workflow execution time limit
// shorter than the jobs; a restart of n8n during the wait; the last two events at the same moment;
// a Timeout with no event (the jobs handed on as ordered); equal rows (a duplicated sheet row) with On Webhook and with Poll, each
// item's wait ending. Versions: N8N_E2E_VERSIONS (default 2.41.1 on Node 24, 1.122.5 on Node 20).
import { tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import type { N8n } from '../real/instance';
import type { Execution } from '../real/executions';
import { executionsApi } from '../real/executions';
import { createN8n, installN8n, tempJson } from '../real/instance';
import { batchWaitWorkflow } from '../real/workflows';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const CREDENTIAL_ID = 'captioningWebhookWait';
const MEDIA = 'https://media.example.com/batch-wait';

describe.each(VERSIONS)('n8n %s: On Webhook waits for whole batches', (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	const urls = (name: string, n: number) =>
		Array.from({ length: n }, (_, i) => `${MEDIA}/${name}-${i}.mp4`);
	const equal = (name: string) => [`${MEDIA}/${name}.mp4`, `${MEDIA}/${name}.mp4`];
	const lists = {
		five: urls('five', 5),
		poll: urls('poll', 2),
		restart: urls('restart', 3),
		race: urls('race', 4),
		ahead: urls('ahead', 5),
		kill: urls('kill', 2),
		timeout: urls('timeout', 2),
		equalHook: equal('equal-hook'),
		equalPoll: equal('equal-poll'),
	};
	const jobsOf = (list: string[]) =>
		list.map((url) => sb.ledger.jobs.find((j) => j.body.media_url === url)!).filter(Boolean);

	const { executions, waitFor, runDataOf, call, activate } = executionsApi(() => n8n);
	/** Starts the workflow and waits until its execution waits, with every job ordered. */
	const startWaiting = async (
		workflowId: string,
		hook: string,
		list: string[],
	): Promise<Execution> => {
		expect(await call(hook)).toBe(200);
		await waitFor('the orders', async () =>
			jobsOf(list).length === list.length ? true : undefined,
		);
		return await waitFor('the execution to wait', async () =>
			(await executions(workflowId)).find((e) => e.status === 'waiting'),
		);
	};
	const finished = async (workflowId: string, id: string) =>
		await waitFor(`execution ${id} to finish`, async () => {
			const e = (await executions(workflowId)).find((x) => x.id === id);
			return e && !['waiting', 'running', 'new'].includes(e.status) ? e : undefined;
		});
	/**
	 * The Timeout test's execution: started by the first of the tests that run during its minute of
	 * waiting (none of them stops n8n), or by the Timeout test itself when it runs alone.
	 */
	let timeoutRun: Promise<{ waiting: Execution; done: Execution }> | undefined;
	const timeoutWait = () =>
		(timeoutRun ??= (async () => {
			const waiting = await startWaiting('wfBatchWaitTime', 'batch-wait-timeout', lists.timeout);
			return { waiting, done: await finished('wfBatchWaitTime', waiting.id) };
		})());
	const deliveries = (list: string[]) => {
		const ids = new Set(jobsOf(list).map((j) => j.id));
		return sb.ledger.deliveries.filter((d) => ids.has(d.jobId));
	};
	const hooked = [
		'wfBatchWaitFive',
		'wfBatchPollLimit',
		'wfBatchWaitBoot',
		'wfBatchWaitRace',
		'wfBatchWaitAhead',
		'wfBatchWaitKill',
		'wfBatchWaitTime',
		'wfEqualRowsHook',
		'wfEqualRowsPoll',
	];

	beforeAll(
		async () => {
			sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
			n8n = await createN8n(await installN8n(version));
			await n8n.cli([
				'import:credentials',
				`--input=${tempJson('credentials.json', [{ id: CREDENTIAL_ID, name: 'Captioning account', type: 'captioningApi', data: { apiKey: sb.keys.full, baseUrl: sb.baseUrl } }])}`,
			]);
			// A per-workflow execution time limit of 20 s, shorter than its jobs take (n8n Cloud limits every execution so).
			n8n.importWorkflows([
				batchWaitWorkflow('wfBatchWaitFive', 'batch-wait-five', lists.five, 30, CREDENTIAL_ID, {
					executionTimeout: 20,
				}),
				// The same limit with Wait: Poll, to show it bites.
				batchWaitWorkflow(
					'wfBatchPollLimit',
					'batch-poll-limit',
					lists.poll,
					30,
					CREDENTIAL_ID,
					{ executionTimeout: 20 },
					{ waitForCompletion: 'poll', pollInterval: 2 },
				),
				batchWaitWorkflow(
					'wfBatchWaitBoot',
					'batch-wait-restart',
					lists.restart,
					30,
					CREDENTIAL_ID,
				),
				batchWaitWorkflow('wfBatchWaitRace', 'batch-wait-race', lists.race, 30, CREDENTIAL_ID),
				batchWaitWorkflow('wfBatchWaitAhead', 'batch-wait-ahead', lists.ahead, 30, CREDENTIAL_ID),
				batchWaitWorkflow('wfBatchWaitKill', 'batch-wait-kill', lists.kill, 30, CREDENTIAL_ID),
				batchWaitWorkflow('wfBatchWaitTime', 'batch-wait-timeout', lists.timeout, 1, CREDENTIAL_ID),
				batchWaitWorkflow('wfEqualRowsHook', 'equal-rows-hook', lists.equalHook, 30, CREDENTIAL_ID),
				batchWaitWorkflow(
					'wfEqualRowsPoll',
					'equal-rows-poll',
					lists.equalPoll,
					1,
					CREDENTIAL_ID,
					{},
					{ waitForCompletion: 'poll', pollInterval: 2 },
				),
			]);
			await n8n.start();
			await activate(hooked);
		},
		40 * 60 * 1000,
	);

	afterAll(async () => {
		await n8n?.stop();
		await sb?.close();
	});

	test('n8n is stopped and started again while the batch waits: the events resume it afterwards', async () => {
		const waiting = await startWaiting('wfBatchWaitBoot', 'batch-wait-restart', lists.restart);
		const [first, ...rest] = jobsOf(lists.restart);
		sb.completeJob(first.id);
		await sb.settleDeliveries();
		await n8n.kill();
		await n8n.start();
		await waitFor('the execution to wait again', async () =>
			(await executions('wfBatchWaitBoot')).find((e) => e.id === waiting.id)?.status === 'waiting'
				? true
				: undefined,
		);
		for (const job of rest) sb.completeJob(job.id);
		await sb.settleDeliveries();
		const done = await finished('wfBatchWaitBoot', waiting.id);
		expect(done.status).toBe('success');
		const next = (await runDataOf(waiting.id)).Next[0].data!.main![0]!;
		expect(next.map((i) => i.json.status)).toEqual(['completed', 'completed', 'completed']);
	}, 300000);

	test('the last two events at the same moment: the execution resumed once (an event that finds it resumed is answered 500 by n8n)', async () => {
		const waiting = await startWaiting('wfBatchWaitRace', 'batch-wait-race', lists.race);
		const jobs = jobsOf(lists.race);
		for (const job of jobs.slice(0, 2)) sb.completeJob(job.id);
		await sb.settleDeliveries();
		sb.completeJob(jobs[2].id);
		sb.completeJob(jobs[3].id);
		await sb.settleDeliveries();
		const done = await finished('wfBatchWaitRace', waiting.id);
		expect(done.status).toBe('success');
		const statuses = deliveries(lists.race).map((d) => d.status);
		expect(statuses.slice(0, 2)).toEqual([200, 200]);
		expect(statuses.every((s) => s === 200 || s === 500)).toBe(true);
		expect(await executions('wfBatchWaitRace')).toHaveLength(1);
		const next = (await runDataOf(waiting.id)).Next[0].data!.main![0]!;
		expect(next.map((i) => i.json.status)).toEqual(Array(4).fill('completed'));
		console.log(
			`n8n ${version}: the last two of 4 events at once: answers ${statuses.join(', ')}; 1 resume`,
		);
	}, 300000);

	test('five events, each delivered once 3 s before reads show its job completed: the execution resumes with the five completed jobs', async () => {
		const waiting = await startWaiting('wfBatchWaitAhead', 'batch-wait-ahead', lists.ahead);
		const jobs = jobsOf(lists.ahead);
		sb.setWebhook({ leadMs: 3000 });
		try {
			for (const job of jobs) sb.completeJob(job.id);
			await sb.settleDeliveries();
		} finally {
			sb.setWebhook({ leadMs: 0 });
		}
		const done = await finished('wfBatchWaitAhead', waiting.id);
		expect(done.status).toBe('success');
		expect(deliveries(lists.ahead).map((d) => d.attempt)).toEqual(Array(5).fill(1));
		const next = (await runDataOf(waiting.id)).Next[0].data!.main![0]!;
		expect(next.map((i) => [i.json.id, i.json.status])).toEqual(
			jobs.map((j) => [j.id, 'completed']),
		);
		console.log(
			`n8n ${version}: 5 events 3 s ahead of their jobs' status: answers ${deliveries(lists.ahead)
				.map((d) => d.status)
				.join(', ')}; 1 resume`,
		);
	}, 300000);

	test('n8n killed right after it answered the event that resumed the execution: the execution is not left waiting (it ended with the jobs, or it is crashed, for its Retry)', async () => {
		const waiting = await startWaiting('wfBatchWaitKill', 'batch-wait-kill', lists.kill);
		const jobs = jobsOf(lists.kill);
		sb.completeJob(jobs[0].id);
		await sb.settleDeliveries();
		sb.completeJob(jobs[1].id);
		await waitFor('the last event answered', async () =>
			deliveries(lists.kill).every((d) => d.status !== null) && deliveries(lists.kill).length === 2
				? true
				: undefined,
		);
		await n8n.kill();
		await n8n.start();
		const done = await finished('wfBatchWaitKill', waiting.id);
		console.log(
			`n8n ${version}: killed right after the resume was answered (${deliveries(lists.kill)
				.map((d) => d.status)
				.join(', ')}): the execution ${done.status}`,
		);
		expect(['success', 'crashed']).toContain(done.status);
		if (done.status === 'success') {
			const next = (await runDataOf(waiting.id)).Next[0].data!.main![0]!;
			expect(next.map((i) => i.json.status)).toEqual(['completed', 'completed']);
		}
	}, 300000);

	test('five items, jobs finishing seconds apart past the execution time limit: one resume, five final jobs, paired, in input order', async () => {
		// The Timeout test's minute of waiting goes by during this test and the next.
		void timeoutWait().catch(() => undefined);
		const waiting = await startWaiting('wfBatchWaitFive', 'batch-wait-five', lists.five);
		const jobs = jobsOf(lists.five);
		// One resume URL for every order: this execution's, this node's.
		expect(new Set(jobs.map((j) => j.body.webhook_url)).size).toBe(1);
		// Finishing in reverse input order, 6 s apart: 24 s in all, past the workflow's 20 s limit.
		const readsBefore = sb.ledger.requests.filter((r) => r.method === 'GET').length;
		for (const [n, job] of [...jobs].reverse().entries()) {
			if (n > 0) await new Promise((r) => setTimeout(r, 6000));
			if (n === 2) sb.cancelJob(job.id, 'unsupported_media');
			else sb.completeJob(job.id);
			await sb.settleDeliveries();
		}
		const done = await finished('wfBatchWaitFive', waiting.id);
		expect(done.status).toBe('success');
		expect(deliveries(lists.five).map((d) => d.status)).toEqual([200, 200, 200, 200, 200]);
		const reads = sb.ledger.requests.filter((r) => r.method === 'GET').length - readsBefore;
		const next = (await runDataOf(waiting.id)).Next[0].data!.main![0]!;
		expect(next.map((i) => [i.json.id, i.json.status])).toEqual(
			jobs.map((j, i) => [j.id, i === 2 ? 'cancelled' : 'completed']),
		);
		expect((await executions('wfBatchWaitFive')).filter((e) => e.id !== waiting.id)).toHaveLength(
			0,
		);
		console.log(
			`n8n ${version}: 5 items On Webhook, events 6 s apart (24 s > the 20 s limit): one resume, ${reads} reads for 5 events`,
		);
	}, 300000);

	test('the same 20 s limit ends a Poll wait (the control): the execution is stopped, nothing reaches the next node', async () => {
		expect(await call('batch-poll-limit')).toBe(200);
		await waitFor('the orders', async () => (jobsOf(lists.poll).length === 2 ? true : undefined));
		const stopped = await waitFor(
			'the execution to be stopped',
			async () =>
				(await executions('wfBatchPollLimit')).find(
					(e) => !['running', 'new', 'waiting'].includes(e.status),
				),
			90000,
		);
		expect(['canceled', 'error']).toContain(stopped.status);
		expect((await runDataOf(stopped.id)).Next).toBeUndefined();
		console.log(`n8n ${version}: Poll under the 20 s limit: ${stopped.status}`);
	}, 180000);

	test('Timeout with no event: the next node gets the jobs as ordered (ids and statuses), never items that look finished', async () => {
		const { waiting, done } = await timeoutWait();
		expect(done.status).toBe('success');
		const next = (await runDataOf(waiting.id)).Next[0].data!.main![0]!;
		expect(next.map((i) => [i.json.id, i.json.status])).toEqual(
			jobsOf(lists.timeout).map((j) => [j.id, 'queued']),
		);
		expect(jobsOf(lists.timeout).map((j) => sb.job(j.id).status)).toEqual(['queued', 'queued']);
	}, 300000);

	test('equal rows with On Webhook: one job, and its event resumes both items', async () => {
		const waiting = await startWaiting(
			'wfEqualRowsHook',
			'equal-rows-hook',
			lists.equalHook.slice(0, 1),
		);
		const [job] = jobsOf(lists.equalHook.slice(0, 1));
		expect(sb.ledger.jobs.filter((j) => j.body.media_url === lists.equalHook[0])).toHaveLength(1);
		sb.completeJob(job.id);
		await sb.settleDeliveries();
		const done = await finished('wfEqualRowsHook', waiting.id);
		expect(done.status).toBe('success');
		const next = (await runDataOf(waiting.id)).Next[0].data!.main![0]!;
		expect(next.map((i) => [i.json.id, i.json.status])).toEqual([
			[job.id, 'completed'],
			[job.id, 'completed'],
		]);
	}, 300000);

	test('equal rows with Poll: one job, both items end when it completes, well within the Timeout', async () => {
		expect(await call('equal-rows-poll')).toBe(200);
		await waitFor('the order', async () =>
			jobsOf(lists.equalPoll.slice(0, 1)).length === 1 ? true : undefined,
		);
		const [job] = jobsOf(lists.equalPoll.slice(0, 1));
		await new Promise((r) => setTimeout(r, 3000));
		sb.completeJob(job.id);
		const done = await waitFor(
			'the execution to end',
			async () =>
				(await executions('wfEqualRowsPoll')).find(
					(e) => !['running', 'new', 'waiting'].includes(e.status),
				),
			50000,
		);
		expect(done.status).toBe('success');
		const next = (await runDataOf(done.id)).Next[0].data!.main![0]!;
		expect(next.map((i) => [i.json.id, i.json.status])).toEqual([
			[job.id, 'completed'],
			[job.id, 'completed'],
		]);
	}, 120000);
});
