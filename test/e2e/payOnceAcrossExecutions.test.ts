// Paying once across executions, in real n8n (npm run test:e2e): n8n's own Retry endpoint after a
// partial batch failure (both of its choices), Binary File orders run twice, the Google Drive
// template's order (Binary File, On Webhook, Custom Key or Automatic) run twice, and a crash of n8n
// during a Poll wait followed by the crashed execution's Retry. Each case counts the sandbox's
// jobs and charges. Versions: N8N_E2E_VERSIONS (default 2.41.1 on Node 24, 1.122.5 on Node 20).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import type { S3Server } from '../helpers/s3Bucket';
import { tlsPair } from '../helpers/https';
import { startS3 } from '../helpers/s3Bucket';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import type { N8n } from '../real/instance';
import type { Execution } from '../real/executions';
import { executionsApi } from '../real/executions';
import { createN8n, installN8n, tempFolder, tempJson } from '../real/instance';
import { localS3Setup, s3TemplateCredentials, template, templateFile } from '../real/workflows';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const CREDENTIAL_ID = 'captioningPayOnce';
const MEDIA = 'https://media.example.com/pay-once';

const node = (
	id: string,
	name: string,
	type: string,
	typeVersion: number,
	parameters: object,
	x: number,
	extra: object = {},
) => ({ id: `${id}-${name}`, name, type, typeVersion, parameters, position: [x, 0], ...extra });
const captioning = (id: string, typeVersion: number, parameters: object) =>
	node(
		id,
		'Order',
		'n8n-nodes-captioning.captioning',
		typeVersion,
		{ resource: 'job', operation: 'create', ...parameters },
		600,
		{
			credentials: { captioningApi: { id: CREDENTIAL_ID, name: 'Captioning account' } },
		},
	);
const chain = (names: string[]) =>
	Object.fromEntries(
		names
			.slice(0, -1)
			.map((name, n) => [name, { main: [[{ node: names[n + 1], type: 'main', index: 0 }]] }]),
	);

/** Webhook (POST /webhook/<path>) → the media URLs → one item each → Job → Create → No Operation. */
function urlWorkflow(
	id: string,
	hook: string,
	urls: string[],
	typeVersion: number,
	parameters: object,
): string {
	return tempJson(`${id}.json`, {
		id,
		name: `Pay once: ${id}`,
		versionId: `${id}-v1`,
		active: false,
		settings: { executionOrder: 'v1' },
		nodes: [
			node(
				id,
				'Request',
				'n8n-nodes-base.webhook',
				2,
				{ httpMethod: 'POST', path: hook, responseMode: 'onReceived', options: {} },
				0,
				{ webhookId: `${id}-hook` },
			),
			node(
				id,
				'Media',
				'n8n-nodes-base.set',
				3.4,
				{ mode: 'raw', jsonOutput: JSON.stringify({ urls }) },
				200,
			),
			node(id, 'Each', 'n8n-nodes-base.splitOut', 1, { fieldToSplitOut: 'urls' }, 400),
			captioning(id, typeVersion, { source: 'url', mediaUrl: '={{ $json.urls }}', ...parameters }),
			node(id, 'Next', 'n8n-nodes-base.noOp', 1, {}, 800),
		],
		connections: chain(['Request', 'Media', 'Each', 'Order', 'Next']),
	});
}

/**
 * Manual Trigger (or, with `hook`, a Webhook) → Read Files from Disk (the folder's videos) → Job →
 * Create from the binary → No Operation.
 */
function binaryWorkflow(
	id: string,
	folder: string,
	typeVersion: number,
	parameters: object,
	hook?: string,
): string {
	const start = hook
		? node(
				id,
				'Start',
				'n8n-nodes-base.webhook',
				2,
				{ httpMethod: 'POST', path: hook, responseMode: 'onReceived', options: {} },
				0,
				{ webhookId: `${id}-hook` },
			)
		: node(id, 'Start', 'n8n-nodes-base.manualTrigger', 1, {}, 0);
	return tempJson(`${id}.json`, {
		id,
		name: `Pay once: ${id}`,
		versionId: `${id}-v1`,
		active: false,
		settings: { executionOrder: 'v1' },
		nodes: [
			start,
			node(
				id,
				'Files',
				'n8n-nodes-base.readWriteFile',
				1,
				{ fileSelector: `${folder}/*.mp4`, options: {} },
				200,
			),
			captioning(id, typeVersion, { source: 'binary', binaryPropertyName: 'data', ...parameters }),
			node(id, 'Next', 'n8n-nodes-base.noOp', 1, {}, 800),
		],
		connections: chain(['Start', 'Files', 'Order', 'Next']),
	});
}

describe.each(VERSIONS)('n8n %s: paying once across executions', (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	const work = tempFolder('captioning-pay-once-');
	const urls = (name: string, n: number) =>
		Array.from({ length: n }, (_, i) => `${MEDIA}/${name}-${i}.mp4`);
	const jobsOf = (list: string[]) =>
		sb.ledger.jobs.filter((j) => list.includes(j.body.media_url as string));
	const chargesOf = (list: string[]) => {
		const ids = new Set(jobsOf(list).map((j) => j.id));
		return sb.ledger.charges.filter((c) => ids.has(c.jobId));
	};

	const { executions, waitFor, runDataOf, call, activate } = executionsApi(() => n8n);
	/** n8n's Retry button: a new execution, answered when it ends. Returns the new execution. */
	const retry = async (
		workflowId: string,
		id: string,
		loadWorkflow: boolean,
	): Promise<Execution> => {
		const before = new Set((await executions(workflowId)).map((e) => e.id));
		const res = await n8n.rest('POST', `/executions/${id}/retry`, { loadWorkflow });
		if (res.status !== 200)
			throw new Error(
				`retry of ${id} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`,
			);
		return await waitFor('the retry to be listed', async () =>
			(await executions(workflowId)).find((e) => !before.has(e.id) && e.status !== 'running'),
		);
	};

	const failing = { a: urls('retry-original', 5), b: urls('retry-saved', 5) };
	const waiting = urls('crash', 3);
	const hooked = [
		'wfPayRetryOrig1',
		'wfPayRetrySaved',
		'wfPayCrashPoll1',
		'wfPayHookCustom',
		'wfPayHookAuto01',
	];

	let s3: S3Server;

	beforeAll(
		async () => {
			sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
			s3 = await startS3();
			n8n = await createN8n(await installN8n(version), [work]);
			n8n.importCredentials([
				{
					id: CREDENTIAL_ID,
					name: 'Captioning account',
					type: 'captioningApi',
					data: { apiKey: sb.keys.full, baseUrl: sb.baseUrl },
				},
			]);
			// One order at a time, so that the fourth fails after three went through.
			n8n.importWorkflows([
				urlWorkflow('wfPayRetryOrig1', 'pay-once-original', failing.a, 1, {
					concurrency: 1,
				}),
				urlWorkflow('wfPayRetrySaved', 'pay-once-saved', failing.b, 1, {
					concurrency: 1,
				}),
				urlWorkflow('wfPayCrashPoll1', 'pay-once-crash', waiting, 1, {
					waitForCompletion: 'poll',
					pollInterval: 2,
					timeout: 30,
				}),
			]);
			for (const [id, typeVersion, parameters] of [
				[
					'wfPayBinCustom1',
					1,
					{ idempotency: 'custom', idempotencyKey: '={{ "drive-" + $binary.data.fileName }}' },
				],
				['wfPayBinAuto001', 1, {}],
			] as const) {
				const folder = path.join(work, id);
				mkdirSync(folder, { recursive: true });
				for (const name of ['lecture', 'interview'])
					writeFileSync(
						path.join(folder, `${name}.mp4`),
						Buffer.alloc(2 * 1024 * 1024, `${id} ${name}`),
					);
				n8n.importWorkflows([binaryWorkflow(id, folder, typeVersion, parameters)]);
			}
			// The Google Drive template's order node: Binary File, On Webhook, Custom Key (and the same with Automatic).
			for (const [id, hook, parameters] of [
				[
					'wfPayHookCustom',
					'pay-once-hook-custom',
					{ idempotency: 'custom', idempotencyKey: '={{ "drive-" + $binary.data.fileName }}' },
				],
				['wfPayHookAuto01', 'pay-once-hook-auto', {}],
			] as const) {
				const folder = path.join(work, id);
				mkdirSync(folder, { recursive: true });
				for (const name of ['talk', 'workshop'])
					writeFileSync(
						path.join(folder, `${name}.mp4`),
						Buffer.alloc(1024 * 1024, `${id} ${name}`),
					);
				n8n.importWorkflows([
					binaryWorkflow(
						id,
						folder,
						1,
						{ ...parameters, waitForCompletion: 'webhook', timeout: 240 },
						hook,
					),
				]);
			}
			n8n.importCredentials(s3TemplateCredentials(s3));
			n8n.importWorkflows([
				templateFile(
					template(
						's3-captions',
						{ 'YOUR-BUCKET': s3.bucket },
						localS3Setup({ id: CREDENTIAL_ID, name: 'Captioning account' }),
					),
					'wfPayS3Template',
				),
			]);
			await n8n.start();
			await activate(hooked);
		},
		40 * 60 * 1000,
	);

	beforeEach(() => sb?.clearFaults());

	afterAll(async () => {
		await n8n?.stop();
		await sb?.close();
		await s3?.close();
	});

	test.each([
		[
			'the original workflow (loadWorkflow: false)',
			'wfPayRetryOrig1',
			'pay-once-original',
			'a',
			false,
		],
		['the saved workflow (loadWorkflow: true)', 'wfPayRetrySaved', 'pay-once-saved', 'b', true],
	] as const)(
		"a batch fails at its fourth order; n8n's Retry with %s: every item one job, one charge",
		async (_name, workflowId, hook, list, loadWorkflow) => {
			// From the fourth order on, the service refuses (402, no funds: no job made), so the execution
			// fails with three orders placed. (A 500 may be a placed order: its repeat stops, naming it,
			// test/node/payOnce.test.ts.)
			sb.injectFault('POST /jobs', {
				status: 402,
				code: 'insufficient_funds',
				after: 3,
				times: 1000,
			});
			expect(await call(hook)).toBe(200);
			const failed = await waitFor('the execution to fail', async () =>
				(await executions(workflowId)).find((e) => e.status === 'error'),
			);
			const orderedFirst = jobsOf(failing[list]).map((j) => j.id);
			expect(orderedFirst).toHaveLength(3);

			sb.clearFaults();
			const retried = await retry(workflowId, failed.id, loadWorkflow);
			expect(jobsOf(failing[list])).toHaveLength(5);
			expect(chargesOf(failing[list])).toHaveLength(5);
			const out = (await runDataOf(retried.id)).Order[0].data!.main![0]!;
			expect(out.map((i) => i.json.media)).toEqual(
				failing[list].map((url) => expect.objectContaining({ url })),
			);
			expect(
				out
					.filter((i) => i.json.idempotent_replayed === true)
					.map((i) => i.json.id)
					.sort(),
			).toEqual([...orderedFirst].sort());
			console.log(
				`n8n ${version}, Retry (loadWorkflow: ${loadWorkflow}): 5 items → ${jobsOf(failing[list]).length} jobs, ${chargesOf(failing[list]).length} charges; ${orderedFirst.length} replayed`,
			);
		},
		240000,
	);

	test.each([
		['Custom Key (the templates)', 'wfPayBinCustom1'],
		['Automatic', 'wfPayBinAuto001'],
	])(
		'Binary File with %s, run twice: one upload, one job and one charge per file; the second run replayed, no 409',
		async (_name, workflowId) => {
			const before = {
				jobs: sb.ledger.jobs.length,
				uploads: sb.ledger.uploads.length,
				charges: sb.ledger.charges.length,
			};
			const postsBefore = sb.ledger.requests.filter((r) => r.route === 'POST /jobs').length;
			const startedAt = Date.now();
			await n8n.cli(['execute', `--id=${workflowId}`]);
			await n8n.cli(['execute', `--id=${workflowId}`]);
			const after = {
				jobs: sb.ledger.jobs.length - before.jobs,
				uploads: sb.ledger.uploads.length - before.uploads,
				charges: sb.ledger.charges.length - before.charges,
			};
			expect(after).toEqual({ jobs: 2, uploads: 2, charges: 2 });
			const statuses = sb.ledger.requests
				.filter((r) => r.route === 'POST /jobs')
				.slice(postsBefore)
				.map((r) => r.status);
			// The second run finds each order in the job list: no second POST.
			expect(statuses.sort()).toEqual([201, 201]);
			const lookups = sb.ledger.requests
				.filter((r) => r.route === 'GET /jobs')
				.filter((r) => r.at >= startedAt).length;
			console.log(
				`n8n ${version}, ${workflowId} run twice: 2 files → ${after.uploads} uploads, ${after.jobs} jobs, ${after.charges} charges, POST /jobs ${statuses.join(',')}, ${lookups} reads of the job list`,
			);
		},
		240000,
	);

	test.each([
		['a Custom Key (the Google Drive template)', 'wfPayHookCustom', 'pay-once-hook-custom'],
		['Automatic', 'wfPayHookAuto01', 'pay-once-hook-auto'],
	])(
		'On Webhook with %s, run twice with the same files (the second once the first has ended): one job and one charge per file, both executions success with the completed jobs',
		async (_name, workflowId, hook) => {
			const before = { jobs: sb.ledger.jobs.length, charges: sb.ledger.charges.length };
			expect(await call(hook)).toBe(200);
			const first = await waitFor('the first execution to wait', async () =>
				(await executions(workflowId)).find((e) => e.status === 'waiting'),
			);
			const ordered = sb.ledger.jobs.slice(before.jobs).map((j) => j.id);
			expect(ordered).toHaveLength(2);
			for (const id of ordered) sb.completeJob(id);
			await sb.settleDeliveries();
			await waitFor('the first execution to resume', async () =>
				(await executions(workflowId)).find((e) => e.id === first.id)?.status === 'success'
					? true
					: undefined,
			);

			expect(await call(hook)).toBe(200);
			const second = await waitFor('the second execution to end', async () =>
				(await executions(workflowId)).find(
					(e) => e.id !== first.id && !['new', 'running', 'waiting'].includes(e.status),
				),
			);
			expect(second.status).toBe('success');
			expect({
				jobs: sb.ledger.jobs.length - before.jobs,
				charges: sb.ledger.charges.length - before.charges,
			}).toEqual({ jobs: 2, charges: 2 });
			const next = (await runDataOf(second.id)).Next[0].data!.main![0]!;
			expect(next.map((i) => [i.json.status, i.json.idempotent_replayed]).sort()).toEqual([
				['completed', true],
				['completed', true],
			]);
			expect(next.map((i) => i.json.id).sort()).toEqual([...ordered].sort());
			console.log(
				`n8n ${version}, On Webhook ${workflowId} run twice: 2 files → 2 jobs, 2 charges; the second execution ${second.status} with the completed jobs, replayed`,
			);
		},
		240000,
	);

	test("n8n is killed during a Poll wait; after the restart, the crashed execution's Retry pays for nothing more and hands on the jobs first ordered", async () => {
		expect(await call('pay-once-crash')).toBe(200);
		await waitFor('three orders', async () => (jobsOf(waiting).length === 3 ? true : undefined));
		const first = jobsOf(waiting).map((j) => j.id);
		await new Promise((r) => setTimeout(r, 2500)); // a poll round or so into the wait
		await n8n.kill();
		await n8n.start();
		const crashed = await waitFor('the execution to be marked crashed', async () =>
			(await executions('wfPayCrashPoll1')).find((e) => e.status === 'crashed'),
		);

		const postsBefore = sb.ledger.requests.filter((r) => r.route === 'POST /jobs').length;
		const retriedAt = Date.now();
		const retrying = retry('wfPayCrashPoll1', crashed.id, false);
		// The retry finds each order in the job list (one read, no POST); the jobs finish while it waits for them.
		await waitFor('the retry to read the job list', async () =>
			sb.ledger.requests.some((r) => r.route === 'GET /jobs' && r.at >= retriedAt)
				? true
				: undefined,
		);
		for (const id of first) sb.completeJob(id);
		const retried = await retrying;
		expect(retried.status).toBe('success');
		expect(jobsOf(waiting)).toHaveLength(3);
		expect(chargesOf(waiting)).toHaveLength(3);
		expect(sb.ledger.requests.filter((r) => r.route === 'POST /jobs').length).toBe(postsBefore);
		const next = (await runDataOf(retried.id)).Next[0].data!.main![0]!;
		expect(next.map((i) => [i.json.id, i.json.status, i.json.idempotent_replayed])).toEqual(
			waiting.map((url) => [jobsOf([url])[0].id, 'completed', true]),
		);
		console.log(
			`n8n ${version}, crash during Poll then Retry: 3 items → ${jobsOf(waiting).length} jobs, ${chargesOf(waiting).length} charges`,
		);
	}, 300000);

	test('the S3 template run against a real S3-compatible server: the service fetches each new video from S3, n8n reads no media byte, nothing is ordered twice, and a video whose order was refused (402) is ordered by the next run', async () => {
		await s3.put('incoming/keynote.mp4', Buffer.alloc(1024 * 1024, 'keynote'));
		await s3.put('incoming/panel.mp4', Buffer.alloc(1024 * 1024, 'panel'));
		// Captions land next to the videos: the template's filter must not order them as videos.
		await s3.put('incoming/earlier.srt', '1\n00:00:00,000 --> 00:00:01,000\nHello\n');
		// n8n's own reads of an object (the AWS S3 node signs in a header; the service's fetch carries the signature in the query).
		const n8nReads = () =>
			s3.requests.filter(
				(r) =>
					r.method === 'GET' &&
					/\/incoming\/[^?]+\.mp4/.test(r.url) &&
					!r.url.includes('X-Amz-Signature'),
			).length;
		const s3Jobs = () =>
			sb.ledger.jobs.filter((j) =>
				String((j.body.metadata as Record<string, string> | undefined)?.s3_key ?? '').startsWith(
					'incoming/',
				),
			);
		const s3Posts = () =>
			sb.ledger.requests.filter(
				(r) =>
					r.route === 'POST /jobs' &&
					String(
						(r.body as { metadata?: Record<string, string> } | undefined)?.metadata?.s3_key ?? '',
					).startsWith('incoming/'),
			);
		const fetchedOk = () =>
			sb.ledger.mediaFetches.filter((f) => f.url.includes('/incoming/') && f.status === 206).length;

		await n8n.cli(['execute', '--id=wfPayS3Template']);
		expect({
			n8nReads: n8nReads(),
			uploads: sb.ledger.uploads.filter((u) => /keynote|panel/.test(String(u.filename))).length,
			jobs: s3Jobs().length,
		}).toEqual({ n8nReads: 0, uploads: 0, jobs: 2 });
		expect(s3Jobs().map((j) => j.body.metadata)).toEqual(
			expect.arrayContaining([
				expect.objectContaining({ s3_bucket: s3.bucket, s3_key: 'incoming/keynote.mp4' }),
				expect.objectContaining({ s3_bucket: s3.bucket, s3_key: 'incoming/panel.mp4' }),
			]),
		);
		await sb.settleDeliveries();
		expect(fetchedOk()).toBe(2);

		const listed = s3.requests.filter((r) => r.url.includes('list-type=2')).length;
		await n8n.cli(['execute', '--id=wfPayS3Template']);
		expect(s3.requests.filter((r) => r.url.includes('list-type=2')).length).toBe(listed + 1);
		expect({ n8nReads: n8nReads(), jobs: s3Jobs().length, orders: s3Posts().length }).toEqual({
			n8nReads: 0,
			jobs: 2,
			orders: 2,
		});

		// A new object: only it is checked and ordered.
		await s3.put('incoming/q-and-a.mp4', Buffer.alloc(1024 * 1024, 'q and a'));
		await n8n.cli(['execute', '--id=wfPayS3Template']);
		expect({ n8nReads: n8nReads(), jobs: s3Jobs().length, orders: s3Posts().length }).toEqual({
			n8nReads: 0,
			jobs: 3,
			orders: 3,
		});
		await sb.settleDeliveries();
		expect(fetchedOk()).toBe(3);

		// A new object whose order is refused (no funds): nothing records it, the next run orders it.
		await s3.put('incoming/funded-later.mp4', Buffer.alloc(1024 * 1024, 'funded later'));
		sb.injectFault('POST /jobs', {
			status: 402,
			code: 'insufficient_funds',
			message: 'The prepaid balance does not cover this order.',
		});
		const refused = () =>
			sb.ledger.requests.filter((r) => r.route === 'POST /jobs' && r.status === 402).length;
		const refusedBefore = refused();
		await n8n.cli(['execute', '--id=wfPayS3Template']).catch(() => undefined);
		// (The sandbox records no body for a refusal it injects: the 402 is counted by its status.)
		expect({ jobs: s3Jobs().length, orders: s3Posts().length, refused: refused() }).toEqual({
			jobs: 3,
			orders: 3,
			refused: refusedBefore + 1,
		});
		await n8n.cli(['execute', '--id=wfPayS3Template']);
		expect({ jobs: s3Jobs().length, orders: s3Posts().length }).toEqual({ jobs: 4, orders: 4 });
		expect(s3Jobs().map((j) => (j.body.metadata as Record<string, string>).s3_key)).toContain(
			'incoming/funded-later.mp4',
		);
		console.log(
			`n8n ${version}, S3 template run 3 times (2 objects, then a third): n8n's GETs of a video ${n8nReads()}, ${s3Jobs().length} jobs, ${s3Posts().length} orders sent, the service fetched ${fetchedOk()} from S3`,
		);
	}, 240000);
});
