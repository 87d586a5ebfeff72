// The credentials: authentication header, and the "Test" button. n8n's CredentialsTester (in the
// n8n CLI, not in n8n-core) runs `test.request` as the routing request of a temporary declarative
// node, then checks `test.rules` against the response; this test does the same with n8n-core's
// RoutingNode. The e2e suite presses the real button in real n8n.
import type { IDataObject, INodeType, INodeTypeDescription } from 'n8n-workflow';

import { CaptioningApi } from '../../credentials/CaptioningApi.credentials';
import { node, runWorkflow } from '../engine/workflow';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';

const credential = new CaptioningApi();
let sb: Sandbox;
beforeAll(async () => {
	sb = await createSandbox({ timing: null });
});
afterAll(async () => await sb.close());

const tempNode: INodeType = {
	description: {
		displayName: 'Temp',
		name: 'temp',
		group: ['transform'],
		version: 1,
		description: '',
		defaults: { name: 'Temp' },
		inputs: ['main'],
		outputs: ['main'],
		credentials: [{ name: 'captioningApi', required: true }],
		properties: [
			{
				displayName: 'Temp',
				name: 'temp',
				type: 'string',
				routing: { request: credential.test.request },
				default: '',
			},
		],
	} as unknown as INodeTypeDescription,
};

const valueAt = (data: IDataObject, path: string) =>
	path
		.split('.')
		.reduce<unknown>(
			(v, k) => (v && typeof v === 'object' ? (v as IDataObject)[k] : undefined),
			data,
		);

/** What the Test button shows, computed the way n8n's CredentialsTester does. */
async function pressTest(
	apiKey: string,
	baseUrl = sb.baseUrl,
): Promise<{ status: 'OK' | 'Error'; message: string }> {
	const run = await runWorkflow({
		nodes: [node('Temp-Node', 'temp', {})],
		nodeTypes: { temp: tempNode },
		credentials: { captioningApi: { apiKey, baseUrl } },
		mode: 'internal',
	});
	const error = run.error('Temp-Node') as
		| (Error & { cause?: { code?: string; response?: { status: number } } })
		| undefined;
	if (error) {
		if (error.cause?.response)
			return {
				status: 'Error',
				message: `Received HTTP status code: ${error.cause.response.status}`,
			};
		return { status: 'Error', message: error.cause?.code ?? error.message };
	}
	const json = run.output('Temp-Node')[0].json;
	for (const rule of credential.test.rules ?? []) {
		if (
			rule.type === 'responseSuccessBody' &&
			valueAt(json, rule.properties.key) === rule.properties.value
		) {
			return { status: 'Error', message: rule.properties.message };
		}
	}
	return { status: 'OK', message: 'Connection successful!' };
}

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
