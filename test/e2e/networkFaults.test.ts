// Network faults in real n8n (npm run test:e2e), where n8n decides what reaches the node: a
// connection reset while an order is sent is tried again with the same Idempotency-Key (n8n 1.x
// hands a reset over in a shape once taken for "not sent"); a refused connection is retried and
// then named; a request n8n's own SSRF protection refuses (2.x) is named so and not tried again; a
// 429 asking for an hour fails the order at once instead of holding it; a Base URL whose
// certificate has expired fails at once, naming the certificate. Each case runs Manual
// Trigger → Captioning with On Error "continue", so the CLI prints the item or its error.
// Versions: N8N_E2E_VERSIONS (default 2.41.1 and 1.122.5).
import type { TlsPair } from '../helpers/https';
import { expiredTlsPair, tlsServer } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import type { N8n } from '../real/instance';
import { createN8n, installN8n, tempJson } from '../real/instance';
import { manualWorkflow, node } from '../real/workflows';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const MEDIA = 'https://media.example.com/network-faults';

type Item = { json: Record<string, unknown> };

/** Manual Trigger → one Captioning node with these parameters and credential, On Error: continue. */
const workflow = (id: string, parameters: object, credentialId: string): string =>
	manualWorkflow(id, `Network faults: ${id}`, [
		node(id, 'Captioning', 'n8n-nodes-captioning.captioning', 1, parameters, 220, {
			credentials: { captioningApi: { id: credentialId, name: credentialId } },
			onError: 'continueRegularOutput',
		}),
	]);

describe.each(VERSIONS)('n8n %s: network faults', (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	let expired: Awaited<ReturnType<typeof tlsServer>>;
	const is2x = version.startsWith('2.');
	/** The Captioning node's first item, as `n8n execute --rawOutput` prints it (2.x prints log lines first). */
	const run = async (id: string): Promise<Item> => {
		const { stdout } = await n8n.cli(['execute', `--id=${id}`, '--rawOutput']);
		const data = JSON.parse(
			stdout.slice(stdout.indexOf('\n{') + 1, stdout.indexOf('\n}', stdout.indexOf('\n{') + 1) + 2),
		) as {
			data: { resultData: { runData: Record<string, Array<{ data: { main: Item[][] } }>> } };
		};
		return data.data.resultData.runData.Captioning[0].data.main[0][0];
	};
	const order = (name: string) => ({
		resource: 'job',
		operation: 'create',
		source: 'url',
		mediaUrl: `${MEDIA}/${name}.mp4`,
	});

	beforeAll(
		async () => {
			sb = await createSandbox({ timing: null });
			const port = new URL(sb.baseUrl).port;
			// A service whose certificate expired in 2020, issued by an authority n8n trusts.
			const pair: TlsPair & { caPath: string } = expiredTlsPair();
			expired = await tlsServer(pair);
			// 2.x: n8n's SSRF protection on, loopback blocked (its default ranges) but for the sandbox's address.
			const ssrf = is2x
				? { N8N_SSRF_PROTECTION_ENABLED: 'true', N8N_SSRF_ALLOWED_IP_RANGES: '127.0.0.1/32' }
				: {};
			n8n = await createN8n(await installN8n(version), [], {
				...ssrf,
				NODE_EXTRA_CA_CERTS: pair.caPath,
			});
			await n8n.cli([
				'import:credentials',
				`--input=${tempJson('credentials.json', [
					{
						id: 'faultsService',
						name: 'faultsService',
						type: 'captioningApi',
						data: { apiKey: sb.keys.full, baseUrl: sb.baseUrl },
					},
					{
						id: 'faultsNobody',
						name: 'faultsNobody',
						type: 'captioningApi',
						data: { apiKey: sb.keys.full, baseUrl: 'http://127.0.0.1:9/v1' },
					},
					{
						id: 'faultsExpired',
						name: 'faultsExpired',
						type: 'captioningApi',
						data: { apiKey: sb.keys.full, baseUrl: expired.url },
					},
					// Another loopback address, which n8n's SSRF protection blocks (2.x); nothing listens there.
					{
						id: 'faultsBlocked',
						name: 'faultsBlocked',
						type: 'captioningApi',
						data: { apiKey: sb.keys.full, baseUrl: `http://127.0.0.2:${port}/v1` },
					},
				])}`,
			]);
			n8n.importWorkflows([
				workflow('wfFaultReset001', order('reset'), 'faultsService'),
				workflow('wfFaultRefused1', { resource: 'account', operation: 'get' }, 'faultsNobody'),
				workflow('wfFaultSsrf0001', { resource: 'account', operation: 'get' }, 'faultsBlocked'),
				workflow('wfFaultHour0001', order('an-hour'), 'faultsService'),
				workflow('wfFaultCert0001', order('expired'), 'faultsExpired'),
			]);
		},
		40 * 60 * 1000,
	);

	afterAll(async () => {
		await sb?.close();
		await expired?.close();
	});

	test('a Base URL whose certificate has expired fails at once, naming the certificate; nothing is sent', async () => {
		const item = await run('wfFaultCert0001');
		expect(String(item.json.error)).toMatch(
			/^The TLS certificate of the captioning service at https:\/\/127\.0\.0\.1:\d+ has expired \(CERT_HAS_EXPIRED\)/,
		);
		expect(String(item.json.description)).toMatch(
			/before anything was sent, so it was not tried again/,
		);
		expect(expired.handshakes()).toBe(1);
	}, 120000);

	test('a connection reset while the order is sent: tried again with the same Idempotency-Key, one job, one charge', async () => {
		sb.resetLedger();
		sb.injectFault('POST /jobs', { kind: 'reset', times: 2 });
		const item = await run('wfFaultReset001');
		expect(item.json).toMatchObject({ object: 'job', status: 'queued' });
		const posts = sb.ledger.requests.filter((r) => r.route === 'POST /jobs');
		expect(posts).toHaveLength(3);
		expect(new Set(posts.map((r) => r.idempotencyKey)).size).toBe(1);
		expect(sb.ledger.jobs).toHaveLength(1);
		expect(sb.ledger.charges).toHaveLength(1);
	}, 120000);

	test('a refused connection is a network failure, tried again, then named with its code', async () => {
		const item = await run('wfFaultRefused1');
		expect(item.json.error).toBe(
			'Could not reach the captioning service at http://127.0.0.1:9 (ECONNREFUSED)',
		);
		expect(String(item.json.description)).toMatch(/No response arrived in 6 attempts/);
	}, 120000);

	(is2x ? test : test.skip)(
		"a request n8n's SSRF protection refuses: named so, not tried again, nothing reached the service",
		async () => {
			sb.resetLedger();
			const item = await run('wfFaultSsrf0001');
			expect(String(item.json.error)).toMatch(
				/^n8n did not send the request to the captioning service at http:\/\/127\.0\.0\.2:\d+: The request was blocked/,
			);
			expect(String(item.json.description)).toMatch(
				/n8n's own policy refused the request before it left/,
			);
			expect(sb.ledger.requests).toHaveLength(0);
		},
		120000,
	);

	test('a 429 asking for an hour fails the order at once (nothing held for an hour), naming the wait', async () => {
		sb.resetLedger();
		sb.injectFault('POST /jobs', { status: 429, code: 'rate_limited', retryAfter: 3600 });
		const started = Date.now();
		const item = await run('wfFaultHour0001');
		expect(String(item.json.error)).toMatch(/\[HTTP 429 rate_limited\]$/);
		expect(sb.ledger.jobs).toHaveLength(0);
		console.log(
			`n8n ${version}: a 429 with Retry-After 3600 ended the order after ${Date.now() - started} ms`,
		);
	}, 120000);
});
