// The Captioning Trigger: the sandbox delivers job events over HTTPS to the trigger's webhook,
// served with n8n-core's WebhookContext and answered as n8n 2.x answers (once the execution is
// stored), the execution run by n8n's WorkflowExecute (test/engine/servedTrigger.ts).
import { createHash } from 'node:crypto';
import { Agent, request } from 'undici';
import type { IDataObject } from 'n8n-workflow';

import { Captioning } from '../../nodes/Captioning/Captioning.node.js';
import { CaptioningPollingTrigger } from '../../nodes/CaptioningPollingTrigger/CaptioningPollingTrigger.node.js';
import { CaptioningTrigger } from '../../nodes/CaptioningTrigger/CaptioningTrigger.node.js';
import { eventMemory } from '../../nodes/CaptioningTrigger/handledEvents';
import { readBackLimits } from '../../nodes/CaptioningTrigger/readBack';
import { forgetRateLimits } from '../../nodes/Captioning/transport/rateLimits';
import { binaryDataService } from '../engine/workflow';
import type { ServedTrigger } from '../engine/servedTrigger';
import { serveTrigger } from '../engine/servedTrigger';
import { forgedEvent, MEDIA, orderDirectly, runCaptioning } from '../helpers/captioning';
import { httpReceiver, tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';

const digest = (s: string) => createHash('sha256').update(s).digest('base64url').slice(0, 8);

let sb: Sandbox;
let trigger: ServedTrigger | undefined;
const tls = new Agent({ connect: { ca: tlsPair().cert } });

beforeAll(async () => {
	sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
});
afterAll(async () => {
	await sb.close();
	await tls.close();
});
beforeEach(() => {
	sb.resetLedger();
	sb.clearFaults();
	sb.setWebhook({ duplicate: false, attempts: 1 });
	sb.setCaptionsOn('api');
});
afterEach(async () => {
	await trigger?.close();
	trigger = undefined;
});

async function start(parameters: IDataObject = {}, key = sb.keys.full, webhookToken = '') {
	trigger = await serveTrigger({
		nodeType: new CaptioningTrigger(),
		typeName: 'captioningTrigger',
		parameters: {
			events: ['job.completed', 'job.cancelled'],
			verify: true,
			attachCaptions: false,
			...parameters,
		},
		credentials: { captioningApi: { apiKey: key, baseUrl: sb.baseUrl, webhookToken } },
	});
	return trigger;
}

const TOKEN = 'the-token';

/** The one answer to a caller without the token, whatever it is refused for. */
const NOT_NOW = {
	status: 503,
	retryAfter: '10',
	body: { error: 'Not accepted now; deliver the event again later.' },
};

/** A trigger with the Webhook Secret Token in its credentials; its URL carries it, as Job → Create sends it. */
async function startProven(parameters: IDataObject = {}) {
	const t = await start(parameters, sb.keys.full, TOKEN);
	return { ...t, url: `${t.url}?token=${TOKEN}` };
}

/** Every delivery answered and every execution it started run to its end. */
async function settle() {
	await sb.settleDeliveries();
	await trigger?.idle();
}

const order = async (webhookUrl: string | undefined, extra: IDataObject = {}, key = sb.keys.full) =>
	await orderDirectly(sb, { webhook_url: webhookUrl, ...extra }, key);

async function post(url: string, body: unknown, contentType = 'application/json') {
	const res = await request(url, {
		method: 'POST',
		dispatcher: tls,
		headers: { 'content-type': contentType },
		body: typeof body === 'string' ? body : JSON.stringify(body),
	});
	// An event that starts the workflow is answered by n8n, with no body (responseData noData).
	const answer = {
		status: res.statusCode,
		body: (await res.body.json().catch(() => ({}))) as IDataObject,
		retryAfter: res.headers['retry-after'] as string | undefined,
	};
	// The answer comes once the execution is stored; the execution runs after it (idle()).
	await trigger?.idle();
	return answer;
}

/**
 * A URL that leads to the trigger by its own path (webhook id and path) on a host where nothing
 * listens: a job ordered with it is meant for the trigger, but the sandbox cannot deliver its
 * events, so a test posts them itself.
 */
const undeliverable = (t: ServedTrigger) => `https://127.0.0.1:9${new URL(t.url).pathname}`;

/** The job's completed event as the service would send it (the job as it is now). */
const completedEvent = (id: string, eventId: string) => ({
	id: eventId,
	object: 'event',
	type: 'job.completed',
	created_at: new Date().toISOString(),
	data: sb.job(id),
});
const deliveryStatuses = (jobId: string) =>
	sb.ledger.deliveries.filter((d) => d.jobId === jobId).map((d) => d.status);

describe('events from the service start the workflow', () => {
	test('job.completed: one execution with the full job (as read back) and its metadata', async () => {
		const t = await start();
		const id = await order(t.url, { title: 'Weekly', metadata: { drive_file_id: 'f-9' } });
		sb.completeJob(id);
		await settle();
		expect(deliveryStatuses(id)).toEqual([200]);
		expect(t.executions).toHaveLength(1);
		expect(t.executions[0]).toEqual([
			{
				pairedItem: { item: 0 },
				json: expect.objectContaining({
					id,
					object: 'job',
					status: 'completed',
					title: 'Weekly',
					metadata: { drive_file_id: 'f-9' },
					captions: expect.objectContaining({ srt: expect.any(String) }),
					event_id: expect.stringMatching(/^evt_/),
					event_type: 'job.completed',
					event_created_at: expect.any(String),
					verified: true,
				}),
			},
		]);
		expect(sb.ledger.requests.filter((r) => r.route === 'GET /jobs/{id}')).toHaveLength(1);
	});

	test("no timer outlives its delivery: the answer's deadline ends with the answer", async () => {
		const answerWithin = readBackLimits.answerWithinMs;
		readBackLimits.answerWithinMs = 600000;
		try {
			const timers = () =>
				process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
			const t = await start();
			const ids = [await order(t.url), await order(t.url), await order(t.url)];
			await settle();
			const before = timers();
			for (const id of ids) sb.completeJob(id);
			await settle();
			expect(t.executions).toHaveLength(3);
			// Others end meanwhile (the orders' own); none of the three deliveries adds one.
			expect(timers()).toBeLessThanOrEqual(before);
		} finally {
			readBackLimits.answerWithinMs = answerWithin;
		}
	});

	test('job.cancelled: one execution with the cancellation', async () => {
		const t = await start();
		const id = await order(t.url);
		sb.cancelJob(id, 'media_unavailable');
		await settle();
		expect(t.executions).toHaveLength(1);
		expect(t.executions[0][0].json).toMatchObject({
			id,
			status: 'cancelled',
			cancellation: { reason: 'media_unavailable' },
			event_type: 'job.cancelled',
		});
	});

	test('an event type that is not selected is acknowledged and starts nothing', async () => {
		const t = await start({ events: ['job.completed'] });
		const id = await order(t.url);
		sb.cancelJob(id, 'deleted');
		await settle();
		expect(deliveryStatuses(id)).toEqual([200]);
		expect(t.executions).toHaveLength(0);
	});

	test('a duplicate delivery of the same event starts nothing more: answered 200 (started: false), or asked to come back while the first is with n8n', async () => {
		sb.setWebhook({ duplicate: true, attempts: 3 });
		const t = await start();
		const id = await order(t.url);
		sb.completeJob(id);
		await settle();
		const deliveries = sb.ledger.deliveries.filter((d) => d.jobId === id);
		expect(deliveries.filter((d) => d.status === 200)).toHaveLength(2);
		expect(deliveries.every((d) => d.status === 200 || d.status === 503)).toBe(true);
		expect(deliveries.filter((d) => d.body === '').length).toBe(1);
		expect(t.executions).toHaveLength(1);
	});

	test('handled events are remembered for the redelivery window: a redelivery within it is a duplicate, one after it starts the workflow again', async () => {
		const window = eventMemory.windowMs;
		try {
			const t = await startProven({ verify: false });
			const event = {
				id: 'evt_window',
				object: 'event',
				type: 'job.completed',
				created_at: new Date().toISOString(),
				data: { id: 'job-window', object: 'job', status: 'completed' },
			};
			expect((await post(t.url, event)).status).toBe(200);
			expect(await post(t.url, event)).toEqual({
				status: 200,
				body: { received: true, started: false, reason: 'event evt_window was already received' },
			});
			expect(t.executions).toHaveLength(1);
			eventMemory.windowMs = 1;
			await new Promise((r) => setTimeout(r, 10));
			expect((await post(t.url, event)).status).toBe(200);
			expect(t.executions).toHaveLength(2);
		} finally {
			eventMemory.windowMs = window;
		}
	});

	test('past the bound of its memory the trigger takes an event it does not remember, never refuses one it did not handle', async () => {
		const { maxInProcess, maxSaved } = eventMemory;
		Object.assign(eventMemory, { maxInProcess: 20, maxSaved: 10 });
		try {
			const t = await start({ verify: false });
			const event = (n: number) => ({
				id: `evt_${n}`,
				object: 'event',
				type: 'job.completed',
				created_at: new Date().toISOString(),
				data: { id: `job-${n}`, object: 'job', status: 'completed' },
			});
			for (let n = 0; n < 30; n++) expect((await post(t.url, event(n))).status).toBe(200);
			expect(t.executions).toHaveLength(30);
			// What n8n saves with the executions: the newest events, at most maxSaved.
			const saved = t.staticData().handledEvents as string[];
			expect(saved).toHaveLength(10);
			// Each line: 48 bits of the event id's SHA-256, of its news's, and when (ms, base 36).
			expect(saved.at(-1)).toBe(
				`${digest('evt_29')} ${digest('job-29 job.completed')} ${saved.at(-1)!.split(' ')[2]}`,
			);
			expect(saved.at(-1)).toMatch(/^[\w-]{8} [\w-]{8} [0-9a-z]{8}$/);
			// The newest are still known; the oldest, dropped, start the workflow again (not 409).
			expect((await post(t.url, event(29))).body).toMatchObject({ started: false });
			expect((await post(t.url, event(0))).status).toBe(200);
			expect(t.executions).toHaveLength(31);
		} finally {
			Object.assign(eventMemory, { maxInProcess, maxSaved });
		}
	});

	test('a re-publish between two copies of one event (n8n removes and adds the trigger, before the execution saved static data): one execution', async () => {
		const t = await start({ verify: false });
		const event = {
			id: 'evt_republished',
			object: 'event',
			type: 'job.completed',
			created_at: new Date().toISOString(),
			data: { id: 'job-d', object: 'job', status: 'completed' },
		};
		await post(t.url, event);
		t.setStaticData({});
		await t.deactivate();
		// Published again: this process still knows the event, whatever the static data holds.
		expect(await post(t.url, event)).toMatchObject({ status: 200, body: { started: false } });
		expect(t.executions).toHaveLength(1);
	});
});

describe('one execution per job and final status', () => {
	test("the job's event replayed under a new event id → 200, started: false, nothing more started; its own redelivery the same", async () => {
		const t = await startProven();
		const id = await order(t.url);
		sb.completeJob(id);
		await settle();
		expect(t.executions).toHaveLength(1);
		const delivered = sb.ledger.deliveries.find((d) => d.jobId === id)!.eventId;

		const replay = await post(t.url, completedEvent(id, 'evt_fresh_id_1'));
		expect(replay).toEqual({
			status: 200,
			body: {
				received: true,
				started: false,
				reason: `job ${id} was already reported as job.completed (event ${delivered}); each job starts this workflow once`,
			},
		});
		expect((await post(t.url, completedEvent(id, 'evt_fresh_id_2'))).body).toMatchObject({
			started: false,
		});
		expect(await post(t.url, completedEvent(id, delivered))).toMatchObject({
			status: 200,
			body: { started: false },
		});
		expect(t.executions).toHaveLength(1);
	});

	test('replays sent together under many new ids start one execution', async () => {
		const t = await start();
		const id = await order(undeliverable(t));
		sb.completeJob(id);
		const answers = await Promise.all(
			Array.from({ length: 8 }, (_, n) => post(t.url, completedEvent(id, `evt_burst_${n}`))),
		);
		// One starts the workflow (n8n answers it, no body); the others find it with n8n (503, come
		// back later) or already answered (200, started: false).
		expect(answers.filter((a) => a.status === 200 && !('started' in a.body))).toHaveLength(1);
		for (const a of answers.filter((a) => 'started' in a.body || a.status !== 200))
			expect(a.status === 503 || a.body.started === false).toBe(true);
		expect(t.executions).toHaveLength(1);
	});
});

describe("only jobs ordered with this trigger's URL", () => {
	test.each([
		[
			'ordered without a Webhook URL (e.g. in the dashboard)',
			undefined,
			/ordered without a Webhook URL/,
		],
		[
			"ordered with another workflow's trigger URL",
			'https://n8n.example.com/webhook/0c1d2e3f-aaaa-bbbb-cccc-123456789abc/captioning',
			/ordered with another Webhook URL/,
		],
	])(
		'a completed job of the workspace %s → 403 with the reason to a caller with the token, nothing started',
		async (_name, webhookUrl, reason) => {
			const t = await start({}, sb.keys.full, 'tok');
			const id = await order(webhookUrl);
			const r = await post(`${t.url}?token=tok`, {
				id: 'evt_not_for_us',
				object: 'event',
				type: 'job.completed',
				created_at: new Date().toISOString(),
				data: sb.completeJob(id),
			});
			expect(r.status).toBe(403);
			expect(r.body.error).toMatch(reason);
			expect(t.executions).toHaveLength(0);
		},
	);

	test('the URL is compared by its own path (webhook id and path), so a reverse proxy in front of n8n does not matter', async () => {
		const t = await start({}, sb.keys.full, 'tok');
		const webhookId = new URL(t.url).pathname.split('/').at(-2);
		const id = await order(
			`https://captions.example.org/automation/hooks/webhook/${webhookId}/captioning?token=tok`,
		);
		const r = await post(`${t.url}?token=tok`, {
			id: 'evt_via_proxy',
			object: 'event',
			type: 'job.completed',
			created_at: new Date().toISOString(),
			data: sb.completeJob(id),
		});
		expect(r.status).toBe(200);
		expect(t.executions).toHaveLength(1);
	});
});

describe('what is refused', () => {
	const valid = {
		id: 'evt_1',
		object: 'event',
		type: 'job.completed',
		created_at: '2026-11-22T00:00:00Z',
		data: { id: 'x', object: 'job' },
	};
	test.each<[string, unknown, string, RegExp]>([
		['a JSON array', [valid], 'application/json', /not a JSON object/],
		['a body that is not JSON', 'hello', 'text/plain', /not a JSON object/],
		['an id without evt_', { ...valid, id: '123' }, 'application/json', /evt_/],
		['a wrong object', { ...valid, object: 'job' }, 'application/json', /object must be "event"/],
		[
			'an unknown type',
			{ ...valid, type: 'job.started' },
			'application/json',
			/type must be one of/,
		],
		['no job in data', { ...valid, data: null }, 'application/json', /data must be the job/],
		[
			'a job without id',
			{ ...valid, data: { object: 'job' } },
			'application/json',
			/data must be the job/,
		],
	])(
		'%s → 400 with a reason to a caller with the token, nothing emitted',
		async (_name, body, type, reason) => {
			const t = await startProven();
			const r = await post(t.url, body, type);
			expect(r.status).toBe(400);
			expect(r.body.error).toMatch(reason);
			expect(t.executions).toHaveLength(0);
			expect(sb.ledger.requests).toHaveLength(0);
		},
	);

	test('an event for a job of another workspace → 403 with the reason to a caller with the token, nothing emitted', async () => {
		const t = await start({}, sb.keys.full, 'tok');
		const foreign = await order('https://elsewhere.example.com/hook', {}, sb.keys.otherWorkspace);
		const job = sb.completeJob(foreign);
		const r = await post(`${t.url}?token=tok`, {
			id: 'evt_forged1',
			object: 'event',
			type: 'job.completed',
			created_at: new Date().toISOString(),
			data: job,
		});
		expect(r).toEqual({
			status: 403,
			body: { error: 'Event refused: its job is not in this workspace.' },
		});
		expect(t.executions).toHaveLength(0);
	});

	test('an event whose status the job does not have (yet) → 503 with Retry-After and the reason to a caller with the token, nothing emitted', async () => {
		const t = await start({}, sb.keys.full, 'tok');
		const id = await order('https://elsewhere.example.com/hook');
		const forged = {
			...sb.job(id),
			status: 'completed',
			captions: { srt: 'https://evil.example.com/x.srt' },
		};
		const r = await post(`${t.url}?token=tok`, {
			id: 'evt_forged2',
			object: 'event',
			type: 'job.completed',
			created_at: new Date().toISOString(),
			data: forged,
		});
		expect(r.status).toBe(503);
		expect(r.retryAfter).toBe('10');
		expect(r.body.error).toBe(
			"Not yet: the event says job.completed but the job's status is queued; deliver the event again later.",
		);
		expect(t.executions).toHaveLength(0);
	});

	test('a verified event carries the job as read, not the body', async () => {
		const t = await start();
		const id = await order(undeliverable(t), { title: 'Real title' });
		const job = sb.completeJob(id);
		await post(t.url, {
			id: 'evt_tamper',
			object: 'event',
			type: 'job.completed',
			created_at: new Date().toISOString(),
			data: { ...job, title: 'Injected', metadata: { admin: 'true' } },
		});
		expect(t.executions[0][0].json).toMatchObject({ title: 'Real title', metadata: {} });
	});

	test('without verification the body is taken as is, and marked unverified', async () => {
		const t = await start({ verify: false });
		await post(t.url, {
			...valid,
			data: { id: 'made-up', object: 'job', status: 'completed', title: 'Anything' },
		});
		expect(t.executions[0][0].json).toMatchObject({
			id: 'made-up',
			title: 'Anything',
			verified: false,
		});
		expect(sb.ledger.requests).toHaveLength(0);
	});

	test('a failure to read the job asks the sender to come back (503) and forgets the event, so a redelivery is processed', async () => {
		const t = await start();
		const id = await order(undeliverable(t));
		const event = {
			id: 'evt_retry',
			object: 'event',
			type: 'job.completed',
			created_at: new Date().toISOString(),
			data: sb.completeJob(id),
		};
		sb.injectFault('GET /jobs/{id}', { status: 400, code: 'invalid_request' });
		expect((await post(t.url, event)).status).toBe(503);
		expect(t.executions).toHaveLength(0);
		expect((await post(t.url, event)).status).toBe(200);
		expect(t.executions).toHaveLength(1);
	});
});

describe('bursts: events that arrive together are read back together', () => {
	const BURST = 150;

	test(`${BURST} jobs finish within 2 s, each event delivered twice, reads limited to 10/s: one execution per job, every event answered 200`, async () => {
		sb.setWebhook({ duplicate: true, attempts: 3 });
		// An invoiced workspace: the prepaid one's balance is for the other tests.
		const t = await start({}, sb.keys.otherWorkspace);
		const ids: string[] = [];
		for (let n = 0; n < BURST; n++)
			ids.push(await order(t.url, { title: `Burst ${n}` }, sb.keys.otherWorkspace));
		sb.resetLedger();
		sb.setRateLimits({ readPerSecond: 10 });
		try {
			for (const id of ids) {
				sb.completeJob(id);
				await new Promise((r) => setTimeout(r, 2000 / BURST));
			}
			await settle();
		} finally {
			sb.setRateLimits({});
		}
		expect(t.executions.map((items) => items[0].json.id).sort()).toEqual([...ids].sort());
		const deliveries = sb.ledger.deliveries;
		expect(deliveries.filter((d) => d.attempt === 1)).toHaveLength(2 * BURST);
		// Every event was answered 200 by some try (a copy that came while the other was being stored
		// may have been asked to come again). How many reads a burst costs is a figure of the bench.
		const answered = new Set(deliveries.filter((d) => d.status === 200).map((d) => d.eventId));
		expect(answered.size).toBe(BURST);
	}, 60000);

	test('an answered event always has an execution: when n8n cannot store it, the delivery is answered 500 and its redelivery starts the workflow', async () => {
		const t = await start({ attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' });
		const id = await order(t.url, { title: 'Stored once' });
		// The first try meets a database that cannot store the execution; the service tries again.
		sb.setWebhook({ attempts: 2 });
		t.failStores(1);
		sb.completeJob(id);
		await settle();
		expect(deliveryStatuses(id)).toEqual([500, 200]);
		expect(t.stored).toHaveLength(1);
		expect(t.executions).toHaveLength(1);
		expect(t.executions[0][0].binary!.data).toMatchObject({ fileName: 'Stored once.srt' });
	});

	test("a delivery whose job cannot be read in time (the key's reads held by a 429) is answered 503, so the service tries again", async () => {
		const within = readBackLimits.answerWithinMs;
		readBackLimits.answerWithinMs = 300;
		try {
			const t = await start();
			const id = await order(undeliverable(t));
			sb.completeJob(id);
			sb.injectFault('GET /jobs/{id}', { status: 429, code: 'rate_limited', retryAfter: 20 });
			const event = completedEvent(id, 'evt_busy');
			expect(await post(t.url, event)).toEqual({
				status: 503,
				retryAfter: '10',
				// The one answer of a caller without the token (the trigger has none set).
				body: { error: 'Not accepted now; deliver the event again later.' },
			});
			expect(t.stored).toHaveLength(0);
			// Once the reads go again, the redelivery is handled (the claim was given back).
			forgetRateLimits();
			expect((await post(t.url, event)).status).toBe(200);
			expect(t.executions).toHaveLength(1);
		} finally {
			readBackLimits.answerWithinMs = within;
			forgetRateLimits();
		}
	});

	test('a final job a recent read showed verifies its event without a read; an event whose status it does not have is read anew', async () => {
		const t = await start();
		const [first, a, b, c] = [
			await order(undeliverable(t)),
			await order(undeliverable(t)),
			await order(undeliverable(t)),
			await order(undeliverable(t)),
		];
		for (const id of [first, a, b, c]) sb.completeJob(id);
		// The first event is read at once (slowly); the two that arrive meanwhile share the next read,
		// of the job list, which shows c completed too.
		sb.setLatency(200);
		try {
			const firstAnswer = post(t.url, completedEvent(first, 'evt_kept_first'));
			await new Promise((r) => setTimeout(r, 50));
			await Promise.all([
				firstAnswer,
				post(t.url, completedEvent(a, 'evt_kept_a')),
				post(t.url, completedEvent(b, 'evt_kept_b')),
			]);
		} finally {
			sb.setLatency(0);
		}
		expect(sb.ledger.requests.filter((r) => r.route === 'GET /jobs').length).toBe(1);
		const reads = sb.ledger.requests.length;
		expect((await post(t.url, completedEvent(c, 'evt_kept_c'))).status).toBe(200);
		expect(sb.ledger.requests).toHaveLength(reads);
		expect(t.executions.map((items) => items[0].json.id)).toEqual(
			expect.arrayContaining([first, a, b, c]),
		);
		// c as cancelled: not what was kept, so read again (and refused: the job is completed).
		const cancelled = await post(t.url, {
			...completedEvent(c, 'evt_kept_c_cancelled'),
			type: 'job.cancelled',
		});
		expect(cancelled).toMatchObject({
			status: 503,
			body: { error: 'Not accepted now; deliver the event again later.' },
		});
		expect(sb.ledger.requests.slice(reads).map((r) => r.route)).toEqual(['GET /jobs/{id}']);
		expect(t.executions).toHaveLength(4);
	});

	test('a delivery that arrives while the first try of its event is under way is asked to come back; once the first failed, a redelivery starts the workflow', async () => {
		const t = await startProven();
		const id = await order(undeliverable(t));
		const event = completedEvent(id, 'evt_slow_first');
		sb.completeJob(id);
		// The first try's read is slow and then fails; the service, tired of waiting, delivers again.
		sb.setLatency(500);
		sb.injectFault('GET /jobs/{id}', { status: 400, code: 'invalid_request' });
		try {
			const first = post(t.url, event);
			await new Promise((r) => setTimeout(r, 100));
			const second = await post(t.url, event);
			expect(second.status).toBe(503);
			expect(second.retryAfter).toBe('10');
			expect((await first).status).toBe(503);
		} finally {
			sb.setLatency(0);
		}
		expect(t.executions).toHaveLength(0);
		expect((await post(t.url, event)).status).toBe(200);
		expect(t.executions).toHaveLength(1);
		expect((await post(t.url, event)).body).toEqual({
			received: true,
			started: false,
			reason: 'event evt_slow_first was already received',
		});
	});

	test('a try that throws gives its claim back: the redelivery is handled, not answered "already received"', async () => {
		// Verify Events as an expression that n8n cannot evaluate: n8n's own error, thrown after the claim.
		const t = await start({ verify: "={{ $('No Such Node').item.json.verify }}" });
		const id = await order(undeliverable(t));
		const event = completedEvent(id, 'evt_throws');
		sb.completeJob(id);
		const first = await post(t.url, event);
		expect(first.status).toBe(500);
		expect(String(first.body.message)).toMatch(/Referenced node doesn't exist/);
		const again = await post(t.url, event);
		expect(again.status).toBe(500);
		expect(t.executions).toHaveLength(0);
	});

	test('a delivery that arrives while the first try is under way and then starts the workflow is answered as a duplicate', async () => {
		const t = await startProven();
		const id = await order(undeliverable(t));
		const event = completedEvent(id, 'evt_slow_ok');
		sb.completeJob(id);
		sb.setLatency(300);
		try {
			const [first, second] = await Promise.all([
				post(t.url, event),
				new Promise((r) => setTimeout(r, 100)).then(async () => await post(t.url, event)),
			]);
			expect(first.status).toBe(200);
			expect(second.status).toBe(503);
		} finally {
			sb.setLatency(0);
		}
		expect(t.executions).toHaveLength(1);
		expect((await post(t.url, event)).body).toEqual({
			received: true,
			started: false,
			reason: 'event evt_slow_ok was already received',
		});
		expect(sb.ledger.requests.filter((r) => r.route === 'GET /jobs/{id}')).toHaveLength(1);
	});
});

describe('while n8n runs, an event starts at most one execution, however slowly n8n answers', () => {
	/** Posts without waiting for the trigger to go idle (an execution may be held for its slot). */
	async function postNow(url: string, body: unknown, signal?: AbortSignal) {
		const res = await request(url, {
			method: 'POST',
			dispatcher: tls,
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify(body),
			signal,
		});
		return {
			status: res.statusCode,
			body: (await res.body.json().catch(() => ({}))) as IDataObject,
			retryAfter: res.headers['retry-after'],
		};
	}

	test('a try n8n answers 5 minutes late (its execution waits for a concurrency slot) after the sender gave up: copies meanwhile are asked to come back, one execution', async () => {
		const t = await start();
		const id = await order(undeliverable(t));
		sb.completeJob(id);
		const event = completedEvent(id, 'evt_slot');
		const release = t.holdSlots();
		try {
			// The sender gives up on the first try (closes the connection) before n8n has answered it.
			const abort = new AbortController();
			const first = postNow(t.url, event, abort.signal).catch((error: Error) => error);
			while (t.stored.length === 0) await new Promise((r) => setTimeout(r, 10));
			abort.abort();
			expect(await first).toMatchObject({ name: 'AbortError' });
			const now = Date.now();
			const clock = jest.spyOn(Date, 'now').mockImplementation(() => now + 5 * 60000);
			try {
				for (const copy of [event, completedEvent(id, 'evt_slot_other_id')]) {
					expect(await postNow(t.url, copy)).toMatchObject({ status: 503, retryAfter: '10' });
				}
			} finally {
				clock.mockRestore();
			}
			expect(t.stored).toHaveLength(1);
			expect(t.executions).toHaveLength(0);
		} finally {
			release();
		}
		await t.idle();
		expect(t.executions).toHaveLength(1);
		expect((await post(t.url, event)).body).toMatchObject({ started: false });
		expect(t.executions).toHaveLength(1);
	});

	test('executions that overlap each save every event this process handled (static data is saved whole, last writer wins)', async () => {
		const t = await start({ attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' });
		const ids = await Promise.all(
			Array.from({ length: 5 }, async () => await order(undeliverable(t))),
		);
		for (const id of ids) sb.completeJob(id);
		// Each execution downloads slowly, so all five run at once and end in any order.
		sb.setLatency(200);
		try {
			await Promise.all(
				ids.map(async (id, n) => await post(t.url, completedEvent(id, `evt_overlap_${n}`))),
			);
		} finally {
			sb.setLatency(0);
		}
		expect(t.executions).toHaveLength(5);
		const saved = (t.staticData().handledEvents as string[]).map((line) => line.split(' ')[0]);
		expect(saved.sort()).toEqual(ids.map((_, n) => digest(`evt_overlap_${n}`)).sort());
	});

	test('an event an earlier execution in this process ran (n8n starting a stored execution at its restart beside a redelivery) continues once', async () => {
		const t = await start();
		const id = await order(undeliverable(t));
		sb.completeJob(id);
		expect((await post(t.url, completedEvent(id, 'evt_twice_stored'))).status).toBe(200);
		expect(t.executions[0]).toHaveLength(1);
		expect(await t.runStoredAgain(0)).toEqual([]);
		expect(t.executions).toHaveLength(2);
	});
});

describe('the Webhook Secret Token (in the credentials)', () => {
	test('required and compared: missing or wrong → 401; right → accepted', async () => {
		const t = await start({}, sb.keys.full, 's3cret-token');
		const event = {
			id: 'evt_tok',
			object: 'event',
			type: 'job.completed',
			created_at: '2026-11-22T00:00:00Z',
			data: { id: 'x', object: 'job' },
		};
		expect(await post(t.url, event)).toEqual({
			status: 401,
			body: { error: 'The token in the URL is missing or wrong.' },
		});
		expect((await post(`${t.url}?token=s3cret-tokeX`, event)).status).toBe(401);
		expect((await post(`${t.url}?token=s3cret`, event)).status).toBe(401);
		expect(t.executions).toHaveLength(0);

		const id = await order(`${t.url}?token=s3cret-token`);
		sb.completeJob(id);
		await settle();
		expect(deliveryStatuses(id)).toEqual([200]);
		expect(t.executions).toHaveLength(1);
		// The token travels in the job's Webhook URL; what the workflow gets has it masked.
		expect((t.executions[0][0].json.options as IDataObject).webhook_url).toBe(`${t.url}?token=***`);
		expect(JSON.stringify(t.executions)).not.toContain('s3cret-token');
		const read = await runCaptioning(sb, { resource: 'job', operation: 'get', jobId: id });
		expect(JSON.stringify(read.items)).not.toContain('s3cret-token');
	});

	test("the two-workflow pattern: Job → Create with the same credentials adds the token to the trigger's URL; the trigger takes the event", async () => {
		const t = await start({}, sb.keys.full, 'shared-secret');
		const create = (mediaUrl: string, webhookUrl: string) =>
			runCaptioning(
				sb,
				{ resource: 'job', operation: 'create', source: 'url', mediaUrl, options: { webhookUrl } },
				{ webhookToken: 'shared-secret' },
			);
		const ordered = await create(MEDIA, t.url);
		expect(ordered.failure).toBeUndefined();
		const id = ordered.items[0].json.id as string;
		const sent = () => sb.ledger.jobs.map((j) => j.body.webhook_url);
		expect(sent()).toEqual([`${t.url}?token=shared-secret`]);
		expect((ordered.items[0].json.options as IDataObject).webhook_url).toBe(`${t.url}?token=***`);
		sb.completeJob(id);
		await settle();
		expect(deliveryStatuses(id)).toEqual([200]);
		expect(t.executions).toHaveLength(1);
		// Another Webhook URL (not a Captioning Trigger's) never gets the token.
		const elsewhere = await create(`${MEDIA}?elsewhere`, 'https://hooks.example.com/receive');
		expect(elsewhere.failure).toBeUndefined();
		expect(sent()[1]).toBe('https://hooks.example.com/receive');
	});

	test("no node parameter of the package is a password field: secrets live in n8n's credentials", () => {
		type Property = {
			name: string;
			typeOptions?: { password?: boolean };
			options?: unknown[];
			values?: Property[];
		};
		const passwords = (properties: Property[]): string[] =>
			properties.flatMap((p) => [
				...(p.typeOptions?.password ? [p.name] : []),
				...passwords(
					((p.options ?? []) as Property[]).flatMap((o) => ('type' in o ? [o] : (o.values ?? []))),
				),
			]);
		for (const node of [new Captioning(), new CaptioningTrigger(), new CaptioningPollingTrigger()])
			expect([node.description.name, passwords(node.description.properties as Property[])]).toEqual(
				[node.description.name, []],
			);
	});

	test('forged events with made-up job ids: each unknown id is read once, however often it is posted', async () => {
		const t = await start();
		// Five events, one made-up job.
		const forged = (n: number) => ({ ...forgedEvent(n), data: forgedEvent(0).data });
		for (let n = 0; n < 5; n++) expect((await post(t.url, forged(n))).status).toBe(503);
		expect(sb.ledger.requests.filter((r) => r.route === 'GET /jobs/{id}')).toHaveLength(1);
		expect(t.executions).toHaveLength(0);
	});

	test('a caller without the token gets one and the same answer for every refusal: a job of another workspace, one ordered elsewhere, a status it does not have, a made-up id, a job already reported under a new event id, a body that is no event', async () => {
		const t = await start();
		const reported = await order(undeliverable(t));
		sb.completeJob(reported);
		expect((await post(t.url, completedEvent(reported, 'evt_reported'))).status).toBe(200);
		const foreign = sb.completeJob(
			await order('https://a.example.com/hook', {}, sb.keys.otherWorkspace),
		);
		const elsewhere = sb.completeJob(await order('https://n8n.example.com/webhook/x/captioning'));
		const queued = sb.job(await order(t.url));
		const madeUp = {
			id: '00000000-0000-4000-8000-00000000abcd',
			object: 'job',
			status: 'completed',
		};
		const answers = [];
		for (const [n, data] of [
			foreign,
			elsewhere,
			{ ...queued, status: 'completed' },
			madeUp,
		].entries())
			answers.push(
				await post(t.url, {
					id: `evt_stranger_${n}`,
					object: 'event',
					type: 'job.completed',
					created_at: new Date().toISOString(),
					data,
				}),
			);
		answers.push(await post(t.url, completedEvent(reported, 'evt_reported_again')));
		answers.push(await post(t.url, { id: 'evt_x', object: 'event', type: 'job.completed' }));
		expect(answers).toEqual(Array(6).fill(NOT_NOW));
		expect(t.executions).toHaveLength(1);
	});

	test("a flood of forged events costs at most the strangers' reads; a real event delivered meanwhile starts one run once the flood has passed", async () => {
		const { strangerReads, strangerWindowMs } = readBackLimits;
		readBackLimits.strangerReads = 5;
		readBackLimits.strangerWindowMs = 600000;
		try {
			const t = await start();
			const real = await order(undeliverable(t));
			sb.resetLedger();
			const answers = [];
			for (let wave = 0; wave < 10; wave++) {
				answers.push(
					...(await Promise.all(
						Array.from(
							{ length: 20 },
							async (_, n) => await post(t.url, forgedEvent(wave * 20 + n)),
						),
					)),
				);
				// Completed once the first wave spent the reads (a page it read showed the job queued).
				if (wave === 0) sb.completeJob(real);
				if (wave === 4) answers.push(await post(t.url, completedEvent(real, 'evt_real')));
			}
			expect(answers).toEqual(Array(201).fill(NOT_NOW));
			const reads = () =>
				sb.ledger.requests.filter((r) => r.route === 'GET /jobs' || r.route === 'GET /jobs/{id}');
			expect(reads()).toHaveLength(5);
			expect(t.executions).toHaveLength(0);
			// The window passes; the service delivers the real event again.
			readBackLimits.strangerWindowMs = 0;
			expect((await post(t.url, completedEvent(real, 'evt_real'))).status).toBe(200);
			expect(t.executions).toHaveLength(1);
			expect(reads()).toHaveLength(6);
		} finally {
			Object.assign(readBackLimits, { strangerReads, strangerWindowMs });
		}
	});
});

test('captions of a completed job are attached as binary files', async () => {
	const t = await start({
		attachCaptions: true,
		formats: ['srt', 'vtt'],
		binaryPropertyName: 'data',
	});
	const id = await order(t.url, { title: 'Episode 12' });
	sb.completeJob(id);
	await settle();
	await t.idle();
	const { binary } = t.executions[0][0];
	expect(binary!.data_srt).toMatchObject({
		fileName: 'Episode 12.srt',
		mimeType: 'application/x-subrip',
	});
	expect(binary!.data_vtt).toMatchObject({ fileName: 'Episode 12.vtt', mimeType: 'text/vtt' });
	expect((await (await binaryDataService()).getAsBuffer(binary!.data_vtt)).toString()).toMatch(
		/^WEBVTT/,
	);

	const cancelled = await order(t.url);
	sb.cancelJob(cancelled, 'unusable_media');
	await settle();
	await t.idle();
	expect(t.executions[1][0].binary).toBeUndefined();
});

test('captions attached as text in the JSON (Put Captions In: Item JSON), for an AI step after the trigger', async () => {
	const t = await start({ attachCaptions: true, formats: ['txt', 'json'], captionsAs: 'json' });
	const id = await order(t.url, { title: 'Episode 13' });
	sb.completeJob(id);
	await settle();
	await t.idle();
	const [item] = t.executions[0];
	expect(item.binary).toBeUndefined();
	expect(item.json).toMatchObject({
		id,
		caption_text: { txt: expect.stringMatching(/back to the show/) },
		caption_segments: expect.arrayContaining([expect.objectContaining({ speaker: 'MARIA' })]),
	});
});

describe('with Attach Captions the event is answered once stored, then its execution downloads the captions', () => {
	test('the service has its answer before the captions are downloaded', async () => {
		const t = await start({ attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' });
		const id = await order(t.url, { title: 'Answered first' });
		// The download meets two 500s first: about a second of retries.
		sb.injectFault('GET /jobs/{id}/captions', { status: 500, times: 2 });
		sb.completeJob(id);
		await settle();
		const [delivery] = sb.ledger.deliveries.filter((d) => d.jobId === id);
		expect(delivery.status).toBe(200);
		await t.idle();
		const downloaded = sb.ledger.captionDownloads.find((d) => d.jobId === id)!;
		expect(downloaded.at).toBeGreaterThan(delivery.at + delivery.ms!);
		expect(t.executions).toHaveLength(1);
		expect(t.executions[0][0].binary!.data).toMatchObject({ fileName: 'Answered first.srt' });
		expect(t.executions[0][0].json.captions_error).toBeUndefined();
	});

	test('a download that finally fails still starts the workflow, with captions_error; a redelivery stays a duplicate', async () => {
		const t = await startProven({
			attachCaptions: true,
			formats: ['srt', 'vtt'],
			binaryPropertyName: 'data',
		});
		const id = await order(undeliverable(t), { title: 'Half there' });
		sb.completeJob(id);
		// The SRT link answers 404 (not tried again); the VTT comes.
		sb.injectFault('GET /jobs/{id}/captions', {
			status: 404,
			code: 'not_found',
			message: 'No captions of this format exist for this job.',
			times: 1,
		});
		const event = completedEvent(id, 'evt_half_there');
		expect(await post(t.url, event)).toEqual({ status: 200, body: {} });
		await t.idle();
		expect(t.executions).toHaveLength(1);
		const [item] = t.executions[0];
		expect(item.json.id).toBe(id);
		expect(item.json.captions_error).toMatch(
			/^The captions could not be downloaded \((SRT|VTT): No captions of this format exist for this job\. \[HTTP 404 not_found\]\)\. The job is completed: Job → Get Captions can fetch them later\.$/,
		);
		expect(Object.keys(item.binary ?? {})).toHaveLength(1);
		// The service delivers it again (its own retry, or a duplicate): answered, nothing started twice.
		expect(await post(t.url, event)).toEqual({
			status: 200,
			body: { received: true, started: false, reason: 'event evt_half_there was already received' },
		});
		await t.idle();
		expect(t.executions).toHaveLength(1);
	});

	test('a setting that cannot work (DOCX as text): the event is taken, its execution fails naming the fix, so it can be retried once fixed', async () => {
		const t = await start({ attachCaptions: true, formats: ['docx'], captionsAs: 'json' });
		const id = await order(undeliverable(t));
		sb.completeJob(id);
		expect((await post(t.url, completedEvent(id, 'evt_docx_text'))).status).toBe(200);
		expect(t.stored).toHaveLength(1);
		expect(t.failed).toEqual([
			expect.objectContaining({
				message: "DOCX cannot go into the item's JSON",
				description: expect.stringMatching(/Put Captions In: Both/),
			}),
		]);
		expect(sb.ledger.captionDownloads).toHaveLength(0);
	});
});

describe('Verify Events off: caption links come from the service, never from a posted body', () => {
	/** Links a forger would plant: another host, n8n itself, a local file, the service's host outside the Base URL. */
	const forgedLinks = (elsewhere: string, n8n: string) => ({
		srt: `${elsewhere}/internal/secrets.srt`,
		vtt: `${n8n}/rest/settings`,
		txt: 'file:///etc/passwd',
		json: `${new URL(sb.baseUrl).origin}/admin/keys.json`,
	});

	test('a made-up job with planted links: refused (503, the one answer to a caller without the token), nothing fetched, nothing started', async () => {
		const elsewhere = await httpReceiver();
		try {
			const t = await start({
				verify: false,
				attachCaptions: true,
				formats: ['srt', 'vtt', 'txt', 'json'],
				binaryPropertyName: 'data',
			});
			const forged = {
				id: 'evt_forged',
				object: 'event',
				type: 'job.completed',
				created_at: new Date().toISOString(),
				data: {
					id: 'made-up',
					object: 'job',
					status: 'completed',
					captions: forgedLinks(elsewhere.url, new URL(t.url).origin),
				},
			};
			expect(await post(t.url, forged)).toEqual({
				status: 503,
				retryAfter: '10',
				body: { error: 'Not accepted now; deliver the event again later.' },
			});
			expect(t.executions).toHaveLength(0);
			expect(elsewhere.received).toHaveLength(0);
			expect(sb.ledger.requests.map((r) => r.route)).toEqual(['GET /jobs/{id}']);
		} finally {
			await elsewhere.close();
		}
	});

	test("a real job's event with planted links: the captions are the job's own, downloaded from the links the API lists", async () => {
		const elsewhere = await httpReceiver();
		try {
			const t = await start({
				verify: false,
				attachCaptions: true,
				formats: ['srt', 'vtt', 'txt', 'json'],
				binaryPropertyName: 'data',
			});
			const id = await order(undeliverable(t), { title: 'Real' });
			const job = sb.completeJob(id);
			const forged = {
				id: 'evt_planted',
				object: 'event',
				type: 'job.completed',
				created_at: new Date().toISOString(),
				data: { ...job, captions: forgedLinks(elsewhere.url, new URL(t.url).origin) },
			};
			expect((await post(t.url, forged)).status).toBe(200);
			await t.idle();
			expect(t.executions).toHaveLength(1);
			const [item] = t.executions[0];
			expect(item.json).toMatchObject({ id, captions: job.captions, verified: false });
			expect(
				(await (await binaryDataService()).getAsBuffer(item.binary!.data_vtt)).toString(),
			).toMatch(/^WEBVTT/);
			expect(elsewhere.received).toHaveLength(0);
			expect(sb.ledger.captionDownloads.map((d) => [d.jobId, d.format, d.origin])).toEqual(
				expect.arrayContaining([
					[id, 'srt', 'api'],
					[id, 'vtt', 'api'],
					[id, 'txt', 'api'],
					[id, 'json', 'api'],
				]),
			);
			// Nothing outside the API's own routes (the planted /admin/keys.json would have none).
			expect(sb.ledger.requests.map((r) => r.route ?? r.path)).toEqual([
				'POST /jobs',
				'GET /jobs/{id}',
				...Array(4).fill('GET /jobs/{id}/captions'),
			]);
		} finally {
			await elsewhere.close();
		}
	});

	test('an event whose status the job does not have (yet) is asked to come back (503) before any download', async () => {
		const t = await start({
			verify: false,
			attachCaptions: true,
			formats: ['srt'],
			binaryPropertyName: 'data',
		});
		const id = await order(undeliverable(t));
		const forged = {
			id: 'evt_early',
			object: 'event',
			type: 'job.completed',
			created_at: new Date().toISOString(),
			data: { ...sb.job(id), status: 'completed' },
		};
		expect(await post(t.url, forged)).toEqual({
			status: 503,
			retryAfter: '10',
			body: { error: 'Not accepted now; deliver the event again later.' },
		});
		expect(sb.ledger.captionDownloads).toHaveLength(0);
		sb.completeJob(id);
		expect((await post(t.url, forged)).status).toBe(200);
		await t.idle();
		expect(t.executions).toHaveLength(1);
	});
});
