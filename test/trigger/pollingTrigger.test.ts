// The Captioning Polling Trigger in n8n's engine (PollContext) against the sandbox: every job of the
// workspace that finishes starts one execution, across polls, restarts and failures, and a poll
// reads one page when nothing happened, whatever the size of the workspace.
import type { IDataObject } from 'n8n-workflow';

import { CaptioningPollingTrigger } from '../../nodes/CaptioningPollingTrigger/CaptioningPollingTrigger.node.js';
import { pollLimits, reportBudgetMs, scheduledIntervalMs } from '../../nodes/CaptioningPollingTrigger/schedule';
import { DEFAULT_CONCURRENCY } from '../../nodes/Captioning/transport/runSlots';
import { binaryDataService } from '../engine/workflow';
import type { PolledTrigger } from '../engine/polling';
import { pollTrigger } from '../engine/polling';
import { MEDIA, orderDirectly } from '../helpers/captioning';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox, useSandbox } from '../helpers/sandbox';

let sb: Sandbox;
useSandbox((s) => (sb = s));

async function trigger(parameters: IDataObject = {}, sandbox = sb): Promise<PolledTrigger> {
	return await pollTrigger({
		nodeType: new CaptioningPollingTrigger(),
		typeName: 'captioningPollingTrigger',
		parameters: { events: ['job.completed', 'job.cancelled'], attachCaptions: false, ...parameters },
		credentials: { captioningApi: { apiKey: sandbox.keys.full, baseUrl: sandbox.baseUrl } },
	});
}

const reads = (sandbox = sb) => sandbox.ledger.requests.filter((r) => r.method === 'GET');
const reportedIds = (t: PolledTrigger) => t.executions.flat().map((i) => i.json.id as string);

describe('what it reports', () => {
	test('a job ordered outside n8n that completes: one execution, the job as read, verified', async () => {
		const t = await trigger();
		await t.activate();
		const id = await orderDirectly(sb, { title: 'From the dashboard', metadata: { source: 'dashboard' } });
		expect(await t.poll()).toBeNull();
		sb.completeJob(id);
		const items = await t.poll();
		expect(items).toEqual([
			{
				json: expect.objectContaining({
					id,
					object: 'job',
					status: 'completed',
					title: 'From the dashboard',
					metadata: { source: 'dashboard' },
					captions: expect.objectContaining({ srt: expect.any(String) }),
					event_id: null,
					event_type: 'job.completed',
					event_created_at: expect.any(String),
					verified: true,
				}),
			},
		]);
		expect(await t.poll()).toBeNull();
	});

	test('a job created and finished between two polls, and a cancelled one, are reported', async () => {
		const t = await trigger();
		await t.activate();
		const done = await orderDirectly(sb);
		const cancelled = await orderDirectly(sb);
		sb.completeJob(done);
		sb.cancelJob(cancelled, 'unsupported_language');
		const items = await t.poll();
		expect(items!.map((i) => [i.json.id, i.json.event_type])).toEqual([
			[done, 'job.completed'],
			[cancelled, 'job.cancelled'],
		]);
		expect(items![1].json.cancellation).toMatchObject({ reason: 'unsupported_language' });
	});

	test('no flood of history on first activation; a job queued before activation that completes after is reported', async () => {
		const old = await orderDirectly(sb);
		sb.completeJob(old);
		const queued = await orderDirectly(sb);
		const t = await trigger();
		expect(await t.activate()).toBeNull();
		expect(await t.poll()).toBeNull();
		sb.completeJob(queued);
		expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger)).toEqual([queued]);
	});

	test('a job queued before activation that finishes while activation reads the service is reported', async () => {
		const queued = await orderDirectly(sb);
		const t = await trigger();
		// Each read waits a little, and the job finishes once activation has read the newest job.
		sb.setLatency(100);
		const activation = t.activate();
		while (!sb.ledger.requests.some((r) => r.query.limit === '1')) await new Promise((r) => setTimeout(r, 5));
		sb.completeJob(queued);
		expect(await activation).toBeNull();
		sb.setLatency(0);
		expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger)).toEqual([queued]);
		expect(await t.poll()).toBeNull();
	});

	test('Events and the metadata filter choose the jobs', async () => {
		const t = await trigger({ events: ['job.cancelled'], filters: { metadataKey: 'source', metadataValue: 'n8n' } });
		await t.activate();
		const ours = await orderDirectly(sb, { metadata: { source: 'n8n' } });
		const oursDone = await orderDirectly(sb, { metadata: { source: 'n8n' } });
		const otherTeam = await orderDirectly(sb, { metadata: { source: 'marketing' } });
		const noMetadata = await orderDirectly(sb);
		sb.cancelJob(ours, 'deleted');
		sb.completeJob(oursDone);
		sb.cancelJob(otherTeam, 'deleted');
		sb.cancelJob(noMetadata, 'deleted');
		expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger)).toEqual([ours]);

		const anyValue = await trigger({ filters: { metadataKey: 'source' } });
		await anyValue.activate();
		const a = await orderDirectly(sb, { metadata: { source: 'x' } });
		const b = await orderDirectly(sb, { metadata: { other: 'y' } });
		sb.completeJob(a);
		sb.completeJob(b);
		expect(reportedIds({ executions: [(await anyValue.poll())!] } as PolledTrigger)).toEqual([a]);
	});

	test('Attach Captions downloads the files; a download that fails is tried again at the next poll', async () => {
		const t = await trigger({ attachCaptions: true, formats: ['srt', 'vtt'], binaryPropertyName: 'data' });
		await t.activate();
		const id = await orderDirectly(sb, { title: 'Episode 3' });
		sb.completeJob(id);
		sb.injectFault('GET /jobs/{id}/captions', { status: 404, code: 'not_found', message: 'Not there yet' });
		await expect(t.poll()).rejects.toThrow(/Not there yet/);
		const items = await t.poll();
		expect(items![0].binary!.data_srt).toMatchObject({ fileName: 'Episode 3.srt' });
		expect((await (await binaryDataService()).getAsBuffer(items![0].binary!.data_vtt)).toString()).toMatch(/^WEBVTT/);
		expect(await t.poll()).toBeNull();
	});

	test('Fetch Test Event returns the latest finished job (and changes nothing)', async () => {
		const first = await orderDirectly(sb, { title: 'Older' });
		const second = await orderDirectly(sb, { title: 'Newer' });
		sb.completeJob(first);
		sb.completeJob(second);
		const t = await trigger();
		const items = await t.manual();
		expect(items).toHaveLength(1);
		expect(items![0].json).toMatchObject({ title: 'Newer', event_type: 'job.completed', verified: true });
		expect(t.saved()).toEqual({});
	});
});

describe('exactly once', () => {
	test('over many polls, with jobs finishing between and during polls', async () => {
		const t = await trigger();
		await t.activate();
		const ids: string[] = [];
		for (let round = 0; round < 12; round++) {
			for (let n = 0; n < 3; n++) ids.push(await orderDirectly(sb, { title: `r${round}-${n}` }));
			// Some finish before the poll, some while it reads (the sandbox answers slowly), some later.
			const open = ids.filter((id) => sb.job(id).status === 'queued');
			open.slice(0, 2).forEach((id) => sb.completeJob(id));
			sb.setLatency(30);
			const polling = t.poll();
			await new Promise((r) => setTimeout(r, 15));
			open.slice(2, 3).forEach((id) => sb.cancelJob(id, 'deleted'));
			await polling;
			sb.setLatency(0);
		}
		ids.filter((id) => sb.job(id).status === 'queued').forEach((id) => sb.completeJob(id));
		await t.poll();
		await t.poll();
		const reported = reportedIds(t);
		expect(reported).toHaveLength(ids.length);
		expect(new Set(reported)).toEqual(new Set(ids));
	});

	test('n8n restarted between polls (static data as last saved) loses and repeats nothing', async () => {
		const t = await trigger();
		await t.activate();
		const a = await orderDirectly(sb);
		const b = await orderDirectly(sb);
		sb.completeJob(a);
		expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger)).toEqual([a]); // saved now
		const c = await orderDirectly(sb);
		expect(await t.poll()).toBeNull(); // sees b and c open: not saved, as in n8n
		sb.completeJob(b);
		sb.completeJob(c);
		const d = await orderDirectly(sb);
		sb.completeJob(d);
		// Down and up again: b, c and d finished meanwhile; a must not come again.
		const afterRestart = await t.restart();
		expect(afterRestart!.map((i) => i.json.id).sort()).toEqual([b, c, d].sort());
		expect(await t.poll()).toBeNull();
		await t.restart();
		expect(await t.poll()).toBeNull();
		expect(reportedIds(t).sort()).toEqual([a, b, c, d].sort());
	});

	test('failures of the service during a poll: nothing kept from it, nothing lost, nothing doubled', async () => {
		const t = await trigger();
		await t.activate();
		const ids = [await orderDirectly(sb), await orderDirectly(sb), await orderDirectly(sb)];
		ids.forEach((id) => sb.completeJob(id));
		sb.injectFault('GET /jobs', { status: 400, code: 'invalid_request', message: 'Injected failure' });
		await expect(t.poll()).rejects.toThrow(/Injected failure/);
		// Transient faults are retried within the poll.
		sb.injectFault('GET /jobs', { status: 503, code: 'temporarily_unavailable', retryAfter: 0 });
		sb.injectFault('GET /jobs', { kind: 'reset' });
		expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger)).toEqual(ids);
		expect(await t.poll()).toBeNull();
		expect(reportedIds(t)).toEqual(ids);
	});
});

describe('what a poll costs', () => {
	test('first activation on a workspace of 10,000 old jobs reads no history; a quiet poll reads one page', async () => {
		const big = await createSandbox({ timing: null });
		try {
			big.seedHistory(10000);
			const t = await trigger({}, big);
			await t.activate();
			// The open jobs (none), the newest job (a page of one), the open jobs again: no page of history.
			const open = [{ status: 'queued', limit: '100' }, { status: 'processing', limit: '100' }];
			expect(reads(big).map((r) => r.query)).toEqual([...open, { limit: '1' }, ...open]);
			big.resetLedger();
			expect(await t.poll()).toBeNull();
			expect(reads(big)).toHaveLength(1);

			// What happened decides the cost: 150 new jobs, 120 finished, read in two pages.
			const ids: string[] = [];
			for (let n = 0; n < 150; n++) ids.push(await orderDirectly(big));
			ids.slice(0, 120).forEach((id) => big.completeJob(id));
			big.resetLedger();
			expect(await t.poll()).toHaveLength(120);
			expect(reads(big)).toHaveLength(2);
			big.resetLedger();
			ids.slice(120).forEach((id) => big.completeJob(id));
			expect(await t.poll()).toHaveLength(30);
			expect(reads(big)).toHaveLength(1);
		} finally {
			await big.close();
		}
	}, 60000);

	test('open jobs beyond the pages a poll reads are checked through the open lists, not one read each', async () => {
		const t = await trigger();
		const old = [await orderDirectly(sb), await orderDirectly(sb), await orderDirectly(sb), await orderDirectly(sb), await orderDirectly(sb)];
		await t.activate();
		for (let n = 0; n < 250; n++) sb.completeJob(await orderDirectly(sb));
		await t.poll();
		sb.resetLedger();
		sb.completeJob(old[0]);
		const items = await t.poll();
		expect(items!.map((i) => i.json.id)).toEqual([old[0]]);
		// A page or two of the list (not reaching them), the queued and processing lists, then only
		// the one that left them is read by itself.
		expect(reads().filter((r) => r.route === 'GET /jobs/{id}').map((r) => r.path)).toEqual([`/jobs/${old[0]}`]);
		expect(reads().filter((r) => r.route === 'GET /jobs' && !r.query.status).length).toBeLessThanOrEqual(2);
		expect(reads().filter((r) => r.query.status).map((r) => r.query.status)).toEqual(['queued', 'processing']);
	});
});

describe('floods: polls that overlap or run long', () => {
	const limits = { ...pollLimits };
	afterEach(() => {
		Object.assign(pollLimits, limits);
		sb.setLatency(0);
	});

	test('a poll that starts while another still runs: the running one wraps up and reports what it has, the new one takes over when it has ended; each job once', async () => {
		const t = await trigger({ attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' });
		await t.activate();
		const ids = await Promise.all(Array.from({ length: 12 }, async () => await orderDirectly(sb)));
		for (const id of ids) sb.completeJob(id);
		sb.setLatency(60);
		let firstEnded = 0;
		const first = t.poll().then((items) => ((firstEnded = Date.now()), items));
		while (sb.ledger.captionDownloads.length < 2) await new Promise((r) => setTimeout(r, 10));
		// n8n's next scheduled poll, while the first is downloading captions.
		const secondStarted = Date.now();
		const second = await t.poll();
		const firstItems = (await first)!;
		expect(firstItems.length).toBeGreaterThanOrEqual(DEFAULT_CONCURRENCY);
		expect(firstItems.length).toBeLessThan(12);
		expect(firstItems.length + second!.length).toBe(12);
		expect(await t.poll()).toBeNull();
		expect(reportedIds(t).sort()).toEqual([...ids].sort());
		// The new poll read nothing while the first ran: its first read (the job list) came after it ended.
		const lists = reads().filter((r) => r.route === 'GET /jobs' && r.at >= secondStarted);
		expect(lists.length).toBeGreaterThan(0);
		expect(Math.min(...lists.map((r) => r.at))).toBeGreaterThanOrEqual(firstEnded - 5);
	});

	test('a third poll while one runs and one waits leaves it to the waiting one', async () => {
		const t = await trigger({ attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' });
		await t.activate();
		const ids = await Promise.all(Array.from({ length: 12 }, async () => await orderDirectly(sb)));
		for (const id of ids) sb.completeJob(id);
		sb.setLatency(60);
		const first = t.poll();
		while (sb.ledger.captionDownloads.length < 2) await new Promise((r) => setTimeout(r, 10));
		const second = t.poll();
		expect(await t.poll()).toBeNull();
		expect((await first)!.length + (await second)!.length).toBe(12);
		expect(reportedIds(t).sort()).toEqual([...ids].sort());
	});

	test('past its time budget a poll reports what it has and leaves the rest to the next; each job once, in the order they finished', async () => {
		const t = await trigger({ attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' });
		await t.activate();
		const ids: string[] = [];
		for (let n = 0; n < 12; n++) ids.push(await orderDirectly(sb));
		for (const id of ids) sb.completeJob(id);
		// A budget spent before the first download: each poll still reports one job per place (4).
		pollLimits.minBudgetMs = 1;
		pollLimits.maxBudgetMs = 1;
		const polls: number[] = [];
		for (let n = 0; n < 6 && reportedIds(t).length < 12; n++) polls.push((await t.poll())?.length ?? 0);
		expect(polls).toEqual([DEFAULT_CONCURRENCY, DEFAULT_CONCURRENCY, DEFAULT_CONCURRENCY]);
		expect(reportedIds(t)).toEqual(ids);
		expect(await t.poll()).toBeNull();
		// With a budget the downloads fit in, one poll reports the rest of a flood at once.
		const more: string[] = [];
		for (let n = 0; n < 12; n++) more.push(await orderDirectly(sb));
		for (const id of more) sb.completeJob(id);
		Object.assign(pollLimits, limits);
		expect((await t.poll())!.map((i) => i.json.id)).toEqual(more);
	});

	test('the jobs a poll leaves for the next are not read again, however far down the list they are by then', async () => {
		const t = await trigger({ filters: { metadataKey: 'group', metadataValue: 'mine' }, attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' });
		await t.activate();
		const short = `${MEDIA}?duration=1`;
		const ids: string[] = [];
		for (let n = 0; n < 12; n++) ids.push(await orderDirectly(sb, { media_url: short, metadata: { group: 'mine' } }));
		// 250 newer jobs of others, finished too: the ones left are past the pages the next poll reads.
		const others: string[] = [];
		for (let n = 0; n < 250; n++) others.push(await orderDirectly(sb, { media_url: short }));
		for (const id of [...ids, ...others]) sb.completeJob(id);
		pollLimits.minBudgetMs = 1;
		pollLimits.maxBudgetMs = 1;
		expect((await t.poll())!).toHaveLength(DEFAULT_CONCURRENCY);
		sb.resetLedger();
		expect((await t.poll())!).toHaveLength(DEFAULT_CONCURRENCY);
		expect((await t.poll())!).toHaveLength(DEFAULT_CONCURRENCY);
		expect(reportedIds(t)).toEqual(ids);
		expect(sb.ledger.requests.filter((r) => r.route === 'GET /jobs/{id}')).toEqual([]);
	});

	test('a poll reports until shortly before the next is due (Poll Times every 3 s), the next one reports the rest', async () => {
		const every3s = { item: Array.from({ length: 20 }, (_, n) => ({ mode: 'custom', cronExpression: `${n * 3} * * * * *` })) };
		const t = await trigger({ pollTimes: every3s, attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' });
		await t.activate();
		const ids: string[] = [];
		for (let n = 0; n < 100; n++) ids.push(await orderDirectly(sb));
		for (const id of ids) sb.completeJob(id);
		// 100 downloads of 100 ms, four at a time: about 2.5 s, more than the 2 s a poll has.
		sb.setLatency(100);
		const started = Date.now();
		const first = (await t.poll())!;
		const took = Date.now() - started;
		expect(took).toBeLessThan(3000 - pollLimits.marginMs + 400);
		expect(first.length).toBeLessThan(100);
		const second = (await t.poll())!;
		expect(first.length + second.length).toBe(100);
		expect(reportedIds(t).sort()).toEqual([...ids].sort());
	});
});

describe('the interval a poll plans with', () => {
	test('from Poll Times: one entry, or custom crons at seconds of their own; several of n8n\'s own modes say nothing', () => {
		expect(scheduledIntervalMs({ item: [{ mode: 'everyMinute' }] })).toBe(60000);
		expect(scheduledIntervalMs({ item: [{ mode: 'everyX', value: 5, unit: 'minutes' }] })).toBe(300000);
		expect(scheduledIntervalMs({ item: [{ mode: 'everyX', value: 2, unit: 'hours' }] })).toBe(7200000);
		expect(scheduledIntervalMs({ item: [{ mode: 'custom', cronExpression: '*/15 * * * *' }] })).toBe(900000);
		expect(scheduledIntervalMs({ item: [0, 10, 20, 30, 40, 50].map((s) => ({ mode: 'custom', cronExpression: `${s} * * * * *` })) })).toBe(10000);
		expect(scheduledIntervalMs({ item: [0, 20, 40].map((s) => ({ mode: 'custom', cronExpression: `${s} * * * * *` })) })).toBe(20000);
		expect(scheduledIntervalMs({ item: [{ mode: 'everyMinute' }, { mode: 'everyMinute' }] })).toBeUndefined();
		expect(scheduledIntervalMs({ item: [{ mode: 'custom', cronExpression: '0 9 * * 1-5' }] })).toBeUndefined();
	});

	test('the budget: the interval less a second, within bounds; without Poll Times to go by, the latest polls\' spacing', () => {
		expect(reportBudgetMs({}, { item: [{ mode: 'everyMinute' }] })).toBe(59000);
		expect(reportBudgetMs({}, { item: [{ mode: 'everyDay' }] })).toBe(pollLimits.maxBudgetMs);
		expect(reportBudgetMs({}, { item: [{ mode: 'everyMinute' }, { mode: 'everyMinute' }] })).toBe(pollLimits.defaultIntervalMs - pollLimits.marginMs);
	});
});
