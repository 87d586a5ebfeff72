// One pace per API key (transport/limits.ts), in n8n's execution engine against the sandbox: runs
// that use the same key at once share what the service allows, whichever node or trigger sends.
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';

import { MEDIA, runCaptioning } from '../helpers/captioning';
import { tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { useSandbox } from '../helpers/sandbox';

let sb: Sandbox;
useSandbox((s) => (sb = s), { webhook: { ca: tlsPair().cert } });

const create = (params: IDataObject = {}) => ({
	resource: 'job',
	operation: 'create',
	source: 'url',
	mediaUrl: '={{ $json.url }}',
	...params,
});
const urls = (n: number, tag: string): INodeExecutionData[] =>
	Array.from({ length: n }, (_, i) => ({ json: { url: `${MEDIA}?${tag}=${i}` } }));
const requests = (route: string) => sb.ledger.requests.filter((r) => r.route === route);

test("two runs at once share one pace: a 429 met by one holds the other's requests for its Retry-After", async () => {
	sb.setLatency(20);
	// The third order to arrive, whichever run sent it, is refused for 2 s.
	sb.injectFault('POST /jobs', { status: 429, code: 'rate_limited', retryAfter: 2, after: 2 });
	const [a, b] = await Promise.all([
		runCaptioning(sb, create({ concurrency: 2 }), { input: urls(6, 'a') }),
		runCaptioning(sb, create({ concurrency: 2 }), { input: urls(6, 'b') }),
	]);
	expect(a.failure).toBeUndefined();
	expect(b.failure).toBeUndefined();
	expect(sb.ledger.jobs).toHaveLength(12);
	const posts = requests('POST /jobs');
	const limited = posts.findIndex((r) => r.status === 429);
	const again = posts.findIndex(
		(r, k) => k > limited && r.idempotencyKey === posts[limited].idempotencyKey,
	);
	// Between the 429 and its own retry (the first to go once the hold has passed) arrived only
	// what was already under way when it came (at most the other places: 3); each run paced on its
	// own would have gone on ordering.
	expect(again - limited - 1).toBeLessThanOrEqual(3);
	// Twelve orders and the one refused, sent again after the hold: nothing else.
	expect(requests('POST /jobs')).toHaveLength(13);
}, 30000);

test('two runs at once under a write limit: every order placed once, none lost to the 429s', async () => {
	sb.setRateLimits({ writePerSecond: 5 });
	const [a, b] = await Promise.all([
		runCaptioning(sb, create({ concurrency: 4 }), { input: urls(20, 'a') }),
		runCaptioning(sb, create({ concurrency: 4 }), { input: urls(20, 'b') }),
	]);
	expect(a.failure).toBeUndefined();
	expect(b.failure).toBeUndefined();
	// How few 429s one pace meets, and how close to the limit it runs, are figures of the bench
	// (sharedKey429Share, sharedKeyVsFloor): they depend on the machine's load.
	expect(sb.ledger.jobs).toHaveLength(40);
	expect(sb.ledger.charges).toHaveLength(40);
}, 60000);

test('two processes on one workspace (as two queue-mode workers: two paces, no memory shared): every order placed once', async () => {
	sb.setRateLimits({ writePerSecond: 5 });
	// The same service through another host name is another pace, as another process's would be.
	const otherProcess = { ...sb, baseUrl: sb.baseUrl.replace('127.0.0.1', 'localhost') } as Sandbox;
	const [a, b] = await Promise.all([
		runCaptioning(sb, create(), { input: urls(40, 'a') }),
		runCaptioning(otherProcess, create(), { input: urls(40, 'b') }),
	]);
	expect(a.failure).toBeUndefined();
	expect(b.failure).toBeUndefined();
	// The share refused and the time against the limit's floor are printed by the queue suite.
	expect(sb.ledger.jobs).toHaveLength(80);
	expect(sb.ledger.charges).toHaveLength(80);
}, 60000);

test('requests to the same service with another key are paced apart: a hold of one key does not hold the other', async () => {
	sb.injectFault('GET /account', { status: 429, code: 'rate_limited', retryAfter: 3 });
	const full = runCaptioning(sb, { resource: 'account', operation: 'get' });
	while (!sb.ledger.requests.some((r) => r.status === 429))
		await new Promise((r) => setTimeout(r, 10));
	const readOnly = await runCaptioning(
		sb,
		{ resource: 'account', operation: 'get' },
		{ input: Array.from({ length: 5 }, () => ({ json: {} })), key: sb.keys.readOnly },
	);
	expect(readOnly.failure).toBeUndefined();
	expect((await full).failure).toBeUndefined();
	// The full key's read went again after its hold; the read-only key's five had all been read by then.
	const [, fullAgain] = sb.ledger.requests.filter((r) => r.keyName === 'full');
	const readOnlyReads = sb.ledger.requests.filter((r) => r.keyName !== 'full');
	expect(readOnlyReads).toHaveLength(5);
	expect(Math.max(...readOnlyReads.map((r) => r.at))).toBeLessThan(fullAgain.at);
});
