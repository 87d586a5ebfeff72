// One pace per API key (transport/pacing.ts), in n8n's execution engine against the sandbox: runs
// that use the same key at once share what the service allows, whichever node or trigger sends.
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';


import { CaptioningTrigger } from '../../nodes/CaptioningTrigger/CaptioningTrigger.node.js';
import { serveTrigger } from '../engine/servedTrigger';
import { MEDIA, orderDirectly, runCaptioning } from '../helpers/captioning';
import { tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { useSandbox } from '../helpers/sandbox';

let sb: Sandbox;
useSandbox((s) => (sb = s), { webhook: { ca: tlsPair().cert } });

const create = (params: IDataObject = {}) => ({ resource: 'job', operation: 'create', source: 'url', mediaUrl: '={{ $json.url }}', ...params });
const urls = (n: number, tag: string): INodeExecutionData[] => Array.from({ length: n }, (_, i) => ({ json: { url: `${MEDIA}?${tag}=${i}` } }));
const requests = (route: string) => sb.ledger.requests.filter((r) => r.route === route);

test("two runs at once share one pace: a 429 met by one holds the other's requests for its Retry-After", async () => {
	sb.setLatency(20);
	// The third order to arrive, whichever run sent it, is refused for 2 s.
	sb.injectFault('POST /jobs', { status: 429, code: 'rate_limited', retryAfter: 2, after: 2 });
	const [a, b] = await Promise.all([
		runCaptioning(sb, create({ batching: { concurrency: 2 } }), { input: urls(6, 'a') }),
		runCaptioning(sb, create({ batching: { concurrency: 2 } }), { input: urls(6, 'b') }),
	]);
	expect(a.failure).toBeUndefined();
	expect(b.failure).toBeUndefined();
	expect(sb.ledger.jobs).toHaveLength(12);
	const limited = requests('POST /jobs').find((r) => r.status === 429)!;
	// What arrived during the hold was already under way when the 429 was sent (at most the other
	// places: 3); each run paced on its own would have gone on ordering.
	const during = requests('POST /jobs').filter((r) => r.at > limited.at && r.at < limited.at + 1990);
	expect(during.length).toBeLessThanOrEqual(3);
	// Twelve orders and the one refused, sent again after the hold: nothing else.
	expect(requests('POST /jobs')).toHaveLength(13);
}, 30000);

test('two runs at once under a write limit: each learns from the same 429s, few are refused', async () => {
	sb.setRateLimits({ writePerSecond: 5 });
	const [a, b] = await Promise.all([
		runCaptioning(sb, create({ batching: { concurrency: 4 } }), { input: urls(20, 'a') }),
		runCaptioning(sb, create({ batching: { concurrency: 4 } }), { input: urls(20, 'b') }),
	]);
	expect(a.failure).toBeUndefined();
	expect(b.failure).toBeUndefined();
	expect(sb.ledger.jobs).toHaveLength(40);
	// 40 orders at 5 a second: about 8 s. Paced alone, each run would keep meeting the limit the
	// other one used up (measured: about 20 refused); one pace meets it when it learns, and rarely after.
	const refused = requests('POST /jobs').filter((r) => r.status === 429).length;
	expect(refused).toBeLessThanOrEqual(10);
}, 60000);

test('two processes on one workspace (as two queue-mode workers: two paces, no memory shared) settle on shares of the write limit', async () => {
	sb.setRateLimits({ writePerSecond: 5 });
	// The same service through another host name is another pace, as another process's would be.
	const otherProcess = { ...sb, baseUrl: sb.baseUrl.replace('127.0.0.1', 'localhost') } as Sandbox;
	const started = Date.now();
	const [a, b] = await Promise.all([
		runCaptioning(sb, create(), { input: urls(40, 'a') }),
		runCaptioning(otherProcess, create(), { input: urls(40, 'b') }),
	]);
	expect(a.failure).toBeUndefined();
	expect(b.failure).toBeUndefined();
	expect(sb.ledger.jobs).toHaveLength(80);
	const orders = requests('POST /jobs');
	const refused = orders.filter((r) => r.status === 429).length;
	const seconds = (Math.max(...orders.map((r) => r.at)) - started) / 1000;
	// Each learns from its own 429s and gives way on the next: measured about 18% refused at the floor
	// (80 / 5 = 16 s); a lane that took what it measured each time starved the other (41% refused).
	expect(refused / orders.length).toBeLessThanOrEqual(0.25);
	expect(seconds / 16).toBeLessThanOrEqual(1.5);
}, 60000);

test('a single 429 after a few requests teaches no rate: the key goes on at full speed', async () => {
	sb.injectFault('GET /account', { status: 429, code: 'rate_limited', retryAfter: 1 });
	const started = Date.now();
	const run = await runCaptioning(sb, { resource: 'account', operation: 'get' }, { input: Array.from({ length: 40 }, () => ({ json: {} })) });
	expect(run.failure).toBeUndefined();
	expect(run.items).toHaveLength(40);
	// The hold (1 s), then the 40 reads at once: not paced at the one request a second that a rate
	// learned from a single refusal would say.
	expect(Date.now() - started).toBeLessThan(4000);
});

test("a trigger's verification read goes before caption downloads waiting in the key's pace", async () => {
	const trigger = await serveTrigger({
		nodeType: new CaptioningTrigger(),
		typeName: 'captioningTrigger',
		parameters: { events: ['job.completed'], verify: true, token: '', attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' },
		credentials: { captioningApi: { apiKey: sb.keys.full, baseUrl: sb.baseUrl } },
	});
	try {
		const ids: string[] = [];
		for (let n = 0; n < 60; n++) ids.push(await orderDirectly(sb, { media_url: `${MEDIA}?n=${n}`, webhook_url: trigger.url }));
		const late = await orderDirectly(sb, { media_url: `${MEDIA}?late`, webhook_url: trigger.url });
		sb.setRateLimits({ readPerSecond: 10 });
		for (const id of ids) sb.completeJob(id);
		await sb.settleDeliveries();
		// Sixty downloads wait in the key's read pace (about 6 s at 10 a second) when the last job completes.
		const queuedAt = Date.now();
		sb.completeJob(late);
		await sb.settleDeliveries();
		const answered = sb.ledger.deliveries.find((d) => d.jobId === late)!;
		await trigger.idle();
		const downloads = sb.ledger.captionDownloads.filter((d) => ids.includes(d.jobId));
		expect(downloads).toHaveLength(60);
		// Its read went first: answered within about a second (a hold the service asked for may be under
		// way), while the downloads queued before it went on for seconds after.
		expect(answered.status).toBe(200);
		expect(answered.at + answered.ms! - queuedAt).toBeLessThan(1500);
		const lastDownload = Math.max(...sb.ledger.captionDownloads.map((d) => d.at));
		expect(lastDownload - (answered.at + answered.ms!)).toBeGreaterThan(2000);
		expect(trigger.executions).toHaveLength(61);
	} finally {
		await trigger.close();
	}
}, 60000);

test('requests to the same service with another key are paced apart', async () => {
	sb.setRateLimits({ readPerSecond: 5 });
	const [full, readOnly] = await Promise.all([
		runCaptioning(sb, { resource: 'account', operation: 'get' }, { input: Array.from({ length: 15 }, () => ({ json: {} })) }),
		runCaptioning(sb, { resource: 'account', operation: 'get' }, { input: Array.from({ length: 15 }, () => ({ json: {} })), key: sb.keys.readOnly }),
	]);
	expect(full.failure).toBeUndefined();
	expect(readOnly.failure).toBeUndefined();
	// Each key has its own limit (5 a second, one second of burst): 15 reads each take about 2 s, not 5.
	const last = Math.max(...sb.ledger.requests.map((r) => r.at));
	const first = Math.min(...sb.ledger.requests.map((r) => r.at));
	expect(last - first).toBeLessThan(4000);
});
