// The transport against the sandbox, inside n8n's real execution engine.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { IDataObject } from 'n8n-workflow';
import type { NodeApiError } from 'n8n-workflow';

import { node, runWorkflow } from '../engine/workflow';
import { onFastClock } from '../helpers/clock';
import { expiredTlsPair, httpReceiver, httpsReceiver, tlsServer } from '../helpers/https';
import { probe } from '../helpers/probe';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox, useSandbox } from '../helpers/sandbox';

let sb: Sandbox;
useSandbox((s) => (sb = s));

const MEDIA = 'https://media.example.com/talk.mp4';

async function runProbe(
	instructions: IDataObject,
	key: string = sb.keys.full,
	baseUrl = sb.baseUrl,
) {
	const result = await runWorkflow({
		nodes: [node('Probe', 'transportProbe', {})],
		nodeTypes: { transportProbe: probe },
		credentials: { captioningApi: { apiKey: key, baseUrl } },
		input: [{ json: instructions }],
	});
	return {
		json: result.output('Probe')[0]?.json,
		error: result.error('Probe') as NodeApiError | undefined,
	};
}

/** Everything an error carries, as n8n stores it in the execution (and shows it). */
function everything(error: unknown): string {
	return JSON.stringify(error);
}

const attemptsOf = (route: string) => sb.ledger.requests.filter((r) => r.route === route).length;

describe('error mapping: every status of part 7 becomes one NodeApiError', () => {
	test.each<
		[
			string,
			IDataObject,
			string | undefined,
			{ status: string; code: string; text: RegExp; advice: RegExp; param?: string },
		]
	>([
		[
			'400 invalid request',
			{
				op: 'api',
				method: 'POST',
				path: '/jobs',
				body: { media_url: MEDIA, style: 'fancy' },
				idempotencyKey: 'k400',
			},
			undefined,
			{
				status: '400',
				code: 'invalid_parameter',
				text: /style must be one of/,
				advice: /Fix the field/,
				param: 'style',
			},
		],
		[
			'401 wrong key',
			{ op: 'api', method: 'GET', path: '/account' },
			'sk_wrong',
			{ status: '401', code: 'invalid_api_key', text: /not valid/, advice: /Check the API key/ },
		],
		[
			'401 revoked key',
			{ op: 'api', method: 'GET', path: '/account' },
			'revoked',
			{
				status: '401',
				code: 'api_key_revoked',
				text: /revoked/,
				advice: /replaced with a new one/,
			},
		],
		[
			'402 no balance',
			{
				op: 'api',
				method: 'POST',
				path: '/jobs',
				body: { media_url: MEDIA },
				idempotencyKey: 'k402',
			},
			'noBalance',
			{ status: '402', code: 'insufficient_funds', text: /prepaid balance/, advice: /Top up/ },
		],
		[
			'403 read-only key ordering',
			{
				op: 'api',
				method: 'POST',
				path: '/jobs',
				body: { media_url: MEDIA },
				idempotencyKey: 'k403',
			},
			'readOnly',
			{ status: '403', code: 'insufficient_permissions', text: /read-only/, advice: /full access/ },
		],
		[
			'404 unknown job',
			{ op: 'api', method: 'GET', path: '/jobs/6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5' },
			undefined,
			{ status: '404', code: 'not_found', text: /No job/, advice: /Check the id/, param: 'id' },
		],
		[
			'413 body too large',
			{
				op: 'api',
				method: 'POST',
				path: '/jobs',
				body: { media_url: MEDIA, glossary: Array(700).fill('y'.repeat(100)) },
				idempotencyKey: 'k413',
			},
			undefined,
			{ status: '413', code: 'body_too_large', text: /exceeds/, advice: /64 KiB/ },
		],
		[
			'422 media too long',
			{
				op: 'api',
				method: 'POST',
				path: '/jobs',
				body: { media_url: `${MEDIA}?duration=50000` },
				idempotencyKey: 'k422',
			},
			undefined,
			{
				status: '422',
				code: 'media_too_long',
				text: /longer than/,
				advice: /cannot process/,
				param: 'media_url',
			},
		],
	])('%s', async (_name, instructions, keyName, expected) => {
		const key =
			keyName === undefined
				? sb.keys.full
				: ((sb.keys as Record<string, string>)[keyName] ?? keyName);
		const { error } = await runProbe(instructions, key);
		expect(error).toMatchObject({ name: 'NodeApiError' });
		expect(error!.httpCode).toBe(expected.status);
		expect(error!.message).toMatch(expected.text);
		expect(error!.message).toContain(`[HTTP ${expected.status} ${expected.code}]`);
		expect(error!.description).toMatch(expected.advice);
		expect(error!.context).toMatchObject({
			code: expected.code,
			requestId: expect.stringMatching(/^req_/),
		});
		if (expected.param) expect(error!.context.param).toBe(expected.param);
		expect(everything(error)).not.toContain(key);
		expect(everything(error)).not.toContain(sb.keys.full);
	});

	test('409 idempotency_conflict explains the key was used for another order', async () => {
		await runProbe({
			op: 'api',
			method: 'POST',
			path: '/jobs',
			body: { media_url: MEDIA },
			idempotencyKey: 'k409',
		});
		const { error } = await runProbe({
			op: 'api',
			method: 'POST',
			path: '/jobs',
			body: { media_url: `${MEDIA}?v=2` },
			idempotencyKey: 'k409',
		});
		expect(error!.httpCode).toBe('409');
		expect(error!.context.code).toBe('idempotency_conflict');
		expect(error!.description).toMatch(/already used for a different order/);
	});

	test.each([
		[415, 'unsupported_content_type'],
		[500, 'internal_error'],
		[503, 'temporarily_unavailable'],
		[429, 'rate_limited'],
	])('%d (injected, retries used up) keeps the status, code and attempts', async (status, code) => {
		sb.injectFault('GET /account', { status, code, retryAfter: 0, times: 10 });
		const { error } = await onFastClock(
			async () => await runProbe({ op: 'api', method: 'GET', path: '/account' }),
		);
		expect(error!.httpCode).toBe(String(status));
		expect(error!.context.code).toBe(code);
		// Every status the policy retries is sent its attempts (README's Limits: 6), under the key's hold too.
		const attempts = status === 415 ? 1 : 6;
		expect(attemptsOf('GET /account')).toBe(attempts);
		if (status !== 415) expect(error!.description).toContain(`Attempts: ${attempts}.`);
		expect(everything(error)).not.toContain(sb.keys.full);
	});

	test('an unreachable base URL is a network error naming the host, without the key', async () => {
		const { error } = await onFastClock(
			async () =>
				await runProbe(
					{ op: 'api', method: 'GET', path: '/account' },
					sb.keys.full,
					'http://127.0.0.1:9/v1',
				),
		);
		expect(error!.message).toBe(
			'Could not reach the captioning service at http://127.0.0.1:9 (ECONNREFUSED)',
		);
		expect(error!.description).toMatch(/in 6 attempts/);
		expect(everything(error)).not.toContain(sb.keys.full);
	});

	test('a reset as n8n 1.x hands it over (a NodeApiError that kept only the code) is a network failure, tried again', async () => {
		const { error } = await onFastClock(
			async () => await runProbe({ op: 'thrown', shape: 'reset-1x' }),
		);
		expect(error).toMatchObject({
			name: 'NodeApiError',
			message: 'Could not reach the captioning service (ECONNRESET)',
		});
		expect(error!.description).toMatch(/in 6 attempts/);
		expect((error as unknown as { attempts: number }).attempts).toBe(6);
	});

	test("a request n8n's own policy refused (2.x's SSRF protection) is named so, and not tried again", async () => {
		const { error } = await runProbe({ op: 'thrown', shape: 'refused-2x' });
		expect(error).toMatchObject({ name: 'NodeApiError' });
		expect(error!.message).toBe(
			'n8n did not send the request to the captioning service: The request was blocked because it resolves to a restricted IP address',
		);
		expect(error!.description).toMatch(/n8n's own policy refused the request before it left/);
		expect(error!.context.code).toBe('not_sent');
		expect((error as unknown as { attempts: number }).attempts).toBe(1);
	});

	test("n8n's own error (no network code) keeps its message and is not tried again", async () => {
		const { error } = await runProbe({ op: 'thrown', shape: 'own-error' });
		expect(error!.message).toBe(
			'n8n could not complete the request to the captioning service: Cannot read the proxy settings',
		);
		expect(error!.description).toMatch(/an error of its own, not a network failure/);
		expect((error as unknown as { attempts: number }).attempts).toBe(1);
	});

	test('a Base URL whose certificate the connection refuses fails at once, naming the certificate', async () => {
		const server = await tlsServer(expiredTlsPair());
		try {
			const { error } = await runProbe(
				{ op: 'api', method: 'GET', path: '/account' },
				sb.keys.full,
				server.url,
			);
			expect(error!.message).toMatch(
				/^The TLS certificate of the captioning service at https:\/\/127\.0\.0\.1:\d+ has expired \(CERT_HAS_EXPIRED\)$/,
			);
			expect(error!.description).toMatch(/before anything was sent, so it was not tried again/);
			expect(server.handshakes()).toBe(1);
		} finally {
			await server.close();
		}
	});

	test('a base URL without /v1 is refused before any request', async () => {
		const { error } = await runProbe(
			{ op: 'api', method: 'GET', path: '/account' },
			sb.keys.full,
			sb.baseUrl.replace(/\/v1$/, ''),
		);
		expect(error!.message).toMatch(/Base URL .* is not valid/);
		expect(error!.description).toMatch(/ending in the version segment \/v1/);
		expect(sb.ledger.requests).toHaveLength(0);
	});
});

describe('retries', () => {
	test('500 twice, then success: three attempts', async () => {
		sb.injectFault('GET /account', { status: 500, times: 2 });
		const { json, error } = await runProbe({ op: 'api', method: 'GET', path: '/account' });
		expect(error).toBeUndefined();
		expect((json!.body as IDataObject).object).toBe('account');
		expect(attemptsOf('GET /account')).toBe(3);
	});

	test('connection resets are retried', async () => {
		sb.injectFault('GET /account', { kind: 'reset', times: 2 });
		const { error } = await runProbe({ op: 'api', method: 'GET', path: '/account' });
		expect(error).toBeUndefined();
		expect(attemptsOf('GET /account')).toBe(3);
	});

	// When a 429 or 503 is sent again: on the fake clock (test/transport/keyRateLimits.test.ts).
	test.each([
		[429, { retryAfter: 1 }],
		[503, {}],
	])(
		'a %i is sent again and answered',
		async (status, fault) => {
			sb.injectFault('GET /account', { status, ...fault });
			const { error } = await runProbe({ op: 'api', method: 'GET', path: '/account' });
			expect(error).toBeUndefined();
			expect(attemptsOf('GET /account')).toBe(2);
		},
		15000,
	);

	test('a Retry-After longer than the policy allows ends the retries at once', async () => {
		sb.injectFault('GET /account', { status: 429, retryAfter: 3600 });
		const { error } = await runProbe({ op: 'api', method: 'GET', path: '/account' });
		expect(error!.httpCode).toBe('429');
		expect(attemptsOf('GET /account')).toBe(1);
	});

	test('POST /jobs without an Idempotency-Key is never retried', async () => {
		sb.injectFault('POST /jobs', { status: 500 });
		const first = await runProbe({
			op: 'api',
			method: 'POST',
			path: '/jobs',
			body: { media_url: MEDIA },
		});
		expect(first.error!.httpCode).toBe('500');
		sb.injectFault('POST /jobs', { kind: 'lose-response' });
		const second = await runProbe({
			op: 'api',
			method: 'POST',
			path: '/jobs',
			body: { media_url: MEDIA },
		});
		expect(second.error!.message).toMatch(/Could not reach/);
		expect(attemptsOf('POST /jobs')).toBe(2);
		expect(sb.ledger.jobs).toHaveLength(1);
	});

	test('a lost POST /jobs response is retried with its Idempotency-Key into exactly one job and one charge', async () => {
		sb.injectFault('POST /jobs', { kind: 'lose-response' });
		const { json, error } = await runProbe({
			op: 'api',
			method: 'POST',
			path: '/jobs',
			body: { media_url: MEDIA },
			idempotencyKey: 'lost-once',
		});
		expect(error).toBeUndefined();
		expect(json!.statusCode).toBe(200);
		expect((json!.headers as IDataObject)['idempotent-replayed']).toBe('true');
		expect(attemptsOf('POST /jobs')).toBe(2);
		expect(sb.ledger.jobs).toHaveLength(1);
		expect(sb.ledger.charges).toHaveLength(1);
		expect((json!.body as IDataObject).id).toBe(sb.ledger.jobs[0].id);
	});
});

describe('paging over GET /jobs', () => {
	let paged: Sandbox;
	beforeAll(async () => {
		paged = await createSandbox({ timing: null });
		for (let i = 0; i < 205; i++) {
			await fetch(`${paged.baseUrl}/jobs`, {
				method: 'POST',
				headers: { authorization: `Bearer ${paged.keys.full}`, 'content-type': 'application/json' },
				body: JSON.stringify({ media_url: MEDIA, title: `job ${i}` }),
			});
		}
	});
	afterAll(async () => await paged.close());

	const list = async (instructions: IDataObject) => {
		const r = await runWorkflow({
			nodes: [node('Probe', 'transportProbe', {})],
			nodeTypes: { transportProbe: probe },
			credentials: { captioningApi: { apiKey: paged.keys.full, baseUrl: paged.baseUrl } },
			input: [{ json: { op: 'list', ...instructions } }],
		});
		return r.output('Probe')[0].json.ids as string[];
	};

	test('all jobs, newest first, following starting_after', async () => {
		paged.resetLedger();
		const ids = await list({});
		expect(ids).toHaveLength(205);
		expect(new Set(ids).size).toBe(205);
		expect(ids[0]).toBe(paged.ledger.jobs.at(-1)?.id ?? ids[0]);
		const pages = paged.ledger.requests.filter((r) => r.route === 'GET /jobs');
		expect(pages.map((p) => p.query.limit)).toEqual(['100', '100', '100']);
		expect(pages[1].query.starting_after).toBe(ids[99]);
	});

	test('a limit stops at that many, asking only for what it needs', async () => {
		paged.resetLedger();
		const ids = await list({ limit: 130 });
		expect(ids).toHaveLength(130);
		expect(
			paged.ledger.requests.filter((r) => r.route === 'GET /jobs').map((p) => p.query.limit),
		).toEqual(['100', '30']);
	});
});

describe('files', () => {
	test('the presigned PUT streams the file with Content-Length and without the API key', async () => {
		const dir = mkdtempSync(path.join(tmpdir(), 'put-'));
		const file = path.join(dir, 'clip.bin');
		const data = Buffer.alloc(3 * 1024 * 1024 + 7, 7);
		writeFileSync(file, data);
		const { json, error } = await runProbe({ op: 'upload', size: data.length, file });
		expect(error).toBeUndefined();
		const record = sb.ledger.uploads.find((u) => u.id === json!.id)!;
		expect(record).toMatchObject({
			complete: true,
			receivedBytes: data.length,
			contentLengthSent: data.length,
			authorizationSeen: false,
		});
		expect(record.sha256).toBe(createHash('sha256').update(data).digest('hex'));
		expect(sb.ledger.storageRequests.every((r) => !r.authorization)).toBe(true);
	});

	test('a failed PUT is retried with the file opened afresh', async () => {
		sb.injectFault('PUT /uploads', { status: 500 });
		const { json, error } = await runProbe({ op: 'upload', size: 5, data: 'hello' });
		expect(error).toBeUndefined();
		expect(sb.ledger.uploads.find((u) => u.id === json!.id)).toMatchObject({
			puts: 2,
			complete: true,
			receivedBytes: 5,
		});
	});

	test('a redirect from storage is not followed', async () => {
		const elsewhere = await httpsReceiver();
		try {
			sb.injectFault('PUT /uploads', { kind: 'redirect', location: `${elsewhere.url}/steal` });
			const { error } = await runProbe({ op: 'upload', size: 5, data: 'hello' });
			expect(error!.httpCode).toBe('307');
			expect(error!.message).toBe(`Redirect to ${elsewhere.url}/steal not followed [HTTP 307]`);
			expect(error!.description).toMatch(/does not follow/);
			expect(elsewhere.received).toHaveLength(0);
		} finally {
			await elsewhere.close();
		}
	});

	test('the key goes only to URLs under the Base URL: not elsewhere on its host; other schemes are refused', async () => {
		const host = await httpReceiver();
		try {
			const baseUrl = `${host.url}/v1`;
			await runProbe(
				{ op: 'download', url: `${host.url}/v1/jobs/j1/captions.srt` },
				sb.keys.full,
				baseUrl,
			);
			const outside = [
				`${host.url}/rest/settings`,
				`${host.url}/v1/../admin`,
				`${host.url}/v1/%2e%2e/admin`,
				`${host.url}/v10/jobs`,
				`${host.url}/v1`,
				`${host.url.replace('127.0.0.1', 'localhost')}/v1/jobs/j1/captions.srt`,
			];
			for (const url of outside)
				expect(
					(await runProbe({ op: 'download', url }, sb.keys.full, baseUrl)).error,
				).toBeUndefined();
			expect(host.received.map((r) => [r.url, r.headers.authorization ?? null])).toEqual([
				['/v1/jobs/j1/captions.srt', `Bearer ${sb.keys.full}`],
				['/rest/settings', null],
				['/admin', null],
				['/admin', null],
				['/v10/jobs', null],
				['/v1', null],
				['/v1/jobs/j1/captions.srt', null],
			]);
			for (const url of ['file:///etc/passwd', 'ftp://127.0.0.1/x', 'not a url']) {
				const { error } = await runProbe({ op: 'download', url }, sb.keys.full, baseUrl);
				expect(error!.message).toBe(
					'A captions link of the job is not an http(s) URL, so it was not fetched',
				);
			}
			expect(host.received).toHaveLength(7);
		} finally {
			await host.close();
		}
	});

	test('a download past the cap fails naming the file and its size, and stops reading: a declared size at once, an endless body at the cap', async () => {
		const chunk = Buffer.alloc(64 * 1024, 'x');
		let endless: { sent: number; closedEarly: boolean } | undefined;
		const host = await httpReceiver((req, res) => {
			if (req.url === '/declared') {
				res.writeHead(200, { 'content-length': String(200 * 1024 * 1024) });
				res.write(chunk);
				return;
			}
			// No length: chunks as fast as the reader takes them, until it closes the connection.
			const state = { sent: 0, closedEarly: false };
			endless = state;
			res.on('close', () => (state.closedEarly = !res.writableFinished));
			const more = () => {
				while (!res.destroyed && state.sent < 1024 * 1024 * 1024) {
					state.sent += chunk.length;
					if (!res.write(chunk)) return void res.once('drain', more);
				}
			};
			more();
		});
		try {
			const declared = await runProbe({ op: 'download', url: `${host.url}/declared` });
			expect(declared.error!.message).toBe(
				'The captions are 209,715,200 bytes or more, over the 52,428,800 bytes one download may hold, so they were not downloaded',
			);
			const { error } = await runProbe({ op: 'download', url: `${host.url}/endless` });
			expect(error!.message).toMatch(
				/^The captions are [\d,]+ bytes or more, over the 52,428,800 bytes one download may hold, so they were not downloaded$/,
			);
			await new Promise((resolve) => setTimeout(resolve, 100));
			// The sender was cut off long before its gigabyte: the bytes were never held.
			expect(endless!.closedEarly).toBe(true);
			expect(host.received).toHaveLength(2);
		} finally {
			await host.close();
		}
	});

	test('captions on the base URL origin are fetched with the key; on another host without it', async () => {
		const create = async () =>
			(
				(await (
					await fetch(`${sb.baseUrl}/jobs`, {
						method: 'POST',
						headers: {
							authorization: `Bearer ${sb.keys.full}`,
							'content-type': 'application/json',
						},
						body: JSON.stringify({ media_url: MEDIA }),
					})
				).json()) as { id: string }
			).id;
		const sameHost = sb.completeJob(await create()) as { captions: Record<string, string> };
		const a = await runProbe({ op: 'download', url: sameHost.captions.srt });
		expect(a.json!.text).toMatch(/^1\n00:00:00,000/);
		expect(sb.ledger.captionDownloads.at(-1)).toMatchObject({ origin: 'api', authorization: true });

		sb.setCaptionsOn('storage');
		const otherHost = sb.completeJob(await create()) as { captions: Record<string, string> };
		const b = await runProbe({ op: 'download', url: otherHost.captions.vtt });
		expect(b.json!.text).toMatch(/^WEBVTT/);
		expect(b.json!.contentType).toMatch(/^text\/vtt/);
		expect(sb.ledger.captionDownloads.at(-1)).toMatchObject({
			origin: 'storage',
			authorization: false,
		});
		expect(sb.ledger.storageRequests.every((r) => !r.authorization)).toBe(true);
	});
});
