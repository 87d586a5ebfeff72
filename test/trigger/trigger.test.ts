// The Captioning Trigger: the sandbox delivers job events over HTTPS to the trigger's webhook,
// served with n8n-core's WebhookContext and answered as n8n 2.x answers (once the execution is
// stored), the execution run by n8n's WorkflowExecute (test/engine/servedTrigger.ts). The sandbox
// delivers each event once, as the interface promises no more.
import { Agent, request } from 'undici';
import type { IDataObject } from 'n8n-workflow';

import { Captioning } from '../../nodes/Captioning/Captioning.node.js';
import { CaptioningPollingTrigger } from '../../nodes/CaptioningPollingTrigger/CaptioningPollingTrigger.node.js';
import { CaptioningTrigger } from '../../nodes/CaptioningTrigger/CaptioningTrigger.node.js';
import { onFastClock } from '../helpers/clock';
import { failNextRecords } from '../engine/processed';
import { binaryDataService } from '../engine/workflow';
import type { ServedTrigger } from '../engine/servedTrigger';
import { serveTrigger } from '../engine/servedTrigger';
import { forgedEvent, MEDIA, orderDirectly, runCaptioning } from '../helpers/captioning';
import { httpReceiver, tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';

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
	sb.setWebhook({ duplicate: false, attempts: 1, leadMs: 0 });
	sb.setCaptionsOn('api');
});
afterEach(async () => {
	await trigger?.close();
	trigger = undefined;
});

const TOKEN = 'the-token';

/**
 * A trigger with the Webhook Secret Token in its credentials; `url` carries it, as Job → Create
 * sends it, `bare` does not.
 */
async function start(
	parameters: IDataObject = {},
	credentials: IDataObject = { webhookToken: TOKEN },
	key = sb.keys.full,
) {
	trigger = await serveTrigger({
		nodeType: new CaptioningTrigger(),
		typeName: 'captioningTrigger',
		parameters: {
			events: ['job.completed', 'job.cancelled'],
			verify: true,
			attachCaptions: false,
			...parameters,
		},
		credentials: { captioningApi: { apiKey: key, baseUrl: sb.baseUrl, ...credentials } },
	});
	// Activation read the account (the workspace token): the tests count what deliveries send.
	sb.resetLedger();
	return { ...trigger, bare: trigger.url, url: `${trigger.url}?token=${TOKEN}` };
}

/** Every delivery answered and every execution it started run to its end. */
async function settle() {
	await sb.settleDeliveries();
	await trigger?.idle();
}

const order = async (webhookUrl: string | undefined, extra: IDataObject = {}, key = sb.keys.full) =>
	await orderDirectly(sb, { webhook_url: webhookUrl, ...extra }, key);

async function post(url: string, body: unknown) {
	const res = await request(url, {
		method: 'POST',
		dispatcher: tls,
		headers: { 'content-type': 'application/json' },
		body: typeof body === 'string' ? body : JSON.stringify(body),
	});
	// An event that starts the workflow is answered by n8n, with no body (responseData noData).
	const answer = {
		status: res.statusCode,
		body: (await res.body.json().catch(() => ({}))) as IDataObject,
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
/** `count` jobs ordered for the trigger and completed; the test posts their events. */
async function completedJobs(t: ServedTrigger, count: number) {
	const ids: string[] = [];
	for (let n = 0; n < count; n++) ids.push(await order(undeliverable(t)));
	for (const id of ids) sb.completeJob(id);
	sb.resetLedger();
	return ids;
}

const completedEvent = (id: string, eventId: string) => ({
	id: eventId,
	object: 'event',
	type: 'job.completed',
	created_at: new Date().toISOString(),
	data: sb.job(id),
});
const deliveryStatuses = (jobId: string) =>
	sb.ledger.deliveries.filter((d) => d.jobId === jobId).map((d) => d.status);
/** The jobs the runs went on with (an execution that left its event out has no item). */
const ranWith = (t: ServedTrigger) => t.executions.flatMap((items) => items.map((i) => i.json.id));
const reads = () => sb.ledger.requests.filter((r) => r.method === 'GET').length;

/**
 * Posts each job's completion 10 ms apart (into `posted`), checking `meanwhile()` before each post
 * until this process stalls 50 ms between two of them (a pause, by the trigger's rule); whether it did.
 */
async function postApart(
	t: ServedTrigger,
	ids: string[],
	posted: Array<Promise<unknown>>,
	meanwhile: () => void,
): Promise<boolean> {
	let previous = Date.now();
	let stalled = false;
	for (const [n, id] of ids.entries()) {
		stalled ||= Date.now() - previous >= 50;
		if (!stalled) meanwhile();
		posted.push(post(t.url, completedEvent(id, `evt_${n}`)));
		previous = Date.now();
		await new Promise((r) => setTimeout(r, 10));
	}
	return stalled;
}

describe('an event delivered once starts one run', () => {
	test('job.completed: one run with the full job (as read back) and its metadata', async () => {
		const t = await start();
		const id = await order(t.url, { title: 'Weekly', metadata: { drive_file_id: 'f-9' } });
		sb.completeJob(id);
		await settle();
		expect(deliveryStatuses(id)).toEqual([200]);
		expect(t.executions).toEqual([
			[
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
			],
		]);
		expect(sb.ledger.requests.filter((r) => r.route === 'GET /jobs/{id}')).toHaveLength(1);
	});

	test.each([
		["fails the first record (another worker inserted the node's row at that moment)", false],
		['writes the record, then fails (its answer lost): the resent record finds it', true],
	])("n8n's store %s: the run records once more and the event goes on", async (_, written) => {
		const t = await start();
		const id = await order(t.url);
		failNextRecords(1, written);
		sb.completeJob(id);
		await settle();
		expect(t.failed).toEqual([]);
		expect(t.executions).toHaveLength(1);
		expect(t.executions[0][0].json).toMatchObject({ id, event_type: 'job.completed' });
	});

	test("a copy of a reported event, while n8n's store refuses the record's insert on its unique key: the resent record finds the news, and the copy is left out", async () => {
		const t = await start();
		const id = await order(t.url);
		sb.completeJob(id);
		await settle();
		expect(ranWith(t)).toEqual([id]);
		failNextRecords(1);
		expect((await post(t.url, completedEvent(id, 'evt_copy'))).status).toBe(200);
		await settle();
		expect(t.failed).toEqual([]);
		expect(ranWith(t)).toEqual([id]);
	});

	test('job.cancelled: one run with the cancellation', async () => {
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
		expect(t.stored).toHaveLength(0);
	});

	test("an event 3 s ahead of its job's status: taken at once, its run reads until the status shows and goes on with the completed job and its captions", async () => {
		sb.setWebhook({ leadMs: 3000 });
		const t = await start({ attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' });
		const id = await order(t.url, { title: 'Ahead' });
		sb.completeJob(id);
		await sb.settleDeliveries();
		expect(deliveryStatuses(id)).toEqual([200]);
		await t.idle();
		expect(ranWith(t)).toEqual([id]);
		const [item] = t.executions[0];
		expect(item.json).toMatchObject({ status: 'completed', verified: true });
		expect(item.binary!.data).toMatchObject({ fileName: 'Ahead.srt' });
		// Read until it showed: 1 s, 2 s, 4 s apart.
		const jobReads = sb.ledger.requests.filter((r) => r.route === 'GET /jobs/{id}').length;
		expect(jobReads).toBeGreaterThanOrEqual(2);
		expect(jobReads).toBeLessThanOrEqual(4);
	}, 30000);

	test("past the bound (5 minutes, on a fast fake clock) a job that still does not show the event's status fails the run, naming the job and the way on; nothing is recorded", async () => {
		const t = await start();
		const id = await order(undeliverable(t));
		const early = completedEvent(id, 'evt_never_shows');
		const answer = await onFastClock(
			async () => await post(t.url, { ...early, data: { ...early.data, status: 'completed' } }),
		);
		expect(answer.status).toBe(200);
		expect(t.failed).toEqual([
			expect.objectContaining({
				message: `Job ${id} does not show completed yet`,
				description: expect.stringMatching(
					/Retry this execution once Job → Get shows it completed/,
				),
			}),
		]);
		sb.completeJob(id);
		expect((await post(t.url, completedEvent(id, 'evt_shows_now'))).status).toBe(200);
		expect(ranWith(t)).toEqual([id]);
	}, 30000);

	test('the same event delivered twice, and its news under a new event id: one run goes on, the other executions leave it out', async () => {
		sb.setWebhook({ duplicate: true });
		const t = await start();
		const id = await order(t.url);
		sb.completeJob(id);
		await settle();
		expect(deliveryStatuses(id)).toEqual([200, 200]);
		expect(ranWith(t)).toEqual([id]);
		expect((await post(t.url, completedEvent(id, 'evt_replayed'))).status).toBe(200);
		expect(ranWith(t)).toEqual([id]);
		expect(t.executions).toHaveLength(3);
	});

	test('a read that fails fails the run, naming the job; nothing is recorded, so a later copy of the event goes on', async () => {
		const t = await start();
		const id = await order(undeliverable(t));
		sb.completeJob(id);
		sb.injectFault('GET /jobs/{id}', {
			status: 400,
			code: 'invalid',
			message: 'Broken.',
			times: 1,
		});
		expect((await post(t.url, completedEvent(id, 'evt_read_fails'))).status).toBe(200);
		expect(t.failed).toEqual([
			expect.objectContaining({ message: expect.stringMatching(/Broken/) }),
		]);
		expect((await post(t.url, completedEvent(id, 'evt_read_fails'))).status).toBe(200);
		expect(ranWith(t)).toEqual([id]);
	});
});

describe('what a run leaves out: events its job does not back up', () => {
	test.each([
		['ordered without a Webhook URL (e.g. in the dashboard)', undefined],
		[
			"ordered with another workflow's trigger URL",
			'https://n8n.example.com/webhook/0c1d2e3f-aaaa-bbbb-cccc-123456789abc/captioning',
		],
	])(
		'a completed job of the workspace %s: taken, its run has no item',
		async (_name, webhookUrl) => {
			const t = await start();
			const id = await order(webhookUrl);
			sb.completeJob(id);
			const r = await post(t.url, completedEvent(id, 'evt_not_for_us'));
			expect(r.status).toBe(200);
			expect(t.executions).toEqual([[]]);
		},
	);

	test('the URL is compared by its own path (webhook id and path), so a reverse proxy in front of n8n does not matter', async () => {
		const t = await start();
		const webhookId = new URL(t.url).pathname.split('/').at(-2);
		const id = await order(
			`https://captions.example.org/automation/hooks/webhook/${webhookId}/captioning?token=${TOKEN}`,
		);
		sb.completeJob(id);
		await post(t.url, completedEvent(id, 'evt_via_proxy'));
		expect(ranWith(t)).toEqual([id]);
	});

	test('a job of another workspace, a made-up job, a job final with another status: no item', async () => {
		const t = await start();
		const other = await order(undeliverable(t), {}, sb.keys.otherWorkspace);
		sb.completeJob(other);
		const cancelled = await order(undeliverable(t));
		sb.cancelJob(cancelled, 'deleted');
		for (const [n, event] of [
			completedEvent(other, 'evt_other_workspace'),
			forgedEvent(1),
			{ ...completedEvent(cancelled, 'evt_wrong_status'), type: 'job.completed' },
		].entries())
			expect([n, (await post(t.url, event)).status]).toEqual([n, 200]);
		expect(t.executions).toEqual([[], [], []]);
		expect(t.failed).toHaveLength(0);
	});

	test('a verified event carries the job as read, not the body', async () => {
		const t = await start();
		const id = await order(undeliverable(t), { title: 'Real title' });
		sb.completeJob(id);
		const event = completedEvent(id, 'evt_planted_title');
		await post(t.url, { ...event, data: { ...event.data, title: 'Planted' } });
		expect(t.executions[0][0].json).toMatchObject({ id, title: 'Real title', verified: true });
	});

	test('without verification the body is taken as is, and marked unverified', async () => {
		const t = await start({ verify: false });
		await post(t.url, forgedEvent(2));
		expect(t.executions[0][0].json).toMatchObject({ id: forgedEvent(2).data.id, verified: false });
		expect(reads()).toBe(0);
	});
});

describe('the Webhook Secret Token (in the credentials)', () => {
	test('missing or wrong → 401 at once, nothing stored and nothing read; right → taken', async () => {
		const t = await start({}, { webhookToken: 's3cret-token' });
		const event = completedEvent(await order(undefined), 'evt_tok');
		for (const url of [t.bare, `${t.bare}?token=s3cret-tokeX`, `${t.bare}?token=s3cret`])
			expect(await post(url, event)).toEqual({
				status: 401,
				body: { error: 'The token in the URL is missing or wrong.' },
			});
		expect(t.stored).toHaveLength(0);
		expect(reads()).toBe(0);

		const id = await order(`${t.bare}?token=s3cret-token`);
		sb.completeJob(id);
		await settle();
		expect(deliveryStatuses(id)).toEqual([200]);
		expect(ranWith(t)).toEqual([id]);
		// The token travels in the job's Webhook URL; what the workflow gets has it masked.
		expect((t.executions[0][0].json.options as IDataObject).webhook_url).toBe(
			`${t.bare}?token=***`,
		);
		expect(JSON.stringify(t.executions)).not.toContain('s3cret-token');
		const read = await runCaptioning(sb, { resource: 'job', operation: 'get', jobId: id });
		expect(JSON.stringify(read.items)).not.toContain('s3cret-token');
	});

	test("no token set: Job → Create with the same credentials adds one derived from the API key to this n8n's trigger URL, never to another host's; the trigger takes the event", async () => {
		const t = await start({}, {});
		const webhookWaitingBaseUrl = new URL('/webhook-waiting', t.bare).toString();
		const create = async (mediaUrl: string, webhookUrl: string) => {
			const ordered = await runCaptioning(
				sb,
				{ resource: 'job', operation: 'create', source: 'url', mediaUrl, options: { webhookUrl } },
				{ webhookWaitingBaseUrl },
			);
			expect(ordered.failure).toBeUndefined();
			return ordered.items[0].json;
		};
		const job = await create(MEDIA, t.bare);
		const sent = () => sb.ledger.jobs.map((j) => j.body.webhook_url as string);
		expect(sent()[0]).toMatch(new RegExp(`^${t.bare}\\?token=[A-Za-z0-9_-]{32}$`));
		expect((job.options as IDataObject).webhook_url).toBe(`${t.bare}?token=***`);
		sb.completeJob(job.id as string);
		await settle();
		expect(deliveryStatuses(job.id as string)).toEqual([200]);
		expect(ranWith(t)).toEqual([job.id]);
		// A URL of another host (or another path) that ends in /captioning gets no token.
		const elsewhere = `https://hooks.example.com${new URL(t.bare).pathname}`;
		await create(`${MEDIA}?elsewhere`, elsewhere);
		await create(`${MEDIA}?other-path`, new URL('/other/captioning', t.bare).toString());
		expect(sent().slice(1)).toEqual([elsewhere, new URL('/other/captioning', t.bare).toString()]);
		// The service called with the bare URL (ordered elsewhere) is refused.
		expect((await post(t.bare, completedEvent(job.id as string, 'evt_bare'))).status).toBe(401);
	});

	test('the API key rotated, the trigger on a read-only key, its own token changed, its Base URL broken: every event of a job ordered before still starts its run', async () => {
		const t = await start({}, { webhookToken: 'first-token' }, sb.keys.readOnly);
		/** Job → Create with the trigger's URL and this key: the job's id and the token it was sent with. */
		const create = async (key: string, title: string) => {
			const ordered = await runCaptioning(
				sb,
				{
					resource: 'job',
					operation: 'create',
					source: 'url',
					mediaUrl: `${MEDIA}?${title}`,
					title,
					options: { webhookUrl: undeliverable(t) },
				},
				{ key, webhookWaitingBaseUrl: new URL('/webhook-waiting', undeliverable(t)).toString() },
			);
			expect(ordered.failure).toBeUndefined();
			const id = ordered.items[0].json.id as string;
			const sent = sb.ledger.jobs.find((j) => j.id === id)!.body.webhook_url as string;
			return { id, token: new URL(sent).searchParams.get('token')! };
		};
		const original = sb.addKey({ name: 'original' });
		const before = await create(original, 'before');
		// The key is rotated: a new full key of the workspace, the old one revoked. The token stays.
		const after = await create(sb.addKey({ name: 'rotated' }), 'after');
		sb.revokeKey(original);
		expect(after.token).toBe(before.token);
		// While the events are in flight, the trigger's own token is changed and its Base URL mistyped.
		t.editCredentials({ webhookToken: 'second-token', baseUrl: 'htp://typo' });
		const deliveries: Array<[string, string]> = [
			[before.id, before.token],
			[after.id, after.token],
			[before.id, 'first-token'],
			[after.id, 'second-token'],
		];
		for (const [n, [id, token]] of deliveries.entries()) {
			sb.completeJob(id);
			const answer = await post(`${t.bare}?token=${token}`, completedEvent(id, `evt_k${n}`));
			expect([n, answer.status]).toEqual([n, 200]);
		}
		expect(t.stored).toHaveLength(4);
		// A replaced token of its own is taken for a week, then refused; the workspace's stays.
		const realNow = Date.now;
		Date.now = () => realNow() + 8 * 24 * 3600000;
		try {
			const late = (token: string, n: number) =>
				post(`${t.bare}?token=${token}`, completedEvent(before.id, `evt_late${n}`));
			expect((await late('first-token', 1)).status).toBe(401);
			expect((await late(before.token, 2)).status).toBe(200);
		} finally {
			Date.now = realNow;
		}
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

	test('a flood of forged events without the token costs no read and stores nothing', async () => {
		const t = await start();
		for (let n = 0; n < 50; n++) expect((await post(t.bare, forgedEvent(n))).status).toBe(401);
		expect(reads()).toBe(0);
		expect(t.stored).toHaveLength(0);
	});
});

describe('bursts: events that arrive together are read back together', () => {
	test('two executions share a read; the one whose read it is is cancelled while it waits: the other reads itself and gets its job', async () => {
		const t = await start();
		const [a, b] = [await order(undeliverable(t)), await order(undeliverable(t))];
		sb.completeJob(a);
		sb.completeJob(b);
		// The first read waits 5 s after a 503 (temporarily_unavailable) before it tries again.
		sb.injectFault('GET /jobs/{id}', { status: 503, code: 'temporarily_unavailable', times: 1 });
		const first = post(t.url, completedEvent(a, 'evt_first'));
		while (t.stored.length < 1 || reads() < 1) await new Promise((r) => setTimeout(r, 20));
		const second = post(t.url, completedEvent(b, 'evt_second'));
		while (t.stored.length < 2) await new Promise((r) => setTimeout(r, 20));
		await new Promise((r) => setTimeout(r, 300));
		t.cancel(0);
		await Promise.all([first, second]);
		await t.idle();
		expect(ranWith(t)).toEqual([b]);
	});

	test('the runs that read go on once the deliveries pause, the reading one too', async () => {
		const t = await start();
		const ids = await completedJobs(t, 62);
		const [a, b, ...others] = ids;
		sb.setLatency(300);
		try {
			const posted = [post(t.url, completedEvent(a, 'evt_a'))];
			while (sb.maxInFlight() < 1) await new Promise((r) => setTimeout(r, 5));
			posted.push(post(t.url, completedEvent(b, 'evt_b')));
			// Deliveries come 10 ms apart, for longer than the read under way takes: no run ends meanwhile.
			await postApart(t, others, posted, () => expect(ranWith(t)).toEqual([]));
			await Promise.all(posted);
			await t.idle();
		} finally {
			sb.setLatency(0);
		}
		expect(ranWith(t).sort()).toEqual([...ids].sort());
	});

	test('with Verify Events alone no run reads while deliveries come; once they pause, one read answers them all', async () => {
		const t = await start();
		const ids = await completedJobs(t, 40);
		const posted: Array<Promise<unknown>> = [];
		const stalled = await postApart(t, ids, posted, () => expect(reads()).toBe(0));
		await Promise.all(posted);
		await t.idle();
		expect(ranWith(t).sort()).toEqual([...ids].sort());
		if (!stalled) expect(reads()).toBe(1);
	});

	test('with Attach Captions the captions download while deliveries still come', async () => {
		const t = await start({ attachCaptions: true, formats: ['srt'] });
		const ids = await completedJobs(t, 40);
		const posted: Array<Promise<unknown>> = [];
		let downloadedMeanwhile = 0;
		for (const [n, id] of ids.entries()) {
			downloadedMeanwhile = sb.ledger.captionDownloads.length;
			posted.push(post(t.url, completedEvent(id, `evt_${n}`)));
			await new Promise((r) => setTimeout(r, 10));
		}
		await Promise.all(posted);
		await t.idle();
		expect(downloadedMeanwhile).toBeGreaterThan(0);
		expect(ranWith(t).sort()).toEqual([...ids].sort());
		expect(sb.ledger.captionDownloads.map((d) => d.jobId).sort()).toEqual([...ids].sort());
	});

	test('with Attach Captions an event delivered twice at once downloads its captions once, and runs once', async () => {
		const t = await start({ attachCaptions: true, formats: ['srt'] });
		const ids = await completedJobs(t, 20);
		const posted = ids.flatMap((id, n) => [
			post(t.url, completedEvent(id, `evt_${n}`)),
			post(t.url, completedEvent(id, `evt_${n}`)),
		]);
		await Promise.all(posted);
		await t.idle();
		expect(ranWith(t).sort()).toEqual([...ids].sort());
		expect(sb.ledger.captionDownloads.map((d) => d.jobId).sort()).toEqual([...ids].sort());
	});

	const BURST = 150;

	test(`${BURST} jobs finish within 2 s, each event delivered once, reads limited to 10/s: one run per job, every event answered 200`, async () => {
		// An invoiced workspace: the prepaid one's balance is for the other tests.
		const t = await start({}, { webhookToken: TOKEN }, sb.keys.otherWorkspace);
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
		expect(ranWith(t).sort()).toEqual([...ids].sort());
		expect(sb.ledger.deliveries.map((d) => d.status)).toEqual(Array(BURST).fill(200));
		// Read together: how few reads a burst costs is a figure of the bench.
		expect(reads()).toBeLessThan(BURST / 2);
	}, 60000);

	test('an answered event always has an execution: when n8n cannot store it, the delivery is answered 500', async () => {
		const t = await start();
		const id = await order(t.url);
		t.failStores(1);
		sb.completeJob(id);
		await settle();
		expect(deliveryStatuses(id)).toEqual([500]);
		expect(t.stored).toHaveLength(0);
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
		expect(t.executions[0][0].binary!.data).toMatchObject({ fileName: 'Answered first.srt' });
		expect(t.executions[0][0].json.captions_error).toBeUndefined();
	});

	test('a download that finally fails still goes on, with captions_error; a copy of the event stays left out', async () => {
		const t = await start({
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
		const [item] = t.executions[0];
		expect(item.json.id).toBe(id);
		expect(item.json.captions_error).toMatch(
			/^The captions could not be downloaded \((SRT|VTT): No captions of this format exist for this job\. \[HTTP 404 not_found\]\)\. The job is completed: Job → Get Captions can fetch them later\.$/,
		);
		expect(Object.keys(item.binary ?? {})).toHaveLength(1);
		expect((await post(t.url, event)).status).toBe(200);
		expect(ranWith(t)).toEqual([id]);
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
	const attachAll = {
		verify: false,
		attachCaptions: true,
		formats: ['srt', 'vtt', 'txt', 'json'],
		binaryPropertyName: 'data',
	};

	test('a made-up job with planted links: its run reads the job (404) and has no item; nothing is fetched', async () => {
		const elsewhere = await httpReceiver();
		try {
			const t = await start(attachAll);
			const forged = forgedEvent(3);
			const planted = {
				...forged,
				data: { ...forged.data, captions: forgedLinks(elsewhere.url, new URL(t.url).origin) },
			};
			expect((await post(t.url, planted)).status).toBe(200);
			expect(t.executions).toEqual([[]]);
			expect(elsewhere.received).toHaveLength(0);
			expect(sb.ledger.requests.map((r) => r.route)).toEqual(['GET /jobs/{id}']);
		} finally {
			await elsewhere.close();
		}
	});

	test("a real job's event with planted links: the captions are the job's own, downloaded from the links the API lists", async () => {
		const elsewhere = await httpReceiver();
		try {
			const t = await start(attachAll);
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
			const [item] = t.executions[0];
			expect(item.json).toMatchObject({ id, captions: job.captions, verified: false });
			expect(
				(await (await binaryDataService()).getAsBuffer(item.binary!.data_vtt)).toString(),
			).toMatch(/^WEBVTT/);
			expect(elsewhere.received).toHaveLength(0);
			expect(sb.ledger.requests.map((r) => r.route ?? r.path)).toEqual([
				'POST /jobs',
				'GET /jobs/{id}',
				...Array(4).fill('GET /jobs/{id}/captions'),
			]);
		} finally {
			await elsewhere.close();
		}
	});

	test('an event whose status the job does not show yet: its run reads until it does, before any download', async () => {
		const t = await start(attachAll);
		const id = await order(undeliverable(t));
		const early = completedEvent(id, 'evt_early');
		const answered = post(t.url, { ...early, data: { ...early.data, status: 'completed' } });
		await new Promise((r) => setTimeout(r, 1500));
		expect(sb.ledger.captionDownloads).toHaveLength(0);
		sb.completeJob(id);
		expect((await answered).status).toBe(200);
		await t.idle();
		expect(ranWith(t)).toEqual([id]);
		expect(sb.ledger.captionDownloads).toHaveLength(4);
	}, 30000);
});
