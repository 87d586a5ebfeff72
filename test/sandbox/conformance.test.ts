// The sandbox against the interface (../shared/captioning-api-v1.md) and DESIGN.md's assumptions:
// each rule is a test that fails if the sandbox breaks it.
import { createHash } from 'node:crypto';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { inflateRawSync } from 'node:zlib';

import { httpsReceiver, tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import { startS3 } from '../helpers/s3Bucket';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { FORMATS } = require('../../sandbox/captions') as { FORMATS: string[] };

let sb: Sandbox;

beforeAll(async () => {
	sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
});
afterAll(async () => await sb.close());
beforeEach(() => {
	sb.clearFaults();
	sb.setRateLimits({});
	sb.setTiming(null);
	sb.setCaptionsOn('api');
	sb.setWebhook({ duplicate: false, attempts: 3 });
});

interface CallOptions {
	key?: string | null;
	body?: unknown;
	raw?: string;
	headers?: Record<string, string>;
}

async function call(method: string, path: string, options: CallOptions = {}) {
	const headers: Record<string, string> = { ...options.headers };
	const key = options.key === undefined ? sb.keys.full : options.key;
	if (key !== null) headers.authorization = `Bearer ${key}`;
	let body: string | undefined = options.raw;
	if (options.body !== undefined) {
		body = JSON.stringify(options.body);
		headers['content-type'] ??= 'application/json';
	}
	const res = await fetch(`${sb.baseUrl}${path}`, { method, headers, body });
	const text = await res.text();
	let json: Record<string, any> = {};
	try {
		json = JSON.parse(text);
	} catch {
		json = {};
	}
	return { status: res.status, headers: res.headers, json, text };
}

const MEDIA = 'https://media.example.com/talk.mp4';
const createJob = (body: Record<string, unknown>, options: CallOptions = {}) =>
	call('POST', '/jobs', { body, ...options });

describe('authentication (part 5)', () => {
	test.each([
		['no key', null, 'missing_api_key'],
		['a wrong key', 'sk_wrong', 'invalid_api_key'],
	])('%s answers 401', async (_name, key, code) => {
		const r = await call('GET', '/account', { key });
		expect(r.status).toBe(401);
		expect(r.json.error.code).toBe(code);
	});

	test('a revoked key answers 401 with its own code and message', async () => {
		const r = await call('GET', '/account', { key: sb.keys.revoked });
		expect(r.status).toBe(401);
		expect(r.json.error).toEqual({
			code: 'api_key_revoked',
			message: expect.stringMatching(/revoked/),
			param: '',
		});
	});

	test('a read-only key reads jobs and the account but may not order or upload (403)', async () => {
		expect((await call('GET', '/account', { key: sb.keys.readOnly })).json.key.access).toBe(
			'read_only',
		);
		expect((await call('GET', '/jobs', { key: sb.keys.readOnly })).status).toBe(200);
		const jobs = sb.ledger.jobs.length;
		const order = await createJob({ media_url: MEDIA }, { key: sb.keys.readOnly });
		expect(order.status).toBe(403);
		expect(order.json.error.message).toMatch(/read-only/);
		expect((await call('POST', '/uploads', { key: sb.keys.readOnly, body: {} })).status).toBe(403);
		expect(sb.ledger.jobs.length).toBe(jobs);
	});

	test("another workspace's job answers 404", async () => {
		const job = (await createJob({ media_url: MEDIA })).json;
		const r = await call('GET', `/jobs/${job.id}`, { key: sb.keys.otherWorkspace });
		expect(r.status).toBe(404);
		expect(r.json.error.code).toBe('not_found');
	});
});

describe('POST /jobs (4.1)', () => {
	test('201 with the Job, request-id and cache-control: no-store; defaults of 2.1 echoed', async () => {
		const r = await createJob({ media_url: MEDIA });
		expect(r.status).toBe(201);
		expect(r.headers.get('request-id')).toMatch(/^req_/);
		expect(r.headers.get('cache-control')).toBe('no-store');
		expect(r.json).toMatchObject({
			object: 'job',
			status: 'queued',
			title: r.json.id,
			media: { type: 'url', url: MEDIA, upload_id: null },
			options: {
				style: 'clean',
				model: 'captioner-base',
				speaker_labels: true,
				speaker_label_style: 'gt_name',
				atmospherics: true,
				profanity: 'as_spoken',
				redactions: {
					pii: false,
					names: false,
					organizations: false,
					terms: [],
					replacement: 'category_label',
				},
				glossary: [],
				webhook_url: null,
			},
			cost: { currency: 'usd' },
			captions: null,
			cancellation: null,
		});
		expect(r.json.id).toMatch(/^[0-9a-f-]{36}$/);
	});

	const long = (n: number) => 'x'.repeat(n);
	const metadata = (n: number) =>
		Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
	test.each<[string, Record<string, unknown>, string]>([
		[
			'both sources',
			{ media_url: MEDIA, upload_id: '6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5' },
			'upload_id',
		],
		['neither source', { title: 'x' }, 'media_url'],
		['an empty media_url', { media_url: '' }, 'media_url'],
		['a media_url that is not http(s)', { media_url: 'ftp://x/y.mp4' }, 'media_url'],
		['an upload_id that is not a uuid', { upload_id: 'abc' }, 'upload_id'],
		['an empty title', { media_url: MEDIA, title: '' }, 'title'],
		['a title over 300 chars', { media_url: MEDIA, title: long(301) }, 'title'],
		['an unknown style', { media_url: MEDIA, style: 'fancy' }, 'style'],
		['an unknown model', { media_url: MEDIA, model: 'gpt' }, 'model'],
		['speaker_labels not boolean', { media_url: MEDIA, speaker_labels: 'yes' }, 'speaker_labels'],
		[
			'an unknown speaker_label_style',
			{ media_url: MEDIA, speaker_label_style: 'caps' },
			'speaker_label_style',
		],
		['atmospherics not boolean', { media_url: MEDIA, atmospherics: 1 }, 'atmospherics'],
		['an unknown profanity', { media_url: MEDIA, profanity: 'bleep' }, 'profanity'],
		[
			'a blank redaction term',
			{ media_url: MEDIA, redactions: { terms: ['ok', '  '] } },
			'redactions.terms[1]',
		],
		[
			'a multi-line redaction term',
			{ media_url: MEDIA, redactions: { terms: ['a\nb'] } },
			'redactions.terms[0]',
		],
		[
			'201 redaction terms',
			{ media_url: MEDIA, redactions: { terms: Array(201).fill('t') } },
			'redactions.terms',
		],
		[
			'an unknown replacement',
			{ media_url: MEDIA, redactions: { replacement: 'stars' } },
			'redactions.replacement',
		],
		[
			'custom_string without custom_replacement',
			{ media_url: MEDIA, redactions: { replacement: 'custom_string' } },
			'redactions.custom_replacement',
		],
		[
			'a multi-line custom_replacement',
			{
				media_url: MEDIA,
				redactions: { replacement: 'custom_string', custom_replacement: 'a\nb' },
			},
			'redactions.custom_replacement',
		],
		[
			'a blank custom_replacement',
			{ media_url: MEDIA, redactions: { replacement: 'custom_string', custom_replacement: ' ' } },
			'redactions.custom_replacement',
		],
		[
			'a custom_replacement over 120 chars',
			{
				media_url: MEDIA,
				redactions: { replacement: 'custom_string', custom_replacement: long(121) },
			},
			'redactions.custom_replacement',
		],
		[
			'custom_replacement in the standard variant',
			{ media_url: MEDIA, redactions: { replacement: 'redacted', custom_replacement: 'x' } },
			'redactions.custom_replacement',
		],
		['201 glossary terms', { media_url: MEDIA, glossary: Array(201).fill('t') }, 'glossary'],
		['a glossary term over 100 chars', { media_url: MEDIA, glossary: [long(101)] }, 'glossary[0]'],
		[
			'a webhook_url that is not https',
			{ media_url: MEDIA, webhook_url: 'http://hooks.example.com/x' },
			'webhook_url',
		],
		[
			'a webhook_url over 2048 chars',
			{ media_url: MEDIA, webhook_url: `https://h.example.com/${long(2040)}` },
			'webhook_url',
		],
		['21 metadata keys', { media_url: MEDIA, metadata: metadata(21) }, 'metadata'],
		[
			'a metadata key over 40 chars',
			{ media_url: MEDIA, metadata: { [long(41)]: 'v' } },
			`metadata.${long(41)}`,
		],
		[
			'a metadata value over 500 chars',
			{ media_url: MEDIA, metadata: { k: long(501) } },
			'metadata.k',
		],
		[
			'a metadata value that is not a string',
			{ media_url: MEDIA, metadata: { k: 1 } },
			'metadata.k',
		],
		['an unknown field', { media_url: MEDIA, language: 'en' }, 'language'],
	])('400 for %s', async (_name, body, param) => {
		const before = sb.ledger.jobs.length;
		const r = await createJob(body);
		expect(r.status).toBe(400);
		expect(r.json.error.param).toBe(param);
		expect(r.json.error.message).toEqual(expect.any(String));
		expect(sb.ledger.jobs.length).toBe(before);
	});

	test('the bounds at their limits are accepted', async () => {
		const r = await createJob({
			media_url: MEDIA,
			title: long(300),
			glossary: Array(200).fill(long(100)),
			metadata: { ...metadata(19), [long(40)]: long(500) },
			redactions: {
				terms: Array(200).fill('t'),
				replacement: 'custom_string',
				custom_replacement: long(120),
			},
			webhook_url: `https://h.example.com/${long(2048 - 22)}`,
		});
		expect(r.status).toBe(201);
	});

	test.each([
		['with a space', 'a b'],
		['over 255 chars', 'k'.repeat(256)],
		['with a non-ASCII character', 'cl\u00e9'],
	])('400 for an Idempotency-Key %s', async (_name, key) => {
		// node:http, because fetch itself refuses some of these header values.
		const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
			const req = httpRequest(
				`${sb.baseUrl}/jobs`,
				{
					method: 'POST',
					headers: {
						authorization: `Bearer ${sb.keys.full}`,
						'content-type': 'application/json',
						'idempotency-key': Buffer.from(key, 'latin1').toString('latin1'),
					},
				},
				(res) => {
					let body = '';
					res.on('data', (c) => (body += c));
					res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
				},
			);
			req.on('error', reject);
			req.end(JSON.stringify({ media_url: MEDIA }));
		});
		expect(r.status).toBe(400);
		expect(JSON.parse(r.body).error.param).toBe('Idempotency-Key');
	});

	test('413 over 64 KiB of JSON', async () => {
		const r = await createJob({
			media_url: MEDIA,
			title: 'x',
			glossary: Array(700).fill('y'.repeat(100)),
		});
		expect(r.status).toBe(413);
	});

	test('415 for a body that is not application/json', async () => {
		const r = await call('POST', '/jobs', {
			raw: 'media_url=x',
			headers: { 'content-type': 'application/x-www-form-urlencoded' },
		});
		expect(r.status).toBe(415);
	});

	test('same Idempotency-Key and body: 200, idempotent-replayed, the original job, one charge', async () => {
		const headers = { 'idempotency-key': `same-${Date.now()}` };
		const first = await createJob({ media_url: MEDIA, title: 'Once' }, { headers });
		const charges = sb.ledger.charges.length;
		const again = await createJob({ title: 'Once', media_url: MEDIA }, { headers });
		expect(first.status).toBe(201);
		expect(again.status).toBe(200);
		expect(again.headers.get('idempotent-replayed')).toBe('true');
		expect(again.json.id).toBe(first.json.id);
		expect(sb.ledger.charges.length).toBe(charges);
	});

	test('same Idempotency-Key, different body: 409 idempotency_conflict', async () => {
		const headers = { 'idempotency-key': `conflict-${Date.now()}` };
		await createJob({ media_url: MEDIA }, { headers });
		const r = await createJob({ media_url: MEDIA, title: 'other' }, { headers });
		expect(r.status).toBe(409);
		expect(r.json.error.code).toBe('idempotency_conflict');
	});

	test('Idempotency-Keys are scoped to the workspace', async () => {
		const headers = { 'idempotency-key': `scoped-${Date.now()}` };
		const a = await createJob({ media_url: MEDIA }, { headers });
		const b = await createJob({ media_url: MEDIA }, { headers, key: sb.keys.otherWorkspace });
		expect(b.status).toBe(201);
		expect(b.json.id).not.toBe(a.json.id);
	});

	test('without a key every accepted request is a new job and a new charge', async () => {
		const charges = sb.ledger.charges.length;
		const a = await createJob({ media_url: MEDIA });
		const b = await createJob({ media_url: MEDIA });
		expect(a.json.id).not.toBe(b.json.id);
		expect(sb.ledger.charges.length).toBe(charges + 2);
	});

	test('402 when the prepaid balance does not cover the order', async () => {
		const r = await createJob({ media_url: MEDIA }, { key: sb.keys.noBalance });
		expect(r.status).toBe(402);
		expect(r.json.error.code).toBe('insufficient_funds');
	});

	test('cost in USD per started minute, with atmospherics and redactions as add-ons', async () => {
		const cost = async (body: Record<string, unknown>) =>
			(await createJob({ media_url: `${MEDIA}?duration=300`, ...body })).json.cost;
		expect(await cost({ atmospherics: false })).toEqual({ amount: '1.25', currency: 'usd' });
		expect(await cost({})).toEqual({ amount: '1.50', currency: 'usd' });
		expect(await cost({ redactions: { pii: true } })).toEqual({ amount: '2.00', currency: 'usd' });
		expect(
			(await createJob({ media_url: `${MEDIA}?duration=61`, atmospherics: false })).json.cost
				.amount,
		).toBe('0.50');
	});

	test('422 for media over the 12-hour limit', async () => {
		const r = await createJob({ media_url: `${MEDIA}?duration=43201` });
		expect(r.status).toBe(422);
		expect(r.json.error.param).toBe('media_url');
	});
});

describe('job lifecycle (part 3, DESIGN)', () => {
	test('queued → processing (progress, eta, language) → completed with captions in five formats', async () => {
		sb.setTiming({ queuedMs: 50, processingMs: 300 });
		const job = (await createJob({ media_url: MEDIA })).json;
		expect(job.status).toBe('queued');
		await new Promise((r) => setTimeout(r, 150));
		const processing = (await call('GET', `/jobs/${job.id}`)).json;
		expect(processing).toMatchObject({
			status: 'processing',
			language: 'en',
			eta: expect.any(String),
		});
		expect(processing.progress).toBeGreaterThanOrEqual(0);
		expect(processing.progress).toBeLessThan(100);
		await new Promise((r) => setTimeout(r, 400));
		const done = (await call('GET', `/jobs/${job.id}`)).json;
		expect(done).toMatchObject({
			status: 'completed',
			progress: 100,
			completed_at: expect.any(String),
		});
		expect(Object.keys(done.captions).sort()).toEqual([...FORMATS].sort());
	});

	test('caption files are real SRT, VTT, TXT, JSON and DOCX', async () => {
		const job = (await createJob({ media_url: MEDIA, title: 'Real files' })).json;
		const done = sb.completeJob(job.id) as { captions: Record<string, string> };
		const get = async (f: string) => {
			const res = await fetch(done.captions[f], {
				headers: { authorization: `Bearer ${sb.keys.full}` },
			});
			return { type: res.headers.get('content-type'), data: Buffer.from(await res.arrayBuffer()) };
		};
		const srt = await get('srt');
		expect(srt.type).toBe('application/x-subrip');
		expect(srt.data.toString()).toMatch(/^1\n00:00:00,000 --> 00:00:0\d,\d{3}\n/);
		const vtt = await get('vtt');
		expect(vtt.data.toString()).toMatch(/^WEBVTT\n\n00:00:00\.000 --> /);
		expect((await get('txt')).data.toString()).toMatch(/^\[MUSIC\]\n\nAlex:\n/);
		const json = JSON.parse((await get('json')).data.toString());
		expect(json.segments[1]).toMatchObject({ speaker: 'ALEX', start: expect.any(Number) });
		const docx = (await get('docx')).data;
		expect(docx.subarray(0, 4)).toEqual(Buffer.from([0x50, 0x4b, 0x03, 0x04]));
		// Read the zip's first entries back: local header, then deflated data.
		const names: string[] = [];
		let offset = 0;
		let documentXml = '';
		while (docx.readUInt32LE(offset) === 0x04034b50) {
			const size = docx.readUInt32LE(offset + 18);
			const nameLength = docx.readUInt16LE(offset + 26);
			const name = docx.subarray(offset + 30, offset + 30 + nameLength).toString();
			const data = docx.subarray(offset + 30 + nameLength, offset + 30 + nameLength + size);
			names.push(name);
			if (name === 'word/document.xml') documentXml = inflateRawSync(data).toString();
			offset += 30 + nameLength + size;
		}
		expect(names).toEqual(['[Content_Types].xml', '_rels/.rels', 'word/document.xml']);
		expect(documentXml).toContain('Real files');
	});

	test('the options shape the captions', async () => {
		const job = (
			await createJob({
				media_url: MEDIA,
				style: 'verbatim',
				speaker_label_style: 'brackets',
				atmospherics: false,
				profanity: 'mask',
				glossary: ['Kubernetes'],
				redactions: {
					pii: true,
					organizations: true,
					replacement: 'custom_string',
					custom_replacement: '(hidden)',
				},
			})
		).json;
		const { captions } = sb.completeJob(job.id) as { captions: Record<string, string> };
		const srt = await (
			await fetch(captions.srt, { headers: { authorization: `Bearer ${sb.keys.full}` } })
		).text();
		expect(srt).toContain('[ALEX] Um, welcome back');
		expect(srt).toContain('I-I am Alex from (hidden).');
		expect(srt).not.toContain('[MUSIC]');
		expect(srt).toContain('That d*** cluster');
		expect(srt).toContain('about Kubernetes, uh,');
		expect(srt).toContain('Reach me at (hidden) or (hidden)');
	});

	test.each([
		'unsupported_language',
		'unsupported_media',
		'unusable_media',
		'media_unavailable',
		'deleted',
		'not_started',
	])('cancelled with reason %s: refunded, no captions', async (reason) => {
		const balance = Number(sb.balance());
		const job = (await createJob({ media_url: MEDIA })).json;
		expect(Number(sb.balance())).toBeLessThan(balance);
		sb.cancelJob(job.id, reason);
		const r = (await call('GET', `/jobs/${job.id}`)).json;
		expect(r).toMatchObject({
			status: 'cancelled',
			cancellation: { reason, message: expect.any(String) },
			captions: null,
			cost: { amount: '0.00' },
		});
		expect(Number(sb.balance())).toBeCloseTo(balance, 2);
	});

	test('a media URL naming cancel-<reason> ends cancelled by itself', async () => {
		sb.setTiming({ queuedMs: 10, processingMs: 30 });
		const job = (
			await createJob({ media_url: 'https://media.example.com/cancel-unsupported_language.mp4' })
		).json;
		await new Promise((r) => setTimeout(r, 150));
		expect((await call('GET', `/jobs/${job.id}`)).json.cancellation.reason).toBe(
			'unsupported_language',
		);
	});

	test('captions links on another host need no key and record whether one was sent', async () => {
		sb.setCaptionsOn('storage');
		const job = (await createJob({ media_url: MEDIA })).json;
		const { captions } = sb.completeJob(job.id) as { captions: Record<string, string> };
		expect(new URL(captions.vtt).origin).toBe(sb.storageOrigin);
		const res = await fetch(captions.vtt);
		expect(res.status).toBe(200);
		expect(sb.ledger.captionDownloads.at(-1)).toMatchObject({
			origin: 'storage',
			format: 'vtt',
			authorization: false,
		});
		expect((await fetch(captions.vtt.replace(/sig=\w+/, 'sig=forged'))).status).toBe(403);
	});
});

describe('uploads (2.4, 4.2)', () => {
	const put = (url: string, data: Buffer, headers: Record<string, string> = {}) =>
		new Promise<number>((resolve, reject) => {
			const req = httpRequest(
				url,
				{ method: 'PUT', headers: { 'content-length': String(data.length), ...headers } },
				(res) => {
					res.resume();
					resolve(res.statusCode ?? 0);
				},
			);
			req.on('error', reject);
			req.end(data);
		});

	test('POST /uploads → 201 Upload with a presigned PUT URL on the storage host', async () => {
		const r = await call('POST', '/uploads', {
			body: { filename: 'a.mp4', content_type: 'video/mp4', size_bytes: 3 },
		});
		expect(r.status).toBe(201);
		expect(r.json).toMatchObject({
			object: 'upload',
			method: 'PUT',
			max_size_bytes: 5242880000,
			expires_at: expect.any(String),
		});
		expect(new URL(r.json.upload_url).origin).toBe(sb.storageOrigin);
		expect((await call('POST', '/uploads')).status).toBe(201);
	});

	test('size_bytes over 5242880000 is refused', async () => {
		const r = await call('POST', '/uploads', { body: { size_bytes: 5242880001 } });
		expect(r.status).toBe(400);
		expect(r.json.error.param).toBe('size_bytes');
	});

	test('the PUT records bytes and hash; the upload then becomes a job source', async () => {
		const upload = (await call('POST', '/uploads', { body: { filename: 'clip.mp4' } })).json;
		expect((await createJob({ upload_id: upload.id })).json.error.code).toBe('upload_incomplete');
		const data = Buffer.from('fake media bytes');
		expect(await put(upload.upload_url, data)).toBe(200);
		const record = sb.ledger.uploads.find((u) => u.id === upload.id)!;
		expect(record).toMatchObject({
			receivedBytes: data.length,
			complete: true,
			authorizationSeen: false,
		});
		expect(record.sha256).toBe(createHash('sha256').update(data).digest('hex'));
		const job = await createJob({ upload_id: upload.id });
		expect(job.status).toBe(201);
		expect(job.json.media).toMatchObject({ type: 'upload', upload_id: upload.id, url: null });
	});

	test('a PUT with an Authorization header is refused and recorded', async () => {
		const upload = (await call('POST', '/uploads', { body: {} })).json;
		expect(
			await put(upload.upload_url, Buffer.from('x'), { authorization: `Bearer ${sb.keys.full}` }),
		).toBe(400);
		expect(sb.ledger.uploads.find((u) => u.id === upload.id)!.authorizationSeen).toBe(true);
	});

	/** Sends only a request head on a raw socket and resolves the response's status code. */
	const statusForHead = (url: string, headerLines: string[]) =>
		new Promise<number>((resolve, reject) => {
			const u = new URL(url);
			const socket = connect(Number(u.port), u.hostname, () => {
				socket.write(
					`PUT ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\n${headerLines.join('\r\n')}\r\n\r\n`,
				);
			});
			let head = '';
			socket.on('data', (chunk) => {
				head += chunk.toString('latin1');
				const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
				if (m) {
					socket.destroy();
					resolve(Number(m[1]));
				}
			});
			socket.on('error', reject);
		});

	test('a PUT declaring over 5242880000 bytes is refused before any byte is read', async () => {
		const upload = (await call('POST', '/uploads', { body: {} })).json;
		expect(await statusForHead(upload.upload_url, ['Content-Length: 5242880001'])).toBe(413);
	});

	test('a PUT without Content-Length is refused (411)', async () => {
		const upload = (await call('POST', '/uploads', { body: {} })).json;
		expect(await statusForHead(upload.upload_url, ['Transfer-Encoding: chunked'])).toBe(411);
	});

	test('a PUT with a forged signature is refused (403)', async () => {
		const upload = (await call('POST', '/uploads', { body: {} })).json;
		expect(await put(upload.upload_url.replace(/sig=\w+/, 'sig=0'), Buffer.from('x'))).toBe(403);
	});

	test('upload of another workspace is not found', async () => {
		const upload = (await call('POST', '/uploads', { body: {} })).json;
		await put(upload.upload_url, Buffer.from('x'));
		const r = await createJob({ upload_id: upload.id }, { key: sb.keys.otherWorkspace });
		expect(r.status).toBe(404);
		expect(r.json.error.param).toBe('upload_id');
	});
});

describe('read endpoints (DESIGN assumptions)', () => {
	let ws: Sandbox;
	beforeAll(async () => {
		ws = await createSandbox({ timing: null });
	});
	afterAll(async () => await ws.close());
	// eslint-disable-next-line @typescript-eslint/no-explicit-any
	const get = async (path: string): Promise<any> =>
		await (
			await fetch(`${ws.baseUrl}${path}`, { headers: { authorization: `Bearer ${ws.keys.full}` } })
		).json();

	test('GET /jobs lists newest first, 10 by default, pages with starting_after, filters by status', async () => {
		const ids: string[] = [];
		for (let i = 0; i < 12; i++) {
			const res = await fetch(`${ws.baseUrl}/jobs`, {
				method: 'POST',
				headers: { authorization: `Bearer ${ws.keys.full}`, 'content-type': 'application/json' },
				body: JSON.stringify({ media_url: MEDIA, title: `job ${i}` }),
			});
			ids.push(((await res.json()) as { id: string }).id);
		}
		ws.completeJob(ids[3]);
		const first = await get('/jobs');
		expect(first).toMatchObject({ object: 'list', has_more: true });
		expect(first.data.map((j: { id: string }) => j.id)).toEqual(ids.slice(2).reverse());
		const second = await get(`/jobs?limit=5&starting_after=${ids[2]}`);
		expect(second.data.map((j: { id: string }) => j.id)).toEqual([ids[1], ids[0]]);
		expect(second.has_more).toBe(false);
		const completed = await get('/jobs?status=completed');
		expect(completed.data.map((j: { id: string }) => j.id)).toEqual([ids[3]]);
	});

	test.each(['limit=0', 'limit=101', 'limit=x', 'status=done', 'starting_after=nope'])(
		'GET /jobs?%s is 400',
		async (qs) => {
			const res = await fetch(`${ws.baseUrl}/jobs?${qs}`, {
				headers: { authorization: `Bearer ${ws.keys.full}` },
			});
			expect(res.status).toBe(400);
			expect(((await res.json()) as { error: { param: string } }).error.param).toBe(
				qs.split('=')[0],
			);
		},
	);

	test('GET /jobs refuses any parameter DESIGN.md does not name (400 unknown_parameter), a metadata filter included', async () => {
		const res = await fetch(`${ws.baseUrl}/jobs?metadata[n8n_order]=x`, {
			headers: { authorization: `Bearer ${ws.keys.full}` },
		});
		expect(res.status).toBe(400);
		expect(((await res.json()) as { error: object }).error).toEqual({
			code: 'unknown_parameter',
			message: 'unknown query parameter metadata[n8n_order]',
			param: 'metadata[n8n_order]',
		});
	});

	test('extensions behind options: listMetadataFilter filters by metadata, listLagMs lists a job only that long after its creation', async () => {
		const ext = await createSandbox({ timing: null, listMetadataFilter: true, listLagMs: 2000 });
		try {
			const order = async (metadata: object) =>
				(await (
					await fetch(`${ext.baseUrl}/jobs`, {
						method: 'POST',
						headers: {
							authorization: `Bearer ${ext.keys.full}`,
							'content-type': 'application/json',
						},
						body: JSON.stringify({ media_url: MEDIA, metadata }),
					})
				).json()) as { id: string };
			const list = async (qs = '') =>
				(
					(await (
						await fetch(`${ext.baseUrl}/jobs${qs}`, {
							headers: { authorization: `Bearer ${ext.keys.full}` },
						})
					).json()) as { data: Array<{ id: string }> }
				).data.map((j) => j.id);
			const a = await order({ tag: 'a' });
			const b = await order({ tag: 'b' });
			expect(await list()).toEqual([]);
			const byId = await fetch(`${ext.baseUrl}/jobs/${a.id}`, {
				headers: { authorization: `Bearer ${ext.keys.full}` },
			});
			expect(byId.status).toBe(200);
			await new Promise((resolve) => setTimeout(resolve, 2100));
			expect(await list()).toEqual([b.id, a.id]);
			expect(await list('?metadata[tag]=a')).toEqual([a.id]);
		} finally {
			await ext.close();
		}
	});

	test('GET /account has workspace, key and billing', async () => {
		expect(await get('/account')).toEqual({
			object: 'account',
			workspace: { id: expect.any(String), name: 'Sandbox Studio' },
			key: { id: expect.any(String), name: 'full', access: 'full' },
			billing: {
				mode: 'prepaid',
				balance: expect.stringMatching(/^\d+\.\d\d$/),
				currency: 'usd',
				rate_per_minute: '0.25',
			},
		});
	});
});

describe('events (part 6)', () => {
	test('job.completed and job.cancelled are POSTed over HTTPS with the full job and its metadata', async () => {
		const receiver = await httpsReceiver();
		try {
			const a = (
				await createJob({
					media_url: MEDIA,
					webhook_url: `${receiver.url}/hook`,
					metadata: { drive_id: 'f1' },
				})
			).json;
			const b = (await createJob({ media_url: MEDIA, webhook_url: `${receiver.url}/hook` })).json;
			sb.completeJob(a.id);
			sb.cancelJob(b.id, 'unusable_media');
			await sb.settleDeliveries();
			const events = receiver.received.map((r) => JSON.parse(r.body));
			expect(
				receiver.received.every(
					(r) => r.method === 'POST' && r.headers['content-type'] === 'application/json',
				),
			).toBe(true);
			expect(events).toEqual(
				expect.arrayContaining([
					expect.objectContaining({
						id: expect.stringMatching(/^evt_/),
						object: 'event',
						type: 'job.completed',
						created_at: expect.any(String),
						data: expect.objectContaining({
							id: a.id,
							status: 'completed',
							metadata: { drive_id: 'f1' },
							captions: expect.any(Object),
						}),
					}),
					expect.objectContaining({
						type: 'job.cancelled',
						data: expect.objectContaining({
							id: b.id,
							status: 'cancelled',
							cancellation: expect.objectContaining({ reason: 'unusable_media' }),
						}),
					}),
				]),
			);
		} finally {
			await receiver.close();
		}
	});

	test('redirects are not followed; non-2xx answers are retried; duplicates can be switched on', async () => {
		const target = await httpsReceiver();
		const redirecting = await httpsReceiver((_req, res) =>
			res.writeHead(302, { location: `${target.url}/elsewhere` }).end(),
		);
		try {
			const job = (await createJob({ media_url: MEDIA, webhook_url: `${redirecting.url}/hook` }))
				.json;
			sb.completeJob(job.id);
			await sb.settleDeliveries();
			expect(target.received).toHaveLength(0);
			expect(redirecting.received).toHaveLength(3);
			expect(sb.ledger.deliveries.filter((d) => d.jobId === job.id).map((d) => d.status)).toEqual([
				302, 302, 302,
			]);

			sb.setWebhook({ duplicate: true });
			const twice = (await createJob({ media_url: MEDIA, webhook_url: `${target.url}/hook` })).json;
			sb.completeJob(twice.id);
			await sb.settleDeliveries();
			const ids = target.received.map((r) => JSON.parse(r.body).id);
			expect(ids).toHaveLength(2);
			expect(ids[0]).toBe(ids[1]);
		} finally {
			await target.close();
			await redirecting.close();
		}
	});
});

describe('the service fetches a media_url (on this machine only), as it would when it takes the job', () => {
	test('a readable URL: the first KiB and the size recorded, the query (a signature) left out; the job completes', async () => {
		const media = Buffer.alloc(5000, 7);
		const server = createServer((req, res) => {
			const range = /^bytes=(\d+)-(\d+)$/.exec(String(req.headers.range ?? ''));
			const [from, to] = range
				? [Number(range[1]), Math.min(Number(range[2]), media.length - 1)]
				: [0, media.length - 1];
			res.writeHead(
				range ? 206 : 200,
				range ? { 'content-range': `bytes ${from}-${to}/${media.length}` } : {},
			);
			res.end(media.subarray(from, to + 1));
		});
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
		try {
			const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/video.mp4?X-Amz-Signature=secret`;
			const res = await createJob({ media_url: url });
			await sb.settleDeliveries();
			expect(sb.ledger.mediaFetches.at(-1)).toMatchObject({
				jobId: res.json.id,
				url: url.split('?')[0],
				status: 206,
				bytes: 1024,
				size: 5000,
				error: null,
			});
			expect(sb.completeJob(res.json.id as string).status).toBe('completed');
		} finally {
			server.close();
		}
	});

	test('a URL the store refuses (an S3 object without a valid signature: 403): the job ends cancelled, media_unavailable', async () => {
		const s3 = await startS3();
		try {
			await s3.put('lecture.mp4', Buffer.alloc(2048, 1));
			// A presigned URL in every part but its signature (s3rver checks it; unsigned reads it lets through).
			const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
			const query = new URLSearchParams({
				'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
				'X-Amz-Credential': `${s3.accessKeyId}/${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`,
				'X-Amz-Date': amzDate,
				'X-Amz-Expires': '3600',
				'X-Amz-SignedHeaders': 'host',
				'X-Amz-Signature': '0'.repeat(64),
			});
			const res = await createJob({
				media_url: `${s3.endpoint}/${s3.bucket}/lecture.mp4?${query}`,
			});
			await sb.settleDeliveries();
			expect(sb.ledger.mediaFetches.at(-1)).toMatchObject({ jobId: res.json.id, status: 403 });
			expect(sb.completeJob(res.json.id as string)).toMatchObject({
				status: 'cancelled',
				cancellation: { reason: 'media_unavailable' },
			});
		} finally {
			await s3.close();
		}
	});

	test("media.example.com (the examples' host) is never fetched", async () => {
		sb.resetLedger();
		await createJob({ media_url: MEDIA });
		await sb.settleDeliveries();
		expect(sb.ledger.mediaFetches).toEqual([]);
	});
});

describe('limits and faults (part 7, 8)', () => {
	test('the write limit per workspace answers 429 with Retry-After', async () => {
		sb.setRateLimits({ writePerSecond: 2 });
		const statuses = [];
		for (let i = 0; i < 3; i++) statuses.push(await createJob({ media_url: MEDIA }));
		expect(statuses.map((s) => s.status)).toEqual([201, 201, 429]);
		expect(Number(statuses[2].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
		expect(statuses[2].json.error.code).toBe('rate_limited');
	});

	test('the read limit is per API key', async () => {
		sb.setRateLimits({ readPerSecond: 1 });
		expect((await call('GET', '/account')).status).toBe(200);
		expect((await call('GET', '/account')).status).toBe(429);
		expect((await call('GET', '/account', { key: sb.keys.readOnly })).status).toBe(200);
	});

	test('injected 500 and 503 temporarily_unavailable, then normal service', async () => {
		sb.injectFault('GET /account', { status: 500 });
		sb.injectFault('GET /account', { status: 503, retryAfter: 5 });
		expect((await call('GET', '/account')).status).toBe(500);
		const unavailable = await call('GET', '/account');
		expect(unavailable.status).toBe(503);
		expect(unavailable.json.error.code).toBe('temporarily_unavailable');
		expect(unavailable.headers.get('retry-after')).toBe('5');
		expect((await call('GET', '/account')).status).toBe(200);
	});

	test('a reset drops the connection without creating a job; a lost response creates one', async () => {
		const before = sb.ledger.jobs.length;
		sb.injectFault('POST /jobs', { kind: 'reset' });
		await expect(createJob({ media_url: MEDIA })).rejects.toThrow();
		expect(sb.ledger.jobs.length).toBe(before);
		sb.injectFault('POST /jobs', { kind: 'lose-response' });
		await expect(createJob({ media_url: MEDIA })).rejects.toThrow();
		expect(sb.ledger.jobs.length).toBe(before + 1);
	});

	test('the ledger records each request without the key itself', async () => {
		await call('GET', '/account');
		const last = sb.ledger.requests.at(-1)!;
		expect(last).toMatchObject({
			method: 'GET',
			path: '/account',
			authorization: true,
			keyName: 'full',
			status: 200,
		});
		expect(JSON.stringify(sb.ledger)).not.toContain(sb.keys.full);
	});
});
