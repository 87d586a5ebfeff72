// The package in real n8n (npm run test:e2e): installed as users install it, credentials tested
// with n8n's own tester, the example workflows run, the trigger's webhook served over HTTPS and
// called by the sandbox. Versions: N8N_E2E_VERSIONS (default 2.41.1 on Node 24, 1.122.5 on Node 20).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { httpReceiver, tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import { executionsApi } from '../real/executions';
import type { N8n } from '../real/instance';
import { createN8n, installN8n, tempFolder, tempJson } from '../real/instance';
import { TEMPLATE_DISK, template, templateFile } from '../real/workflows';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const CREDENTIAL_ID = 'captioningSandbox';
const TRIGGER_WEBHOOK_ID = '3f0c1b7e-6a2d-4c55-9e1a-7b8c9d0e1f2a';
const TOKEN = 'change-me';
const examples = path.resolve(__dirname, '../../examples');

/**
 * A template as a user sets it up: its folder on disk this test's, its Webhook URL this n8n's, its
 * media a link the sandbox serves, and Poll every 2 s (the sandbox finishes a job in 2 s; the
 * template keeps n8n's defaults).
 */
function example(name: string, id: string, work: string, n8nUrl: string): string {
	const replace = {
		[TEMPLATE_DISK]: work,
		'https://YOUR-N8N-ADDRESS': n8nUrl,
		'https://YOUR-MEDIA-HOST/path/to/video.mp4':
			'https://media.example.com/keynote.mp4?duration=90',
	};
	return templateFile(
		template(name, replace, (wf) => {
			for (const n of wf.nodes)
				if (n.parameters.waitForCompletion === 'poll') n.parameters.pollInterval = 2;
		}),
		id,
	);
}

/**
 * Manual Trigger → Set (three URLs) → Split Out → Captioning (Job → Create) with the given On
 * Error setting, each of its outputs into a No Operation node. Item 0 is ordered; item 1 is refused
 * by the node (ftp://), item 2 by the service (a title over 300 characters: HTTP 400).
 */
function onErrorWorkflow(
	id: string,
	onError: 'continueErrorOutput' | 'continueRegularOutput',
	typeVersion: number,
): string {
	const urls = [
		'https://media.example.com/on-error.mp4',
		'ftp://x',
		'https://media.example.com/long-title.mp4',
	];
	const node = (
		name: string,
		type: string,
		typeVersion: number,
		parameters: object,
		x: number,
		extra: object = {},
	) => ({ id: `${id}-${name}`, name, type, typeVersion, parameters, position: [x, 0], ...extra });
	return tempJson(`${id}.json`, {
		id,
		name: `On error: ${onError}`,
		versionId: `${id}-v1`,
		active: false,
		settings: {},
		nodes: [
			node('Start', 'n8n-nodes-base.manualTrigger', 1, {}, 0),
			node(
				'Media',
				'n8n-nodes-base.set',
				3.4,
				{ mode: 'raw', jsonOutput: JSON.stringify({ urls }) },
				200,
			),
			node('Each', 'n8n-nodes-base.splitOut', 1, { fieldToSplitOut: 'urls' }, 400),
			node(
				'Captioning',
				'n8n-nodes-captioning.captioning',
				typeVersion,
				{
					resource: 'job',
					operation: 'create',
					source: 'url',
					mediaUrl: '={{ $json.urls }}',
					title: `={{ $json.urls.includes("long-title") ? "${'x'.repeat(301)}" : "" }}`,
				},
				600,
				{
					onError,
					credentials: { captioningApi: { id: CREDENTIAL_ID, name: 'Captioning account' } },
				},
			),
			node('Ordered', 'n8n-nodes-base.noOp', 1, {}, 800),
			node('Failed', 'n8n-nodes-base.noOp', 1, {}, 800),
		],
		connections: {
			Start: { main: [[{ node: 'Media', type: 'main', index: 0 }]] },
			Media: { main: [[{ node: 'Each', type: 'main', index: 0 }]] },
			Each: { main: [[{ node: 'Captioning', type: 'main', index: 0 }]] },
			Captioning: {
				main: [
					[{ node: 'Ordered', type: 'main', index: 0 }],
					[{ node: 'Failed', type: 'main', index: 0 }],
				],
			},
		},
	});
}

type RunData = Record<
	string,
	Array<{
		data?: { main?: Array<Array<{ json: Record<string, unknown>; pairedItem?: unknown }> | null> };
	}>
>;

/** The run data of `n8n execute --rawOutput` (2.x prints log lines before the JSON). */
function runDataOf(stdout: string): RunData {
	// The JSON from its first line that opens it to the first that closes it (n8n may log after it).
	const start = stdout.indexOf('\n{') + 1;
	const json = stdout.slice(start, stdout.indexOf('\n}', start) + 2);
	return (JSON.parse(json) as { data: { resultData: { runData: RunData } } }).data.resultData
		.runData;
}

interface Execution {
	id: string;
	workflowId: string;
	status: string;
	finished: boolean;
}

describe.each(VERSIONS)('n8n %s', (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	const work = tempFolder('captioning-e2e-');
	const triggerUrl = () => `${n8n.url}/webhook/${TRIGGER_WEBHOOK_ID}/captioning?token=${TOKEN}`;

	const executions = async (workflowId: string) => {
		const res = await n8n.rest<{ results?: Execution[] } | Execution[]>(
			'GET',
			`/executions?filter=${encodeURIComponent(JSON.stringify({ workflowId }))}`,
		);
		const body = res.body;
		return Array.isArray(body) ? body : (body.results ?? []);
	};
	const waitFor = async <T>(probe: () => Promise<T | undefined>, ms = 30000): Promise<T> => {
		const deadline = Date.now() + ms;
		for (;;) {
			const value = await probe();
			if (value !== undefined) return value;
			if (Date.now() > deadline) {
				const notable = n8n
					.log()
					.split('\n')
					.filter((l) => /error|poll|problem|activat|captioning/i.test(l))
					.slice(-40)
					.join('\n');
				const reads = sb.ledger.requests
					.filter((r) => r.method === 'GET')
					.slice(-15)
					.map(
						(r) =>
							`${new Date(r.at).toISOString()} ${r.path} ${JSON.stringify(r.query)} ${r.status}`,
					)
					.join('\n');
				const polls = await executions('wfPollFinished1').catch((e: Error) => e.message);
				throw new Error(
					`timed out; n8n log, notable lines:\n${notable}\n…last lines:\n${n8n.log().slice(-2000)}\nthe service's last reads:\n${reads}\npolling executions: ${JSON.stringify(polls).slice(0, 1500)}`,
				);
			}
			await new Promise((r) => setTimeout(r, 300));
		}
	};

	/**
	 * n8n 1.x: a CLI import writes no workflow_history row, which activation looks up. Saving the
	 * workflow once through the REST API (as the editor does) writes it.
	 */
	const activateOn1x = async (id: string) => {
		type Wf = { versionId: string; nodes: unknown[]; connections: unknown; name: string };
		const wf = await n8n.rest<Wf>('GET', `/workflows/${id}`);
		const saved = await n8n.rest<Wf>('PATCH', `/workflows/${id}`, {
			name: wf.body.name,
			nodes: wf.body.nodes,
			connections: wf.body.connections,
			versionId: wf.body.versionId,
		});
		const res = await n8n.rest('PATCH', `/workflows/${id}`, {
			active: true,
			versionId: saved.body.versionId,
		});
		if (res.status !== 200)
			throw new Error(`activation of ${id} failed: ${JSON.stringify(res.body).slice(0, 500)}`);
	};

	beforeAll(
		async () => {
			sb = await createSandbox({
				timing: { queuedMs: 300, processingMs: 1500 },
				webhook: { ca: tlsPair().cert },
			});
			n8n = await createN8n(await installN8n(version));
			mkdirSync(path.join(work, 'inbox'), { recursive: true });
			mkdirSync(path.join(work, 'captions'), { recursive: true });
			mkdirSync(path.join(work, 'polled'), { recursive: true });
			writeFileSync(path.join(work, 'inbox', 'interview.mp4'), Buffer.alloc(3 * 1024 * 1024, 7));
			await n8n.cli([
				'import:credentials',
				`--input=${tempJson('credentials.json', [{ id: CREDENTIAL_ID, name: 'Captioning account', type: 'captioningApi', data: { apiKey: sb.keys.full, baseUrl: sb.baseUrl, webhookToken: TOKEN } }])}`,
			]);
			// The polling example, writing with Append on: a job reported twice would double its file.
			const polling = JSON.parse(
				readFileSync(example('poll-finished-jobs', 'wfPollFinished1', work, n8n.url), 'utf8'),
			) as { nodes: Array<{ name: string; parameters: Record<string, unknown> }> };
			polling.nodes.find((n) => n.name === 'Write SRT')!.parameters.options = { append: true };
			// Polls every 15 s rather than every minute: the same trigger, less waiting.
			polling.nodes.find((n) => n.name === 'Job Finished')!.parameters.pollTimes = {
				item: [0, 15, 30, 45].map((second) => ({
					mode: 'custom',
					cronExpression: `${second} * * * * *`,
				})),
			};
			n8n.importWorkflows([
				...[
					['order-and-wait', 'wfOrderAndWait01'],
					['store-captions', 'wfStoreCaptions1'],
					['caption-new-files', 'wfCaptionFiles01'],
					['order-and-wait-webhook', 'wfOrderOnEvent01'],
					['google-drive-captions', 'wfDriveCaptions1'],
					['s3-captions', 'wfS3Captions0001'],
				].map(([name, id]) => example(name, id, work, n8n.url)),
				tempJson('poll.json', polling),
				onErrorWorkflow('wfOnErrorOutput1', 'continueErrorOutput', 1),
				onErrorWorkflow('wfOnErrorRegular', 'continueRegularOutput', 1),
			]);
		},
		40 * 60 * 1000,
	);

	afterAll(async () => {
		await n8n?.stop();
		await sb?.close();
	});

	test('the order-and-wait example runs from the CLI and writes the captions to disk', async () => {
		const { stdout } = await n8n.cli(['execute', '--id=wfOrderAndWait01', '--rawOutput']);
		expect(stdout).toContain('Keynote');
		const files = readdirSync(path.join(work, 'captions')).sort();
		expect(files).toEqual(expect.arrayContaining(['Keynote.srt', 'Keynote.vtt']));
		expect(readFileSync(path.join(work, 'captions', 'Keynote.srt'), 'utf8')).toMatch(
			/^1\n00:00:00,000 --> /,
		);
		expect(readFileSync(path.join(work, 'captions', 'Keynote.vtt'), 'utf8')).toMatch(/^WEBVTT/);
		expect(sb.ledger.jobs).toHaveLength(1);
		expect(sb.ledger.jobs[0].body).toMatchObject({ title: 'Keynote', glossary: ['Kubernetes'] });
	}, 120000);

	test('On Error "Continue (using error output)" sends failed items down the error output; "regular output" keeps them on the first', async () => {
		const jobsBefore = sb.ledger.jobs.length;
		const errorOutput = runDataOf(
			(await n8n.cli(['execute', '--id=wfOnErrorOutput1', '--rawOutput'])).stdout,
		);
		const [ordered, failed] = errorOutput.Captioning[0].data!.main!;
		expect(ordered!.map((i) => [i.pairedItem, i.json.object, i.json.status])).toEqual([
			[{ item: 0 }, 'job', 'queued'],
		]);
		expect(failed!.map((i) => i.pairedItem)).toEqual([{ item: 1 }, { item: 2 }]);
		expect(failed![0].json).toEqual({
			urls: 'ftp://x',
			error: {
				message: 'Media URL "ftp://x" is not an http(s) URL',
				description: expect.stringMatching(/public http/),
			},
		});
		expect(failed![1].json).toEqual({
			urls: 'https://media.example.com/long-title.mp4',
			error: {
				message: 'title must be 1-300 characters. [HTTP 400 invalid_parameter]',
				description: expect.stringContaining('Field: title.'),
				httpCode: '400',
				code: 'invalid_parameter',
				param: 'title',
				requestId: expect.stringMatching(/^req_/),
			},
		});
		// The branches downstream ran with those items.
		expect(errorOutput.Ordered[0].data!.main![0]).toHaveLength(1);
		expect(errorOutput.Failed[0].data!.main![0]).toHaveLength(2);

		const regular = runDataOf(
			(await n8n.cli(['execute', '--id=wfOnErrorRegular', '--rawOutput'])).stdout,
		);
		const outputs = regular.Captioning[0].data!.main!;
		expect(outputs.filter((o) => o?.length)).toHaveLength(1);
		expect(outputs[0]!.map((i) => i.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
		expect(outputs[0]![1].json).toEqual({
			error: 'Media URL "ftp://x" is not an http(s) URL',
			description: expect.stringMatching(/public http/),
		});
		expect(outputs[0]![2].json).toMatchObject({
			error: expect.stringMatching(/^title must be/),
			httpCode: '400',
			code: 'invalid_parameter',
			param: 'title',
		});
		expect(regular.Failed).toBeUndefined();
		expect(sb.ledger.jobs.length - jobsBefore).toBe(2);
	}, 120000);

	test("n8n's HTTP Request node with the Captioning API credential reads an endpoint under the Base URL; the key goes nowhere else, redirects included", async () => {
		const elsewhere = await httpReceiver((_req, res) => res.end('{"object":"account"}'));
		try {
			// 4.2: what workflows made before 4.4 keep, where n8n copies Authorization onto a redirect to another origin.
			const request = (name: string, url: string, x: number, typeVersion = 4.2) => ({
				id: `http-${name}`,
				name,
				type: 'n8n-nodes-base.httpRequest',
				typeVersion,
				position: [x, 0],
				parameters: {
					method: 'GET',
					url,
					authentication: 'predefinedCredentialType',
					nodeCredentialType: 'captioningApi',
					options: {},
				},
				credentials: { captioningApi: { id: CREDENTIAL_ID, name: 'Captioning account' } },
				onError: 'continueRegularOutput',
			});
			await n8n.cli([
				'import:workflow',
				`--input=${tempJson('http-request.json', {
					id: 'wfHttpRequest001',
					name: 'HTTP Request with Captioning API',
					versionId: 'wfHttpRequest001-v1',
					active: false,
					settings: {},
					nodes: [
						{
							id: 'http-start',
							name: 'Start',
							type: 'n8n-nodes-base.manualTrigger',
							typeVersion: 1,
							position: [0, 0],
							parameters: {},
						},
						request('Account', `${sb.baseUrl}/account`, 200),
						request('Elsewhere', `${elsewhere.url}/v1/account`, 400),
						// A URL under the Base URL that answers 302 to another origin.
						request('Redirected', `${sb.baseUrl}/account`, 600),
					],
					connections: {
						Start: { main: [[{ node: 'Account', type: 'main', index: 0 }]] },
						Account: { main: [[{ node: 'Elsewhere', type: 'main', index: 0 }]] },
						Elsewhere: { main: [[{ node: 'Redirected', type: 'main', index: 0 }]] },
					},
				})}`,
			]);
			const before = sb.ledger.requests.length;
			sb.injectFault('GET /account', {
				kind: 'redirect',
				status: 302,
				location: `${elsewhere.url}/stolen`,
				after: 1,
			});
			const run = runDataOf(
				(await n8n.cli(['execute', '--id=wfHttpRequest001', '--rawOutput'])).stdout,
			);
			expect(run.Account[0].data!.main![0]![0].json).toMatchObject({ object: 'account' });
			expect(sb.ledger.requests.slice(before).map((r) => `${r.route} ${r.status}`)).toEqual([
				'GET /account 200',
				'GET /account 302',
			]);
			expect(JSON.stringify(run.Elsewhere[0].data!.main![0]![0].json)).toMatch(
				/sends its API key only to addresses under its Base URL/,
			);
			// The redirect is not followed: the other origin receives nothing, the key least of all.
			expect(JSON.stringify(run.Redirected[0].data!.main![0]![0].json)).toMatch(/302/);
			expect(elsewhere.received).toEqual([]);
		} finally {
			await elsewhere.close();
		}
	}, 120000);

	test('every example was imported, and uses only node types, versions and parameters this n8n has', async () => {
		type Described = {
			name: string;
			version: number | number[];
			properties: Array<{ name: string }>;
		};
		const base = JSON.parse(
			readFileSync(
				path.join(n8n.install.dir, 'node_modules/n8n-nodes-base/dist/types/nodes.json'),
				'utf8',
			),
		) as Described[];
		const exported = path.join(tempFolder('n8n-export-'), 'all.json');
		await n8n.cli(['export:workflow', '--all', `--output=${exported}`]);
		const names = (JSON.parse(readFileSync(exported, 'utf8')) as Array<{ name: string }>).map(
			(w) => w.name,
		);
		for (const file of readdirSync(examples).filter((f) => f.endsWith('.json'))) {
			const wf = JSON.parse(readFileSync(path.join(examples, file), 'utf8')) as {
				name: string;
				nodes: Array<{
					name: string;
					type: string;
					typeVersion: number;
					parameters: Record<string, unknown>;
				}>;
			};
			expect(names).toContain(wf.name);
			for (const node of wf.nodes.filter((n) => n.type.startsWith('n8n-nodes-base.'))) {
				const described = base.filter(
					(d) =>
						d.name === node.type.replace('n8n-nodes-base.', '') &&
						[d.version].flat().includes(node.typeVersion),
				);
				expect({
					file,
					node: node.name,
					type: `${node.type}@${node.typeVersion}`,
					exists: described.length > 0,
				}).toMatchObject({ exists: true });
				const defined = new Set(described.flatMap((d) => d.properties.map((p) => p.name)));
				expect({
					file,
					node: node.name,
					unknown: Object.keys(node.parameters).filter((k) => !defined.has(k)),
				}).toMatchObject({ unknown: [] });
			}
		}
	});

	describe('with n8n serving HTTPS', () => {
		const subStep = (
			id: string,
			name: string,
			type: string,
			typeVersion: number,
			parameters: object,
			x: number,
			extra: object = {},
		) => ({ id, name, type, typeVersion, parameters, position: [x, 0], ...extra });
		beforeAll(
			async () => {
				// A sub-workflow (its parent: the sub-workflow test), published: 2.x runs only a published one.
				n8n.importWorkflows([
					tempJson('sub-child.json', {
						id: 'wfSubChild000001',
						name: 'Sub-workflow: order and wait On Webhook',
						versionId: 'wfSubChild000001-v1',
						active: false,
						settings: { callerPolicy: 'any' },
						nodes: [
							subStep('sub-in', 'When Called', 'n8n-nodes-base.executeWorkflowTrigger', 1, {}, 0),
							subStep(
								'sub-order',
								'Order',
								'n8n-nodes-captioning.captioning',
								1,
								{
									resource: 'job',
									operation: 'create',
									source: 'url',
									mediaUrl: '={{ $json.urls }}',
									waitForCompletion: 'webhook',
									timeout: 5,
								},
								200,
								{
									credentials: { captioningApi: { id: CREDENTIAL_ID, name: 'Captioning account' } },
								},
							),
						],
						connections: { 'When Called': { main: [[{ node: 'Order', type: 'main', index: 0 }]] } },
					}),
				]);
				await n8n.start();
				// Published (2.x) or activated (1.x) over REST, as the editor does: a CLI run each would boot n8n.
				if (version.startsWith('2.'))
					await executionsApi(() => n8n).activate([
						'wfSubChild000001',
						'wfStoreCaptions1',
						'wfOrderOnEvent01',
					]);
				else for (const id of ['wfStoreCaptions1', 'wfOrderOnEvent01']) await activateOn1x(id);
			},
			5 * 60 * 1000,
		);

		test('a sub-workflow ordering with On Webhook hands its parent the completed jobs, paired (it waits in place, since n8n 1.x would hand the parent its own input back)', async () => {
			const urls = ['https://media.example.com/sub-a.mp4', 'https://media.example.com/sub-b.mp4'];
			await n8n.cli([
				'import:workflow',
				`--input=${tempJson('sub-parent.json', {
					id: 'wfSubParent00001',
					name: 'Parent calling the sub-workflow',
					versionId: 'wfSubParent00001-v1',
					active: false,
					settings: {},
					nodes: [
						subStep('par-start', 'Start', 'n8n-nodes-base.manualTrigger', 1, {}, 0),
						subStep(
							'par-media',
							'Media',
							'n8n-nodes-base.set',
							3.4,
							{ mode: 'raw', jsonOutput: JSON.stringify({ urls }) },
							200,
						),
						subStep(
							'par-each',
							'Each',
							'n8n-nodes-base.splitOut',
							1,
							{ fieldToSplitOut: 'urls' },
							400,
						),
						subStep(
							'par-call',
							'Caption in Sub-workflow',
							'n8n-nodes-base.executeWorkflow',
							1,
							{
								source: 'database',
								workflowId: 'wfSubChild000001',
								options: { waitForSubWorkflow: true },
							},
							600,
						),
					],
					connections: {
						Start: { main: [[{ node: 'Media', type: 'main', index: 0 }]] },
						Media: { main: [[{ node: 'Each', type: 'main', index: 0 }]] },
						Each: { main: [[{ node: 'Caption in Sub-workflow', type: 'main', index: 0 }]] },
					},
				})}`,
			]);
			const jobsBefore = sb.ledger.jobs.length;
			const run = runDataOf(
				(await n8n.cli(['execute', '--id=wfSubParent00001', '--rawOutput'])).stdout,
			);
			// The two orders go out together, so the service may get them in either order.
			const ordered = sb.ledger.jobs.slice(jobsBefore);
			expect(ordered.map((j) => j.body.media_url).sort()).toEqual([...urls].sort());
			const jobOf = (url: string) => ordered.find((j) => j.body.media_url === url)!.id;
			const out = run['Caption in Sub-workflow'][0].data!.main![0]!;
			expect(
				out.map((i) => [
					i.json.id,
					i.json.status,
					(i.json.media as { url?: string } | undefined)?.url,
				]),
			).toEqual(urls.map((url) => [jobOf(url), 'completed', url]));
		}, 180000);

		test("n8n's credential test passes a good key and explains a bad one", async () => {
			const check = async (apiKey: string, baseUrl = sb.baseUrl) =>
				(
					await n8n.rest<{ status: string; message: string }>('POST', '/credentials/test', {
						credentials: {
							id: CREDENTIAL_ID,
							name: 'Captioning account',
							type: 'captioningApi',
							data: { apiKey, baseUrl },
						},
					})
				).body;
			expect(await check(sb.keys.full)).toMatchObject({ status: 'OK' });
			expect(await check('sk_wrong')).toEqual({
				status: 'Error',
				message: expect.stringMatching(/The API key is wrong \(401\)/),
			});
			expect(await check(sb.keys.revoked)).toEqual({
				status: 'Error',
				message: expect.stringMatching(/revoked/),
			});
			expect(await check(sb.keys.full, 'http://127.0.0.1:9/v1')).toEqual({
				status: 'Error',
				message: expect.stringMatching(/ECONNREFUSED|refused/),
			});
		});

		test("a job event POSTed over HTTPS by the sandbox starts exactly one run; a duplicate, another workspace's job, a replay under a new id and another job's event are taken and go no further; an event ahead of its job's status runs once reads show it", async () => {
			const api = executionsApi(() => n8n);
			const afterId = await api.newestId();
			sb.setWebhook({ duplicate: true });
			const order = async (body: Record<string, unknown>, key = sb.keys.full) =>
				(await (
					await fetch(`${sb.baseUrl}/jobs`, {
						method: 'POST',
						headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
						body: JSON.stringify(body),
					})
				).json()) as { id: string };
			const post = async (eventId: string, data: unknown) =>
				await n8n.post(`/webhook/${TRIGGER_WEBHOOK_ID}/captioning?token=${TOKEN}`, {
					id: eventId,
					object: 'event',
					type: 'job.completed',
					created_at: new Date().toISOString(),
					data,
				});
			const job = await order({
				media_url: 'https://media.example.com/weekly.mp4',
				title: 'Weekly Show',
				webhook_url: triggerUrl(),
			});
			sb.completeJob(job.id);
			await sb.settleDeliveries();
			expect(sb.ledger.deliveries.filter((d) => d.jobId === job.id).map((d) => d.status)).toEqual([
				200, 200,
			]);
			sb.setWebhook({ duplicate: false });
			await waitFor(async () =>
				existsSync(path.join(work, 'captions', 'Weekly Show.vtt')) ? true : undefined,
			);
			expect(readFileSync(path.join(work, 'captions', 'Weekly Show.srt'), 'utf8')).toMatch(/^1\n/);

			const other = await order(
				{ media_url: 'https://media.example.com/x.mp4' },
				sb.keys.otherWorkspace,
			);
			expect((await post('evt_forged', sb.completeJob(other.id))).status).toBe(200);
			// The job's event again under a new id (the same news).
			expect((await post('evt_replayed_new_id', sb.job(job.id))).status).toBe(200);
			// A completed job of this workspace that was ordered without the trigger's URL.
			const elsewhere = await order({ media_url: 'https://media.example.com/dashboard.mp4' });
			expect((await post('evt_not_ours', sb.completeJob(elsewhere.id))).status).toBe(200);
			// An event whose job does not show its status yet (its own events go to a dead port): taken
			// at once; its run reads until the job shows completed.
			sb.setTiming(null);
			const early = await order({
				media_url: 'https://media.example.com/early.mp4',
				title: 'Early',
				webhook_url: `https://127.0.0.1:9/webhook/${TRIGGER_WEBHOOK_ID}/captioning?token=${TOKEN}`,
			});
			sb.setTiming({ queuedMs: 300, processingMs: 1500 });
			expect((await post('evt_not_yet', { ...sb.job(early.id), status: 'completed' })).status).toBe(
				200,
			);
			await new Promise((r) => setTimeout(r, 2000));
			expect(existsSync(path.join(work, 'captions', 'Early.srt'))).toBe(false);
			sb.completeJob(early.id);
			await waitFor(async () =>
				existsSync(path.join(work, 'captions', 'Early.srt')) ? true : undefined,
			);
			await api.untilEnded('wfStoreCaptions1');
			const runs = await api.jobsByExecution('wfStoreCaptions1', 'Captions Ready', afterId);
			expect(runs).toHaveLength(6);
			expect(runs.flatMap((r) => r.jobs).sort()).toEqual([job.id, early.id].sort());
		}, 120000);

		test("n8n runs the Captioning Trigger's execute() after its webhook() (n8n-core's dispatch, which n8n-workflow does not document): a planted body comes out as the job read back", async () => {
			const api = executionsApi(() => n8n);
			const afterId = await api.newestId();
			const job = (await (
				await fetch(`${sb.baseUrl}/jobs`, {
					method: 'POST',
					headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
					body: JSON.stringify({
						media_url: 'https://media.example.com/dispatch.mp4',
						title: 'Dispatch',
						webhook_url: `https://127.0.0.1:9/webhook/${TRIGGER_WEBHOOK_ID}/captioning`,
					}),
				})
			).json()) as { id: string };
			const planted = { ...sb.completeJob(job.id), title: 'Planted' };
			const res = await n8n.post(`/webhook/${TRIGGER_WEBHOOK_ID}/captioning?token=${TOKEN}`, {
				id: 'evt_dispatch',
				object: 'event',
				type: 'job.completed',
				created_at: new Date().toISOString(),
				data: planted,
			});
			expect(res.status).toBe(200);
			await api.untilEnded('wfStoreCaptions1');
			const [run] = (await api.executions('wfStoreCaptions1')).filter(
				(e) => Number(e.id) > afterId,
			);
			const [item] = (await api.runDataOf(run.id))['Captions Ready'][0].data!.main![0]!;
			// webhook() hands on the body unverified; only execute() reads the job back.
			expect(item.json).toMatchObject({ id: job.id, title: 'Dispatch', verified: true });
		}, 120000);

		test('the Webhook Secret Token lives in the credentials: deliveries without it or with a wrong one are refused 401, and no workflow as n8n exports it holds it', async () => {
			const event = {
				id: 'evt_without_token',
				object: 'event',
				type: 'job.completed',
				created_at: new Date().toISOString(),
				data: { id: '00000000-0000-4000-8000-000000000000', object: 'job' },
			};
			const path0 = `/webhook/${TRIGGER_WEBHOOK_ID}/captioning`;
			expect((await n8n.post(path0, event)).status).toBe(401);
			expect((await n8n.post(`${path0}?token=wrong-${TOKEN}`, event)).status).toBe(401);
			const out = path.join(work, 'exported-workflows.json');
			await n8n.cli(['export:workflow', '--all', `--output=${out}`]);
			const exported = readFileSync(out, 'utf8');
			expect(exported).toContain('wfStoreCaptions1');
			expect(exported).toContain('wfCaptionFiles01');
			expect(exported).not.toContain(TOKEN);
		});

		test('caption-new-files uploads the file and orders with the trigger URL; the event makes store-captions write them', async () => {
			const before = (await executions('wfStoreCaptions1')).length;
			const { stdout } = await n8n.cli(['execute', '--id=wfCaptionFiles01', '--rawOutput']);
			// (Binary data in the output cut short, so that a failure shows what n8n said.)
			expect(stdout.replace(/[A-Za-z0-9+/=]{200,}/g, '…')).toContain('idempotent_replayed');
			// The execution's data (its items, the node context) holds the Webhook URL's token masked only.
			expect(stdout).toContain('token=***');
			const sent = String(sb.ledger.jobs.at(-1)!.body.webhook_url);
			expect(stdout).not.toContain(sent.split('token=')[1]);
			const upload = sb.ledger.uploads.at(-1)!;
			expect(upload).toMatchObject({
				filename: 'interview.mp4',
				receivedBytes: 3 * 1024 * 1024,
				complete: true,
				authorizationSeen: false,
			});
			// The template's Webhook URL is the trigger's Production URL; Job → Create adds the
			// workspace's token (not the credential's own, which is for orders from outside n8n).
			const job = sb.ledger.jobs.at(-1)!;
			expect(job.body).toMatchObject({
				upload_id: upload.id,
				title: 'interview.mp4',
				// Job → Create adds the workspace's token to this n8n's trigger URL (the credential's own is for orders from outside n8n).
				webhook_url: expect.stringMatching(
					new RegExp(`^${n8n.url}/webhook/${TRIGGER_WEBHOOK_ID}/captioning\\?token=[\\w-]{32}$`),
				),
				metadata: { source_file: 'interview.mp4' },
			});
			await waitFor(async () =>
				existsSync(path.join(work, 'captions', 'interview.mp4.srt')) ? true : undefined,
			);
			expect(await executions('wfStoreCaptions1')).toHaveLength(before + 1);
		}, 120000);

		test('On Webhook: the execution waits, survives a restart of n8n, and resumes when the job completes', async () => {
			sb.setTiming(null); // the job completes when this test says, after the restart
			const res = await n8n.post('/webhook/captioning-order', {
				media_url: 'https://media.example.com/town-hall.mp4',
				title: 'Town Hall',
			});
			expect(res.status).toBe(200);
			const job = await waitFor(async () =>
				sb.ledger.jobs.find((j) => j.body.title === 'Town Hall'),
			);
			expect(String(job.body.webhook_url)).toMatch(
				new RegExp(
					`^${n8n.url}/webhook-waiting/\\d+/3e3f8d61-4c5a-4d7e-9f90-ab1c2d3e4f02(\\?signature=\\w+)?$`,
				),
			);
			const waiting = await waitFor(async () =>
				(await executions('wfOrderOnEvent01')).find((e) => e.status === 'waiting'),
			);

			await n8n.stop();
			await n8n.start();
			// Still waiting after the restart (the list may take a moment while n8n mounts its routes).
			await waitFor(async () =>
				(await executions('wfOrderOnEvent01')).find((e) => e.id === waiting.id)?.status ===
				'waiting'
					? true
					: undefined,
			);

			// An event before the job is final, as the API shows it: it waits in its request, the
			// execution still waiting, until the job shows completed; then it (or the job's own event)
			// resumes the execution.
			const resume = new URL(String(job.body.webhook_url));
			const early = n8n.post(`${resume.pathname}${resume.search}`, {
				id: 'evt_town_hall_early',
				object: 'event',
				type: 'job.completed',
				created_at: new Date().toISOString(),
				data: { ...sb.job(job.id), status: 'completed' },
			});
			await new Promise((r) => setTimeout(r, 2000));
			expect((await executions('wfOrderOnEvent01')).find((e) => e.id === waiting.id)?.status).toBe(
				'waiting',
			);
			sb.completeJob(job.id);
			await sb.settleDeliveries();
			const answers = [
				(await early).status,
				...sb.ledger.deliveries.filter((d) => d.jobId === job.id).map((d) => d.status),
			];
			expect(answers).toContain(200);
			await waitFor(async () =>
				existsSync(path.join(work, 'captions', 'Town Hall.srt')) ? true : undefined,
			);
			const done = await waitFor(async () =>
				(await executions('wfOrderOnEvent01')).find(
					(e) => e.id === waiting.id && e.status === 'success',
				),
			);
			expect(done.status).toBe('success');
			// What n8n saved of the execution shows the resume URL's token (2.x: signature=) masked only.
			const saved = await executionsApi(() => n8n).savedDataOf(String(done.id));
			expect(saved).toContain('"webhook_url"');
			expect(saved).not.toMatch(/[?&](signature|token)=(?!\*\*\*)[^&"\s]/);
			expect(
				sb.ledger.requests.filter((r) => r.route === 'GET /jobs').length,
			).toBeGreaterThanOrEqual(1);
			sb.setTiming({ queuedMs: 300, processingMs: 1500 });
		}, 180000);
	});

	describe('the Captioning Polling Trigger, active', () => {
		const polled = (title: string) => path.join(work, 'polled', `${title}.srt`);
		const orderAndComplete = async (title: string) => {
			const res = await fetch(`${sb.baseUrl}/jobs`, {
				method: 'POST',
				headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
				body: JSON.stringify({ media_url: `https://media.example.com/${title}.mp4`, title }),
			});
			const { id } = (await res.json()) as { id: string };
			sb.completeJob(id);
			return id;
		};
		/**
		 * n8n answers before it has activated its workflows (2.x activates them in the background),
		 * and the trigger counts from its activation: wait for that first poll's read of the job list.
		 */
		/**
		 * First activation reads the open lists and the newest page (3 reads); a restart polls (1 read).
		 * Wait for those answers, so the test's jobs finish after them.
		 */
		const activated = async (since: number, reads: number) => {
			const answered = () =>
				sb.ledger.requests.filter(
					(r) => r.route === 'GET /jobs' && r.at >= since && r.status !== null,
				).length;
			await waitFor(async () => (answered() >= reads ? true : undefined), 90000);
		};
		const started = async (reads = 1) => {
			const since = Date.now();
			await n8n.start();
			await activated(since, reads);
		};
		const restart = async () => {
			await n8n.stop();
			await started();
		};

		let queuedBefore: string;

		beforeAll(
			async () => {
				sb.setTiming(null);
				// Queued before the workflow is activated, completed after: it must be reported.
				const res = await fetch(`${sb.baseUrl}/jobs`, {
					method: 'POST',
					headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
					body: JSON.stringify({
						media_url: 'https://media.example.com/before.mp4',
						title: 'Queued Before',
					}),
				});
				queuedBefore = ((await res.json()) as { id: string }).id;
				// Activated in the running n8n over REST, as the editor does.
				const since = Date.now();
				if (version.startsWith('2.')) await executionsApi(() => n8n).activate(['wfPollFinished1']);
				else await activateOn1x('wfPollFinished1');
				await activated(since, 3);
			},
			5 * 60 * 1000,
		);

		test(
			'jobs ordered straight at the service (not through n8n) have their SRT written; a restart between polls loses and repeats nothing',
			async () => {
				sb.completeJob(queuedBefore);
				await orderAndComplete('Dashboard One');
				// The next scheduled poll (every 15 s) writes both.
				await waitFor(
					async () =>
						existsSync(polled('Dashboard One')) && existsSync(polled('Queued Before'))
							? true
							: undefined,
					150000,
				);

				// Finished while n8n is down: reported by the poll that activation runs on start.
				await orderAndComplete('While Down One');
				await n8n.stop();
				await orderAndComplete('While Down Two');
				await started();
				await waitFor(
					async () =>
						existsSync(polled('While Down One')) && existsSync(polled('While Down Two'))
							? true
							: undefined,
					150000,
				);
				// Once more down and up: the poll at activation must repeat nothing.
				await restart();
				await new Promise((r) => setTimeout(r, 2000));

				for (const title of [
					'Queued Before',
					'Dashboard One',
					'While Down One',
					'While Down Two',
				]) {
					const srt = readFileSync(polled(title), 'utf8');
					// Written once: a second report would have appended the captions again.
					expect(srt.match(/^1\n00:00:00,000 --> /gm)).toHaveLength(1);
				}
				// Activation started from then: none of the earlier tests' finished jobs was reported.
				expect(readdirSync(path.join(work, 'polled')).sort()).toEqual([
					'Dashboard One.srt',
					'Queued Before.srt',
					'While Down One.srt',
					'While Down Two.srt',
				]);
			},
			8 * 60 * 1000,
		);
	});
});
