// The Captioning API credential: its authentication header, and its Test button pressed as n8n's
// CredentialsTester does (test/engine/credentialTest.ts). The e2e suite presses the real button in
// real n8n.
import { CaptioningApi } from '../../credentials/CaptioningApi.credentials';
import { pressTest as pressCredentialTest } from '../engine/credentialTest';
import { runCaptioning } from '../helpers/captioning';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';

const credential = new CaptioningApi();
let sb: Sandbox;
beforeAll(async () => {
	sb = await createSandbox({ timing: null });
});
afterAll(async () => await sb.close());

/** What the Test button shows for this key and base URL. */
const pressTest = async (apiKey: string, baseUrl = sb.baseUrl) =>
	await pressCredentialTest(credential, { apiKey, baseUrl });

test('authenticate adds Authorization: Bearer <key> without an expression, keeping the other headers, and follows no redirect with it', async () => {
	const authenticate = credential.authenticate as (
		c: object,
		o: object,
	) => Promise<{ headers: object }>;
	expect(typeof authenticate).toBe('function');
	const headers = { 'Idempotency-Key': 'k1' };
	const out = await authenticate(
		{ apiKey: 'sk_abc', baseUrl: 'https://api.example.com/v1' },
		{ url: 'https://api.example.com/v1/account', headers },
	);
	expect(out).toEqual({
		url: 'https://api.example.com/v1/account',
		headers: { 'Idempotency-Key': 'k1', Authorization: 'Bearer sk_abc' },
		maxRedirects: 0,
		disableFollowRedirect: true,
	});
	// Whatever the caller asked for (the HTTP Request node follows redirects by default).
	expect(
		await authenticate(
			{ apiKey: 'sk_abc', baseUrl: 'https://api.example.com/v1' },
			{ uri: 'https://api.example.com/v1/account', followAllRedirects: true, maxRedirects: 21 },
		),
	).toMatchObject({ maxRedirects: 0, disableFollowRedirect: true });
	// The caller's own headers object is left as it was.
	expect(headers).toEqual({ 'Idempotency-Key': 'k1' });
});

test('authenticate gives the key only to URLs under the Base URL: another host, a path beside /v1 or a malformed URL is refused before anything is sent', async () => {
	const authenticate = credential.authenticate as (
		c: object,
		o: object,
	) => Promise<{ headers: object }>;
	const credentials = { apiKey: 'sk_abc', baseUrl: 'https://api.example.com/v1/' };
	// n8n's credential test: a path against baseURL; the HTTP Request node: `uri`.
	expect(
		(await authenticate(credentials, { baseURL: 'https://api.example.com/v1', url: '/account' }))
			.headers,
	).toEqual({ Authorization: 'Bearer sk_abc' });
	expect(
		(
			await authenticate(credentials, {
				uri: 'https://api.example.com/v1/jobs?limit=1',
				headers: { Accept: 'application/json' },
			})
		).headers,
	).toEqual({ Accept: 'application/json', Authorization: 'Bearer sk_abc' });
	for (const url of [
		'https://evil.example.net/v1/account',
		'https://api.example.com/admin',
		'https://api.example.com/v1/../admin',
		'http://api.example.com/v1/account',
		'https://api.example.com/v10/account',
		'not a url',
	]) {
		await expect(authenticate(credentials, { uri: url })).rejects.toThrow(
			/only to addresses under its Base URL \(https:\/\/api\.example\.com\/v1\)/,
		);
	}
	await expect(
		authenticate({ apiKey: 'sk_abc', baseUrl: '' }, { url: 'https://api.example.com/v1/account' }),
	).rejects.toThrow(/Base URL \(not set\)/);
	// The refusal names the address, never its query (a presigned link's signature, a token).
	await expect(
		authenticate(credentials, {
			uri: 'https://u:p@bucket.example.net/v1/a.mp4?X-Amz-Signature=abc&token=t#f',
		}),
	).rejects.toThrow(
		/\), and https:\/\/bucket\.example\.net\/v1\/a\.mp4 is not one: nothing was sent\./,
	);
});

test('a plain http:// Base URL on the internet is refused before anything is sent, saying why; localhost and private addresses are taken', async () => {
	const authenticate = credential.authenticate as (c: object, o: object) => Promise<unknown>;
	await expect(
		authenticate(
			{ apiKey: 'sk_abc', baseUrl: 'http://api.example.com/v1' },
			{ url: 'http://api.example.com/v1/account' },
		),
	).rejects.toThrow(
		/^The Base URL http:\/\/api\.example\.com is not HTTPS, so the API key would cross the network in clear\. Use its https:\/\/ address; .* Nothing was sent\.$/,
	);
	for (const host of ['localhost:4010', '127.0.0.1:4010', '10.0.0.7', '192.168.1.20', '172.20.0.3'])
		await expect(
			authenticate(
				{ apiKey: 'sk_abc', baseUrl: `http://${host}/v1` },
				{ url: `http://${host}/v1/account` },
			),
		).resolves.toBeDefined();
	sb.resetLedger();
	const run = await runCaptioning(
		sb,
		{ resource: 'account', operation: 'get' },
		{
			baseUrl: 'http://captioning.example.com/v1',
		},
	);
	expect(run.failure?.message).toBe('The Base URL http://captioning.example.com/v1 is not HTTPS');
	expect(sb.ledger.requests).toHaveLength(0);
});

test('a good key passes, a full and a read-only one alike', async () => {
	expect(await pressTest(sb.keys.full)).toEqual({
		status: 'OK',
		message: 'Connection successful!',
	});
	expect(await pressTest(sb.keys.readOnly)).toEqual({
		status: 'OK',
		message: 'Connection successful!',
	});
});

test('a wrong key, a revoked key and an unreachable base URL each say what they are', async () => {
	expect(await pressTest('sk_wrong')).toEqual({
		status: 'Error',
		message: expect.stringMatching(/^The API key is wrong \(401\)/),
	});
	expect(await pressTest(sb.keys.revoked)).toEqual({
		status: 'Error',
		message: expect.stringMatching(/^The API key has been revoked \(401\)/),
	});
	// n8n's tester shows the live error's cause code (ECONNREFUSED); run data keeps n8n's wording of it.
	expect(await pressTest(sb.keys.full, 'http://127.0.0.1:9/v1')).toEqual({
		status: 'Error',
		message: expect.stringMatching(/ECONNREFUSED|refused the connection/),
	});
});

test('a wrong path and any answer that is not the account fail', async () => {
	expect((await pressTest(sb.keys.full, sb.baseUrl.replace('/v1', '/v2'))).message).toMatch(
		/does not serve \/account \(404\)/,
	);
	sb.injectFault('GET /account', { status: 500, code: 'something_new' });
	expect((await pressTest(sb.keys.full)).message).toMatch(/did not answer with the account/);
});

test('the test reads the account once, from the base URL, with the key', async () => {
	sb.resetLedger();
	await pressTest(sb.keys.full);
	expect(sb.ledger.requests).toEqual([
		expect.objectContaining({
			method: 'GET',
			path: '/account',
			authorization: true,
			keyName: 'full',
			status: 200,
		}),
	]);
});
