// Job → Create in n8n's engine against the sandbox: each source and option reaches the service
// with the right body, each validation rule refuses before any request, idempotency holds.
import { createHash } from 'node:crypto';
import type { IDataObject } from 'n8n-workflow';

import { Captioning } from '../../nodes/Captioning/Captioning.node.js';
import { node, runWorkflow, storeBinary } from '../engine/workflow';
import { MEDIA, runCaptioning } from '../helpers/captioning';
import type { Sandbox } from '../helpers/sandbox';
import { useSandbox } from '../helpers/sandbox';

let sb: Sandbox;
useSandbox((s) => (sb = s));

const create = (params: IDataObject) => ({
	resource: 'job',
	operation: 'create',
	source: 'url',
	mediaUrl: MEDIA,
	...params,
});
const lastJobRequest = () => sb.ledger.requests.filter((r) => r.route === 'POST /jobs').at(-1)!;

describe('sources', () => {
	test('Media URL: the body is the URL alone, with an automatic Idempotency-Key', async () => {
		const run = await runCaptioning(sb, create({}));
		expect(run.failure).toBeUndefined();
		expect(sb.ledger.jobs).toHaveLength(1);
		// Every keyed order carries its key's tag in the metadata: how a repeat finds it (docs/paying-once.md).
		expect(sb.ledger.jobs[0].body).toEqual({
			media_url: MEDIA,
			metadata: { n8n_order: expect.stringMatching(/^[0-9a-f]{40}$/) },
		});
		expect(lastJobRequest().idempotencyKey).toMatch(/^n8n-[0-9a-f]{48}$/);
		expect(run.items).toEqual([
			{
				json: expect.objectContaining({
					id: sb.ledger.jobs[0].id,
					object: 'job',
					status: 'queued',
					idempotent_replayed: false,
				}),
				pairedItem: { item: 0 },
			},
		]);
	});

	test('Upload ID: the body names the upload', async () => {
		const upload = (await (
			await fetch(`${sb.baseUrl}/uploads`, {
				method: 'POST',
				headers: { authorization: `Bearer ${sb.keys.full}` },
			})
		).json()) as { id: string; upload_url: string };
		await fetch(upload.upload_url, { method: 'PUT', body: 'bytes' });
		const run = await runCaptioning(sb, create({ source: 'upload', uploadId: upload.id }));
		expect(run.failure).toBeUndefined();
		expect(sb.ledger.jobs[0].body).toEqual({
			upload_id: upload.id,
			metadata: { n8n_order: expect.stringMatching(/^[0-9a-f]{40}$/) },
		});
	});

	test('Binary File: uploads the file (name, type, size; bytes streamed) then orders it, titled after the file', async () => {
		const data = Buffer.from('pretend this is an mp4 '.repeat(1000));
		const binary = await storeBinary(data, { fileName: 'Interview.mp4', mimeType: 'video/mp4' });
		const run = await runCaptioning(sb, create({ source: 'binary', binaryPropertyName: 'data' }), {
			input: [{ json: {}, binary }],
		});
		expect(run.failure).toBeUndefined();
		const [upload] = sb.ledger.uploads;
		expect(upload).toMatchObject({
			filename: 'Interview.mp4',
			contentType: 'video/mp4',
			declaredBytes: data.length,
			receivedBytes: data.length,
			complete: true,
			authorizationSeen: false,
		});
		expect(upload.sha256).toBe(createHash('sha256').update(data).digest('hex'));
		// A file counts by its bytes: its tag names the order with the SHA-256, not the upload.
		expect(sb.ledger.jobs[0].body).toEqual({
			upload_id: upload.id,
			title: 'Interview.mp4',
			metadata: { n8n_order: expect.stringMatching(/^[0-9a-f]{40}$/) },
		});
		expect(JSON.stringify(run.items)).not.toContain('upload_url');
	});
});

test('every option of CreateJob reaches the service as the interface names it', async () => {
	const run = await runCaptioning(
		sb,
		create({
			title: 'Keynote 2026',
			options: {
				style: 'verbatim',
				model: 'captioner-base',
				speakerLabels: false,
				speakerLabelStyle: 'colon',
				atmospherics: false,
				profanity: 'label',
				glossary: ['Kubernetes', 'Globex'],
				webhookUrl: 'https://n8n.example.com/webhook/abc/captioning',
				metadata: {
					pair: [
						{ key: 'drive_file_id', value: 'f-123' },
						{ key: 'owner', value: 'maria' },
					],
				},
			},
			redactions: {
				pii: true,
				names: true,
				organizations: false,
				terms: ['Project X', 'Zed'],
				replacement: 'custom_string',
				customReplacement: '(removed)',
			},
		}),
	);
	expect(run.failure).toBeUndefined();
	expect(sb.ledger.jobs[0].body).toEqual({
		media_url: MEDIA,
		title: 'Keynote 2026',
		style: 'verbatim',
		model: 'captioner-base',
		speaker_labels: false,
		speaker_label_style: 'colon',
		atmospherics: false,
		profanity: 'label',
		glossary: ['Kubernetes', 'Globex'],
		webhook_url: 'https://n8n.example.com/webhook/abc/captioning',
		metadata: {
			drive_file_id: 'f-123',
			owner: 'maria',
			n8n_order: expect.stringMatching(/^[0-9a-f]{40}$/),
		},
		redactions: {
			pii: true,
			names: true,
			organizations: false,
			terms: ['Project X', 'Zed'],
			replacement: 'custom_string',
			custom_replacement: '(removed)',
		},
	});
	expect(run.items[0].json).toMatchObject({
		title: 'Keynote 2026',
		metadata: { drive_file_id: 'f-123' },
		options: { style: 'verbatim', profanity: 'label' },
	});
});

test.each(['redacted', 'category_label', 'silent'])(
	'the standard replacement %s is sent without a custom replacement',
	async (replacement) => {
		await runCaptioning(sb, create({ redactions: { organizations: true, replacement } }));
		expect(sb.ledger.jobs[0].body.redactions).toEqual({ organizations: true, replacement });
	},
);

describe('bad input is refused before any request, naming the field, the rule and the fix', () => {
	const long = (n: number) => 'x'.repeat(n);
	test.each<[string, IDataObject, RegExp, RegExp]>([
		// n8n itself refuses a literally empty required field; an expression that yields nothing reaches the node.
		[
			'a Media URL expression that is empty',
			create({ mediaUrl: '={{ $json.missing ?? "" }}' }),
			/^Media URL is empty$/,
			/public http\(s\) URL/,
		],
		[
			'a Media URL that is not http(s)',
			create({ mediaUrl: 'ftp://files.example.com/a.mp4' }),
			/is not an http\(s\) URL/,
			/Binary File/,
		],
		[
			'an Upload ID that is not a UUID',
			create({ source: 'upload', uploadId: 'abc' }),
			/Upload ID "abc" is not an upload id/,
			/Upload → Create/,
		],
		[
			'a missing binary field',
			create({ source: 'binary', binaryPropertyName: 'video' }),
			/Input Data Field Name "video" holds no file/,
			/no binary data/,
		],
		[
			'a webhook URL over http',
			create({ options: { webhookUrl: 'http://n8n.example.com/webhook/x' } }),
			/Webhook URL .* does not start with https:\/\//,
			/only to public HTTPS URLs/,
		],
		[
			'a webhook URL over 2048 characters',
			create({ options: { webhookUrl: `https://n8n.example.com/${long(2030)}` } }),
			/Webhook URL is 2054 characters long/,
			/at most 2048/,
		],
		[
			'Custom String without Custom Replacement',
			create({ redactions: { pii: true, replacement: 'custom_string' } }),
			/Custom Replacement is missing/,
			/1-120 characters, one line/,
		],
		[
			'a blank Custom Replacement',
			create({ redactions: { replacement: 'custom_string', customReplacement: '   ' } }),
			/Custom Replacement is missing/,
			/Custom String/,
		],
		[
			'a multi-line Custom Replacement',
			create({ redactions: { replacement: 'custom_string', customReplacement: 'a\nb' } }),
			/Custom Replacement spans several lines/,
			/single line/,
		],
		[
			'a Custom Replacement over 120 characters',
			create({ redactions: { replacement: 'custom_string', customReplacement: long(121) } }),
			/Custom Replacement is 121 characters long/,
			/1-120/,
		],
		[
			'a Custom Replacement without Custom String',
			create({ redactions: { replacement: 'redacted', customReplacement: 'x' } }),
			/Replacement is not Custom String/,
			/Set Replacement to Custom String/,
		],
		[
			'a blank redaction term',
			create({ redactions: { terms: ['ok', ' '] } }),
			/Redaction term 2 is blank/,
			/nonblank single line/,
		],
		[
			'a multi-line redaction term',
			create({ redactions: { terms: ['a\nb'] } }),
			/Redaction term 1 spans several lines/,
			/single line/,
		],
		[
			'201 redaction terms',
			create({ redactions: { terms: Array(201).fill('t') } }),
			/Redactions has 201 terms/,
			/at most 200/,
		],
		[
			'a metadata pair without key',
			create({ options: { metadata: { pair: [{ key: '', value: 'v' }] } } }),
			/Metadata pair 1 has no key/,
			/1-40 characters/,
		],
		[
			'a custom Idempotency Key expression that is empty',
			create({ idempotency: 'custom', idempotencyKey: '={{ "" }}' }),
			/Idempotency Key is empty/,
			/1-255 printable ASCII/,
		],
		[
			'an Idempotency Key over 255 characters',
			create({ idempotency: 'custom', idempotencyKey: long(256) }),
			/Idempotency Key is 256 characters long/,
			/Automatic/,
		],
		[
			'an Idempotency Key with a space',
			create({ idempotency: 'custom', idempotencyKey: 'drive file 1' }),
			/outside printable ASCII/,
			/without spaces/,
		],
		[
			'an Idempotency Key with a non-printable character',
			create({ idempotency: 'custom', idempotencyKey: 'key\u0007' }),
			/outside printable ASCII/,
			/printable ASCII/,
		],
		[
			'an order over 64 KiB',
			create({ options: { glossary: Array(700).fill(long(100)) } }),
			/over the service's 64 KiB limit/,
			/glossary \d+ bytes/,
		],
		[
			"a Timeout past what n8n's timers wait",
			create({ waitForCompletion: 'poll', pollInterval: 30, timeout: '={{ 35792 }}' }),
			/^Timeout is 35792 minutes, more than the 35,791 minutes \(24\.8 days\) n8n's timers can wait$/,
			/Set Timeout to at most 35791/,
		],
		[
			"a Poll Interval past what n8n's timers wait",
			create({ waitForCompletion: 'poll', pollInterval: '={{ 2147484 }}', timeout: 60 }),
			/^Poll Interval is 2147484 seconds, more than the 2,147,483 seconds/,
			/Set Poll Interval to at most 2147483/,
		],
		[
			'a Poll Interval of 0',
			create({ waitForCompletion: 'poll', pollInterval: '={{ 0 }}', timeout: 60 }),
			/^Poll Interval is 0 seconds$/,
			/^Set Poll Interval to 1 or more\. Nothing was ordered\.$/,
		],
	])('%s', async (_name, params, message, description) => {
		const run = await runCaptioning(sb, params);
		expect(run.failure).toMatchObject({
			name: 'NodeOperationError',
			message: expect.stringMatching(message),
			description: expect.stringMatching(description),
		});
		expect(run.failure!.context).toMatchObject({ itemIndex: 0 });
		expect(sb.ledger.requests).toHaveLength(0);
		expect(sb.ledger.storageRequests).toHaveLength(0);
	});

	test('bounds the workspace may configure are left to the service, whose message and param reach the user', async () => {
		const run = await runCaptioning(sb, create({ title: long(301) }));
		expect(sb.ledger.requests).toHaveLength(1);
		expect(run.failure).toMatchObject({
			name: 'NodeApiError',
			httpCode: '400',
			message: 'title must be 1-300 characters. [HTTP 400 invalid_parameter]',
			context: { param: 'title' },
		});
		expect(run.failure!.description).toContain('Field: title.');
	});
});

test('a read-only key gets the 403 explanation, and nothing is ordered', async () => {
	const run = await runCaptioning(sb, create({}), { key: sb.keys.readOnly });
	expect(run.failure).toMatchObject({
		httpCode: '403',
		message: expect.stringMatching(/read-only/),
	});
	expect(run.failure!.description).toMatch(/need a key with full access/);
	expect(sb.ledger.jobs).toHaveLength(0);
	expect(JSON.stringify(run.failure)).not.toContain(sb.keys.readOnly);
});

describe('idempotency', () => {
	test('a custom key is sent as is; a second order with it is a replay, marked in the output', async () => {
		const first = await runCaptioning(
			sb,
			create({ idempotency: 'custom', idempotencyKey: 'drive-file-42' }),
		);
		const second = await runCaptioning(
			sb,
			create({ idempotency: 'custom', idempotencyKey: 'drive-file-42' }),
		);
		expect(lastJobRequest().idempotencyKey).toBe('drive-file-42');
		expect(second.items[0].json).toMatchObject({
			id: first.items[0].json.id,
			idempotent_replayed: true,
		});
		expect(sb.ledger.jobs).toHaveLength(1);
		expect(sb.ledger.charges).toHaveLength(1);
	});

	test('None sends no key, so every run orders again', async () => {
		await runCaptioning(sb, create({ idempotency: 'none' }));
		await runCaptioning(sb, create({ idempotency: 'none' }));
		expect(lastJobRequest().idempotencyKey).toBeNull();
		expect(sb.ledger.jobs).toHaveLength(2);
	});

	test.each([
		['a lost answer', 'lose-response'],
		['a 500 after the job was made', 'fail-after'],
	])(
		'None and %s: not sent again, and the error says a job may exist and how to find it',
		async (_name, kind) => {
			sb.injectFault('POST /jobs', { kind, status: 500 });
			const run = await runCaptioning(
				sb,
				create({
					idempotency: 'none',
					title: 'Town Hall',
					options: { metadata: { pair: [{ key: 'drive_file_id', value: 'f-9' }] } },
				}),
			);
			expect(sb.ledger.requests.filter((r) => r.route === 'POST /jobs')).toHaveLength(1);
			expect(sb.ledger.jobs).toHaveLength(1);
			expect(run.failure?.description).toMatch(
				/^No answer said the order was placed or refused, so a job may exist and be charged\. .*Job → Get Many \(the newest jobs, with the title "Town Hall" and the metadata \{"drive_file_id":"f-9"\}\).*set Idempotency to Automatic/,
			);
		},
	);

	test("None and a lost answer, then the execution's Retry: not sent again, the error says a job may exist", async () => {
		sb.injectFault('POST /jobs', { kind: 'lose-response', status: 500 });
		const failed = await runCaptioning(sb, create({ idempotency: 'none', title: 'Lost' }), {
			workflowId: 'none-retry',
			mode: 'webhook',
		});
		expect(failed.failure?.description).toMatch(/a job may exist and be charged/);
		const retried = await runCaptioning(sb, create({ idempotency: 'none', title: 'Lost' }), {
			workflowId: 'none-retry',
			mode: 'retry',
			contextData: failed.contextData(),
		});
		expect(retried.failure).toMatchObject({
			message: 'This order got no answer when it was sent',
			description: expect.stringMatching(/^A job may exist and be charged/),
		});
		expect(sb.ledger.requests.filter((r) => r.route === 'POST /jobs')).toHaveLength(1);
	});

	test('the automatic key is the order itself: equal items share one job, and a new run replays it', async () => {
		const first = await runCaptioning(sb, create({}), {
			input: [{ json: {} }, { json: {} }],
			workflowId: 'keys-auto',
		});
		const second = await runCaptioning(sb, create({}), { workflowId: 'keys-auto' });
		expect(sb.ledger.jobs).toHaveLength(1);
		// The new run finds the order by its tag (one read of the job list) and sends no second POST.
		expect(sb.ledger.requests.filter((r) => r.route === 'POST /jobs').map((r) => r.status)).toEqual(
			[201],
		);
		expect(sb.ledger.requests.filter((r) => r.route === 'GET /jobs')).toHaveLength(1);
		expect(
			[...first.items, ...second.items].map((i) => [i.json.id, i.json.idempotent_replayed]),
		).toEqual([
			[sb.ledger.jobs[0].id, false],
			[sb.ledger.jobs[0].id, true],
			[sb.ledger.jobs[0].id, true],
		]);
		// Another workflow (or another node) ordering the same media is another order.
		await runCaptioning(sb, create({}), { workflowId: 'keys-auto-other' });
		expect(sb.ledger.jobs).toHaveLength(2);
	});

	test('a lost response is retried with the same key: one job, one charge', async () => {
		sb.injectFault('POST /jobs', { kind: 'lose-response' });
		const run = await runCaptioning(sb, create({}));
		expect(run.failure).toBeUndefined();
		expect(sb.ledger.requests.filter((r) => r.route === 'POST /jobs')).toHaveLength(2);
		expect(sb.ledger.jobs).toHaveLength(1);
		expect(sb.ledger.charges).toHaveLength(1);
		expect(run.items[0].json.idempotent_replayed).toBe(true);
	});

	test.each(['url', 'binary'])(
		"n8n's Retry On Fail re-runs the node (source %s): one upload, one job, one charge",
		async (source) => {
			sb.setTiming({ queuedMs: 20, processingMs: 60 });
			// The order goes through, then the first poll is refused for good (a 403: a wait ends on it): the node fails after paying.
			sb.injectFault('GET /jobs/{id}', {
				status: 403,
				code: 'insufficient_permissions',
				message: 'Injected failure after the order',
			});
			const binary = await storeBinary(Buffer.from('media'), {
				fileName: 'clip.mp4',
				mimeType: 'video/mp4',
			});
			const run = await runCaptioning(
				sb,
				create({
					source,
					binaryPropertyName: 'data',
					waitForCompletion: 'poll',
					pollInterval: 1,
					timeout: 1,
				}),
				{
					input: [{ json: {}, binary }],
					settings: { retryOnFail: true, maxTries: 2, waitBetweenTries: 10 },
				},
			);
			expect(run.failure).toBeUndefined();
			// The second try finds its order by its tag: no second POST.
			expect(sb.ledger.requests.filter((r) => r.route === 'POST /jobs')).toHaveLength(1);
			expect(sb.ledger.jobs).toHaveLength(1);
			expect(sb.ledger.charges).toHaveLength(1);
			expect(sb.ledger.uploads).toHaveLength(source === 'binary' ? 1 : 0);
			expect(run.items[0].json).toMatchObject({ status: 'completed', idempotent_replayed: true });
		},
	);
});

describe('waiting for completion', () => {
	test('Poll outputs the completed job', async () => {
		sb.setTiming({ queuedMs: 50, processingMs: 200 });
		const run = await runCaptioning(
			sb,
			create({ waitForCompletion: 'poll', pollInterval: 1, timeout: 1 }),
		);
		expect(run.items[0].json).toMatchObject({
			status: 'completed',
			progress: 100,
			captions: { srt: expect.any(String) },
		});
		expect(
			sb.ledger.requests.filter((r) => r.route === 'GET /jobs/{id}').length,
		).toBeGreaterThanOrEqual(1);
	});

	test('Poll outputs a cancelled job with its reason', async () => {
		sb.setTiming({ queuedMs: 20, processingMs: 50 });
		const run = await runCaptioning(
			sb,
			create({
				mediaUrl: 'https://media.example.com/cancel-unsupported_media.mp4',
				waitForCompletion: 'poll',
				pollInterval: 1,
				timeout: 1,
			}),
		);
		expect(run.items[0].json).toMatchObject({
			status: 'cancelled',
			cancellation: { reason: 'unsupported_media' },
			cost: { amount: '0.00' },
		});
	});

	test('On Webhook orders with the resume URL of this execution and node, then waits', async () => {
		const run = await runCaptioning(sb, create({ waitForCompletion: 'webhook', timeout: 90 }), {
			webhookWaitingBaseUrl: 'https://n8n.example.com/webhook-waiting',
		});
		expect(run.failure).toBeUndefined();
		expect(run.run.status).toBe('waiting');
		expect(run.run.waitTill!.getTime()).toBeGreaterThan(Date.now() + 89 * 60000);
		const webhookUrl = String(sb.ledger.jobs[0].body.webhook_url);
		expect(webhookUrl).toMatch(
			/^https:\/\/n8n\.example\.com\/webhook-waiting\/harness-\d+\/Captioning-id(\?signature=\w+)?$/,
		);
		expect(run.items[0].json).toMatchObject({ id: sb.ledger.jobs[0].id, status: 'queued' });
	});

	test.each<[string, IDataObject, RegExp]>([
		['n8n without HTTPS', {}, /n8n's webhook address http:\/\/127\.0\.0\.1:5678 is not HTTPS/],
		[
			'a Webhook URL option as well',
			{ options: { webhookUrl: 'https://hooks.example.com/x' } },
			/cannot be combined with Wait for Completion: On Webhook/,
		],
	])('On Webhook refuses %s before ordering', async (_name, params, message) => {
		const run = await runCaptioning(
			sb,
			create({ waitForCompletion: 'webhook', timeout: 10, ...params }),
			{
				input: [{ json: {} }],
				webhookWaitingBaseUrl:
					_name === 'n8n without HTTPS' ? undefined : 'https://n8n.example.com/webhook-waiting',
			},
		);
		expect(run.failure).toMatchObject({
			name: 'NodeOperationError',
			message: expect.stringMatching(message),
		});
		expect(sb.ledger.requests).toHaveLength(0);
	});

	test("as an AI Agent's tool, On Webhook is not offered, and refused before ordering", async () => {
		const captioning = new Captioning();
		const waitFields = captioning.description.properties.filter(
			(p) => p.name === 'waitForCompletion',
		);
		const offered = (tool: boolean) =>
			waitFields
				.filter((p) =>
					tool ? p.displayOptions?.show?.['@tool'] : p.displayOptions?.hide?.['@tool'],
				)
				.flatMap((p) => (p.options as Array<{ value: string }>).map((o) => o.value));
		expect(offered(false)).toEqual(['none', 'webhook', 'poll']);
		expect(offered(true)).toEqual(['none', 'poll']);
		const run = await runWorkflow({
			nodes: [
				node('Captioning', 'captioningTool', create({ waitForCompletion: 'webhook', timeout: 10 })),
			],
			nodeTypes: { captioningTool: captioning },
			credentials: { captioningApi: { apiKey: sb.keys.full, baseUrl: sb.baseUrl } },
			webhookWaitingBaseUrl: 'https://n8n.example.com/webhook-waiting',
		});
		expect(run.error('Captioning')?.message).toBe(
			'Wait for Completion: On Webhook cannot be used by an AI Agent',
		);
		expect(sb.ledger.requests).toHaveLength(0);
	});

	test('cancelling the execution stops the wait at once', async () => {
		const run = await runCaptioning(
			sb,
			create({ waitForCompletion: 'poll', pollInterval: 30, timeout: 60 }),
			{
				onStart: (cancel) => setTimeout(cancel, 300),
			},
		);
		// Ended before the first check (30 s on): the job was never read.
		expect(run.run.status).toBe('canceled');
		expect(sb.ledger.requests.filter((r) => r.route === 'GET /jobs/{id}')).toHaveLength(0);
	});
});
