// Upload → Create, Job → Get / Get Many / Get Captions, Account → Get, and the router's
// Continue On Fail, in n8n's engine against the sandbox.
import { inflateRawSync } from 'node:zlib';
import type { IDataObject } from 'n8n-workflow';

import { httpReceiver } from '../helpers/https';
import { binaryDataService, storeBinary } from '../engine/workflow';
import { MEDIA, NODE, orderDirectly, runCaptioning } from '../helpers/captioning';
import { generatedMedia } from '../helpers/media';
import type { Sandbox } from '../helpers/sandbox';
import { useSandbox } from '../helpers/sandbox';

let sb: Sandbox;
useSandbox((s) => (sb = s));

const order = async (body: IDataObject = {}) => await orderDirectly(sb, body);

describe('Upload → Create', () => {
	test('outputs the upload id, size and expiry, never the presigned URL', async () => {
		const binary = await storeBinary(Buffer.from('0123456789'), {
			fileName: 'a.wav',
			mimeType: 'audio/wav',
		});
		const run = await runCaptioning(
			sb,
			{ resource: 'upload', operation: 'create', binaryPropertyName: 'data' },
			{ input: [{ json: {}, binary }] },
		);
		expect(run.items).toEqual([
			{
				json: {
					id: sb.ledger.uploads[0].id,
					object: 'upload',
					method: 'PUT',
					max_size_bytes: 5242880000,
					expires_at: expect.any(String),
					filename: 'a.wav',
					content_type: 'audio/wav',
					size_bytes: 10,
				},
				pairedItem: { item: 0 },
			},
		]);
		expect(sb.ledger.uploads[0]).toMatchObject({
			receivedBytes: 10,
			complete: true,
			authorizationSeen: false,
		});
	});

	test('a binary held in memory (no binary store id) is uploaded from its buffer', async () => {
		const data = Buffer.from('in-memory media');
		const run = await runCaptioning(
			sb,
			{ resource: 'upload', operation: 'create', binaryPropertyName: 'file' },
			{
				input: [
					{
						json: {},
						binary: {
							file: { data: data.toString('base64'), mimeType: 'video/webm', fileName: 'm.webm' },
						},
					},
				],
			},
		);
		expect(run.failure).toBeUndefined();
		expect(sb.ledger.uploads[0]).toMatchObject({
			filename: 'm.webm',
			receivedBytes: data.length,
			complete: true,
		});
	});

	test('a file of 256 MiB in the filesystem binary store is streamed: the bytes and hash match, memory stays flat', async () => {
		const size = 256 * 1024 * 1024;
		const { stream, sha256 } = generatedMedia(size);
		const binary = await storeBinary(stream, { fileName: 'big.mp4', mimeType: 'video/mp4' });
		const expected = sha256();
		expect((await (await binaryDataService()).getMetadata(binary!.data.id!)).fileSize).toBe(size);

		global.gc?.();
		const baseline = process.memoryUsage().rss;
		let peak = baseline;
		const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
		try {
			const run = await runCaptioning(
				sb,
				{ resource: 'upload', operation: 'create', binaryPropertyName: 'data' },
				{ input: [{ json: {}, binary }] },
			);
			expect(run.failure).toBeUndefined();
		} finally {
			clearInterval(sampler);
		}
		expect(sb.ledger.uploads[0]).toMatchObject({
			receivedBytes: size,
			contentLengthSent: size,
			complete: true,
			sha256: expected,
		});
		// Buffering the file would take at least 256 MiB; streaming stays far below.
		expect((peak - baseline) / 1024 / 1024).toBeLessThan(128);
	}, 120000);
});

describe('Job → Get and Get Many', () => {
	test('Get returns the job as the service shows it: the same shape as Job → Create and the triggers', async () => {
		const id = await order({ title: 'One', metadata: { k: 'v' } });
		const got = await runCaptioning(sb, { resource: 'job', operation: 'get', jobId: id });
		expect(got.items[0].json).toEqual(sb.job(id));
	});

	test('Get of an unknown job is a 404 naming the workspace', async () => {
		const run = await runCaptioning(sb, {
			resource: 'job',
			operation: 'get',
			jobId: '6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5',
		});
		expect(run.failure).toMatchObject({
			httpCode: '404',
			description: expect.stringMatching(/workspace/),
		});
	});

	test('Get Many: Limit, Return All, and the status filter', async () => {
		const ids = [];
		for (let i = 0; i < 7; i++) ids.push(await order({ title: `t${i}` }));
		sb.completeJob(ids[1]);
		sb.completeJob(ids[4]);
		const limited = await runCaptioning(sb, {
			resource: 'job',
			operation: 'getAll',
			returnAll: false,
			limit: 3,
		});
		expect(limited.items.map((i) => i.json.id)).toEqual([ids[6], ids[5], ids[4]]);
		expect(
			limited.items.every((i) => i.pairedItem && (i.pairedItem as { item: number }).item === 0),
		).toBe(true);
		const all = await runCaptioning(sb, {
			resource: 'job',
			operation: 'getAll',
			returnAll: true,
		});
		expect(all.items.length).toBeGreaterThanOrEqual(7);
		expect(all.items[0].json).toHaveProperty('options');
		const completed = await runCaptioning(sb, {
			resource: 'job',
			operation: 'getAll',
			returnAll: true,
			filters: { status: 'completed' },
		});
		expect(completed.items.map((i) => i.json.id)).toEqual(expect.arrayContaining([ids[4], ids[1]]));
		expect(completed.items.every((i) => i.json.status === 'completed')).toBe(true);
		expect(sb.ledger.requests.filter((r) => r.route === 'GET /jobs').at(-1)!.query.status).toBe(
			'completed',
		);
	});
});

describe("Job → Get Many: the job of a file, by the caller's own id (filtered while paging)", () => {
	// A workspace of 1,000 jobs (the invoiced one: the prepaid one's balance is for other tests).
	const other = () => sb.keys.otherWorkspace;
	const reads = () => sb.ledger.requests.filter((r) => r.route === 'GET /jobs').length;
	let deep: string;

	beforeAll(async () => {
		deep = await orderDirectly(
			sb,
			{ title: 'Quarterly Review', metadata: { drive_file_id: 'file-deep' } },
			other(),
		);
		for (let n = 1; n < 1000; n++)
			await orderDirectly(
				sb,
				{ title: `Episode ${n}`, metadata: { drive_file_id: `file-${n}` } },
				other(),
			);
	}, 120000);

	test('a match among the newest: one read; the oldest of 1,000 jobs: ten, stopping at Limit', async () => {
		const newest = await runCaptioning(
			sb,
			{
				resource: 'job',
				operation: 'getAll',
				returnAll: false,
				limit: 1,
				filters: { metadataKey: 'drive_file_id', metadataValue: 'file-998' },
			},
			{ key: other() },
		);
		expect(newest.items.map((i) => i.json.title)).toEqual(['Episode 998']);
		expect(reads()).toBe(1);
		sb.resetLedger();
		const oldest = await runCaptioning(
			sb,
			{
				resource: 'job',
				operation: 'getAll',
				returnAll: false,
				limit: 1,
				filters: { metadataKey: 'drive_file_id', metadataValue: 'file-deep' },
			},
			{ key: other() },
		);
		expect(oldest.items.map((i) => i.json.id)).toEqual([deep]);
		expect(reads()).toBe(10);
		expect(sb.ledger.requests.every((r) => r.query.limit === '100')).toBe(true);
		console.log(
			`Get Many by metadata among 1,000 jobs: the newest match in 1 read, the oldest in ${reads()} reads`,
		);
	});

	test('Title Contains (ignoring case) with Return All reads the whole history; the status filter still goes to the service', async () => {
		const run = await runCaptioning(
			sb,
			{
				resource: 'job',
				operation: 'getAll',
				returnAll: true,
				filters: { titleContains: 'quarterly' },
			},
			{ key: other() },
		);
		expect(run.items.map((i) => i.json.id)).toEqual([deep]);
		expect(reads()).toBe(10);
		expect(run.hints).toEqual([
			{
				message: expect.stringMatching(
					/^The Metadata or Title filter read the whole job history \(\d+ jobs\) to find 1 match: the service filters by status only/,
				),
				location: 'outputPane',
			},
		]);
		sb.resetLedger();
		const none = await runCaptioning(
			sb,
			{
				resource: 'job',
				operation: 'getAll',
				returnAll: false,
				limit: 5,
				filters: { status: 'completed', metadataKey: 'drive_file_id' },
			},
			{ key: other() },
		);
		expect(none.items).toEqual([]);
		expect(sb.ledger.requests.map((r) => r.query.status)).toEqual(['completed']);
	});

	test('a key with any value, and no match at all: an empty result, not an error', async () => {
		const any = await runCaptioning(
			sb,
			{
				resource: 'job',
				operation: 'getAll',
				returnAll: false,
				limit: 3,
				filters: { metadataKey: 'drive_file_id' },
			},
			{ key: other() },
		);
		expect(any.items.map((i) => i.json.title)).toEqual([
			'Episode 999',
			'Episode 998',
			'Episode 997',
		]);
		expect(any.hints).toEqual([]);
		const nothing = await runCaptioning(
			sb,
			{
				resource: 'job',
				operation: 'getAll',
				returnAll: false,
				limit: 3,
				filters: { metadataKey: 'no_such_key' },
			},
			{ key: other() },
		);
		expect(nothing.failure).toBeUndefined();
		expect(nothing.items).toEqual([]);
	});
});

describe('Job → Get Captions', () => {
	test('one format goes into the output field, named after the job title, with its MIME type', async () => {
		const id = await order({ title: 'Keynote: Q3/Q4' });
		sb.completeJob(id);
		const run = await runCaptioning(sb, {
			resource: 'job',
			operation: 'getCaptions',
			jobId: id,
			formats: ['srt'],
			binaryPropertyName: 'data',
		});
		const file = run.items[0].binary!.data;
		expect(file).toMatchObject({
			fileName: 'Keynote_ Q3_Q4.srt',
			mimeType: 'application/x-subrip',
			fileExtension: 'srt',
		});
		const bytes = await (
			await import('n8n-core')
		).BinaryDataService.prototype.getAsBuffer.call(await binaryDataService(), file);
		expect(bytes.toString()).toMatch(/^1\n00:00:00,000 --> /);
		expect(run.items[0].json).toMatchObject({ id, status: 'completed' });
	});

	test('several formats go into field_format, each a real file', async () => {
		const id = await order({ title: 'All formats' });
		sb.completeJob(id);
		const run = await runCaptioning(sb, {
			resource: 'job',
			operation: 'getCaptions',
			jobId: id,
			formats: ['srt', 'vtt', 'txt', 'docx', 'json'],
			binaryPropertyName: 'captions',
		});
		const binary = run.items[0].binary!;
		expect(Object.keys(binary).sort()).toEqual([
			'captions_docx',
			'captions_json',
			'captions_srt',
			'captions_txt',
			'captions_vtt',
		]);
		expect(binary.captions_vtt).toMatchObject({
			fileName: 'All formats.vtt',
			mimeType: 'text/vtt',
		});
		expect(binary.captions_docx).toMatchObject({
			fileName: 'All formats.docx',
			mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
		});
		expect(binary.captions_json.mimeType).toBe('application/json');
		const service = await binaryDataService();
		const docx = await service.getAsBuffer(binary.captions_docx);
		expect(docx.subarray(0, 2).toString()).toBe('PK');
		const nameLength = docx.readUInt16LE(26);
		expect(
			inflateRawSync(
				docx.subarray(30 + nameLength, 30 + nameLength + docx.readUInt32LE(18)),
			).toString(),
		).toContain('Types');
		expect(
			JSON.parse((await service.getAsBuffer(binary.captions_json)).toString()).segments.length,
		).toBeGreaterThan(3);
	});

	test('a job not yet completed is refused with its status', async () => {
		const id = await order();
		sb.startJob(id);
		const run = await runCaptioning(sb, {
			resource: 'job',
			operation: 'getCaptions',
			jobId: id,
			formats: ['srt'],
			binaryPropertyName: 'data',
		});
		expect(run.failure).toMatchObject({
			name: 'NodeOperationError',
			message: expect.stringMatching(
				new RegExp(`^Job ${id} is processing \\(0% done\\); captions exist once it is completed$`),
			),
		});
		expect(run.failure!.description).toMatch(/Wait for Completion/);
	});

	test('a cancelled job is refused with its reason', async () => {
		const id = await order();
		sb.cancelJob(id, 'unsupported_language');
		const run = await runCaptioning(sb, {
			resource: 'job',
			operation: 'getCaptions',
			jobId: id,
			formats: ['vtt'],
			binaryPropertyName: 'data',
		});
		expect(run.failure!.message).toBe(
			`Job ${id} was cancelled (unsupported_language: The spoken language is not supported.) and has no captions`,
		);
	});

	test('captions on another host are downloaded without the API key', async () => {
		sb.setCaptionsOn('storage');
		const id = await order();
		sb.completeJob(id);
		const run = await runCaptioning(sb, {
			resource: 'job',
			operation: 'getCaptions',
			jobId: id,
			formats: ['srt', 'vtt'],
			binaryPropertyName: 'data',
		});
		expect(run.failure).toBeUndefined();
		expect(sb.ledger.captionDownloads).toEqual([
			expect.objectContaining({ origin: 'storage', format: 'srt', authorization: false }),
			expect.objectContaining({ origin: 'storage', format: 'vtt', authorization: false }),
		]);
	});
});

describe("Job → Get Captions into the item's JSON (for AI Agents and text steps)", () => {
	test('Item JSON (Text): the text of SRT, VTT and TXT, the JSON format as segments; no files', async () => {
		const id = await order({ title: 'As text' });
		sb.completeJob(id);
		const run = await runCaptioning(sb, {
			resource: 'job',
			operation: 'getCaptions',
			jobId: id,
			formats: ['srt', 'vtt', 'txt', 'json'],
			captionsAs: 'json',
		});
		expect(run.failure).toBeUndefined();
		const json = run.items[0].json as {
			caption_text: Record<string, string>;
			caption_segments: Array<Record<string, unknown>>;
		};
		expect(run.items[0].binary).toBeUndefined();
		expect(json).toMatchObject({ id, status: 'completed' });
		expect(json.caption_text.srt).toMatch(/^1\n00:00:00,000 --> /);
		expect(json.caption_text.vtt).toMatch(/^WEBVTT/);
		expect(json.caption_text.txt).toMatch(/welcome back to the show/i);
		expect(json.caption_segments.length).toBeGreaterThan(3);
		expect(json.caption_segments[1]).toEqual({
			start: expect.any(Number),
			end: expect.any(Number),
			speaker: 'ALEX',
			text: expect.stringContaining('back to the show'),
		});
		expect(json).not.toHaveProperty('caption_truncated');
	});

	test('Both: the files, and their text beside them; DOCX as a file only', async () => {
		const id = await order({ title: 'Both' });
		sb.completeJob(id);
		const run = await runCaptioning(sb, {
			resource: 'job',
			operation: 'getCaptions',
			jobId: id,
			formats: ['srt', 'docx'],
			captionsAs: 'both',
			binaryPropertyName: 'data',
		});
		expect(Object.keys(run.items[0].binary!).sort()).toEqual(['data_docx', 'data_srt']);
		expect(Object.keys(run.items[0].json.caption_text as object)).toEqual(['srt']);
	});

	test('DOCX for the JSON alone is refused before any request, naming the fix', async () => {
		const run = await runCaptioning(sb, {
			resource: 'job',
			operation: 'getCaptions',
			jobId: 'any-id',
			formats: ['srt', 'docx'],
			captionsAs: 'json',
		});
		expect(run.failure).toMatchObject({
			message: "DOCX cannot go into the item's JSON",
			description: expect.stringMatching(/Put Captions In: Both/),
		});
		expect(sb.ledger.requests).toHaveLength(0);
	});

	test('text above the bound (1,000,000 characters) is cut at a line end and named in caption_truncated; the file stays whole', async () => {
		const id = await order({ title: 'Long' });
		sb.completeJob(id);
		// An SRT of 1.2 MB, where the captions link leads (a redirect to a storage host of the test's).
		const cue = (n: number) =>
			`${n}\n00:00:00,000 --> 00:00:01,000\n${'A long line of speech. '.repeat(4)}\n\n`;
		const srt = Array.from({ length: 12000 }, (_, n) => cue(n + 1)).join('');
		const storage = await httpReceiver((_req, res) => {
			res.setHeader('content-type', 'application/x-subrip');
			res.end(srt);
		});
		try {
			sb.injectFault('GET /jobs/{id}/captions', {
				kind: 'redirect',
				status: 302,
				location: `${storage.url}/long.srt`,
			});
			const run = await runCaptioning(sb, {
				resource: 'job',
				operation: 'getCaptions',
				jobId: id,
				formats: ['srt'],
				captionsAs: 'both',
				binaryPropertyName: 'data',
			});
			const json = run.items[0].json as {
				caption_text: { srt: string };
				caption_truncated: string[];
			};
			expect(json.caption_truncated).toEqual(['srt']);
			expect(run.hints).toEqual([
				{
					message:
						'Caption text was cut at 1,000,000 characters in the JSON (SRT: 1); caption_truncated names the format. Set Put Captions In to Binary Files or Both for the whole file.',
					type: 'warning',
					location: 'outputPane',
				},
			]);
			expect(json.caption_text.srt.length).toBeLessThanOrEqual(1_000_000);
			expect(json.caption_text.srt.endsWith('\n')).toBe(true);
			const whole = (
				await (await binaryDataService()).getAsBuffer(Object.values(run.items[0].binary!)[0])
			).toString();
			expect(whole).toBe(srt);
			expect(whole.startsWith(json.caption_text.srt)).toBe(true);
		} finally {
			await storage.close();
		}
	});
});

test('Account → Get returns the account of the key', async () => {
	const run = await runCaptioning(
		sb,
		{ resource: 'account', operation: 'get' },
		{ key: sb.keys.readOnly },
	);
	expect(run.items[0].json).toMatchObject({
		object: 'account',
		key: { access: 'read_only' },
		billing: { currency: 'usd' },
	});
});

describe('the item loop', () => {
	const items = [
		{ json: { url: MEDIA } },
		{ json: { url: 'not a url' } },
		{ json: { url: `${MEDIA}?v=3` } },
	];
	const params = {
		resource: 'job',
		operation: 'create',
		source: 'url',
		mediaUrl: '={{ $json.url }}',
	};

	test('with Continue On Fail, each item yields an output or an error item, all paired', async () => {
		const run = await runCaptioning(sb, params, {
			input: items,
			settings: { continueOnFail: true },
		});
		expect(run.items).toHaveLength(3);
		expect(run.items.map((i) => i.pairedItem)).toEqual([{ item: 0 }, { item: 1 }, { item: 2 }]);
		expect(run.items[0].json).toMatchObject({ object: 'job', media: { url: MEDIA } });
		expect(run.items[1].json).toEqual({
			error: 'Media URL "not a url" is not an http(s) URL',
			description: expect.stringMatching(/public http/),
		});
		expect(run.items[2].json).toMatchObject({ object: 'job' });
		expect(sb.ledger.jobs).toHaveLength(2);
	});

	test('a service error item carries status, code, param and request id, never the key', async () => {
		const run = await runCaptioning(
			sb,
			{ ...params, title: 'x'.repeat(301) },
			{ input: [items[0]], settings: { continueOnFail: true } },
		);
		expect(run.items[0]).toEqual({
			json: {
				error: 'title must be 1-300 characters. [HTTP 400 invalid_parameter]',
				description: expect.stringContaining('Field: title.'),
				httpCode: '400',
				code: 'invalid_parameter',
				param: 'title',
				requestId: expect.stringMatching(/^req_/),
			},
			pairedItem: { item: 0 },
		});
		expect(JSON.stringify(run.items)).not.toContain(sb.keys.full);
	});

	test('On Error "Continue (using error output)": failed items leave on the error output, with their fields and pairing', async () => {
		const readOnly = await runCaptioning(sb, params, {
			input: items,
			key: sb.keys.readOnly,
			settings: { onError: 'continueErrorOutput' },
		});
		expect(readOnly.output(NODE)).toEqual([]);
		const detail = (json: IDataObject) =>
			(json.error as IDataObject).httpCode ?? (json.error as IDataObject).message;
		expect(readOnly.output(NODE, 1).map((i) => [i.pairedItem, detail(i.json)])).toEqual([
			[{ item: 0 }, '403'],
			[{ item: 1 }, 'Media URL "not a url" is not an http(s) URL'],
			[{ item: 2 }, '403'],
		]);
		expect(readOnly.output(NODE, 1)[0].json).toEqual({
			error: {
				message: expect.stringMatching(/read-only/),
				description: expect.stringMatching(/full access/),
				httpCode: '403',
				code: 'insufficient_permissions',
				requestId: expect.stringMatching(/^req_/),
			},
		});

		const mixed = await runCaptioning(sb, params, {
			input: items,
			settings: { onError: 'continueErrorOutput' },
		});
		expect(mixed.output(NODE).map((i) => [i.pairedItem, i.json.object])).toEqual([
			[{ item: 0 }, 'job'],
			[{ item: 2 }, 'job'],
		]);
		expect(mixed.output(NODE, 1)).toEqual([
			{
				json: {
					error: {
						message: 'Media URL "not a url" is not an http(s) URL',
						description: expect.stringMatching(/public http/),
					},
				},
				pairedItem: { item: 1 },
			},
		]);
	});

	test('without Continue On Fail, the first bad item stops the node and names its index', async () => {
		const run = await runCaptioning(sb, params, { input: items });
		expect(run.failure).toMatchObject({
			message: 'Media URL "not a url" is not an http(s) URL',
			context: { itemIndex: 1 },
		});
	});
});

test('the node is usable as an AI tool', async () => {
	const { Captioning } = await import('../../nodes/Captioning/Captioning.node.js');
	expect(new Captioning().description.usableAsTool).toBe(true);
});
