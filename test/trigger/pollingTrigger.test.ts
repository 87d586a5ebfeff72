// The Captioning Polling Trigger in n8n's engine (PollContext, then WorkflowExecute for the
// execution a poll starts) against the sandbox: every job of the workspace that finishes starts
// one execution, across polls, restarts and failures, also one the list shows up to the lag window
// late; a followed job is reported by the first or second poll after it finishes; a quiet poll reads
// two pages, plus one per 100 jobs created within the lag window, whatever the size of the
// workspace and the age of the followed jobs; captions are downloaded by the execution, not the poll.
import type { IDataObject } from 'n8n-workflow';

import { CaptioningPollingTrigger } from '../../nodes/CaptioningPollingTrigger/CaptioningPollingTrigger.node.js';
import { LAG_MS } from '../../nodes/CaptioningPollingTrigger/cursor';
import { binaryDataService } from '../engine/workflow';
import type { PolledTrigger } from '../engine/polling';
import { pollTrigger } from '../engine/polling';
import { orderDirectly } from '../helpers/captioning';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox, useSandbox } from '../helpers/sandbox';
import { DEFAULT_CONCURRENCY } from '../../nodes/Captioning/transport/limits';

let sb: Sandbox;
useSandbox((s) => (sb = s));

async function trigger(parameters: IDataObject = {}, sandbox = sb): Promise<PolledTrigger> {
	return await pollTrigger({
		nodeType: new CaptioningPollingTrigger(),
		typeName: 'captioningPollingTrigger',
		parameters: {
			events: ['job.completed', 'job.cancelled'],
			attachCaptions: false,
			...parameters,
		},
		credentials: { captioningApi: { apiKey: sandbox.keys.full, baseUrl: sandbox.baseUrl } },
	});
}

const reads = (sandbox = sb) => sandbox.ledger.requests.filter((r) => r.method === 'GET');
const reportedIds = (t: PolledTrigger) => t.executions.flat().map((i) => i.json.id as string);

const VIDEO = { filters: { metadataKey: 'team', metadataValue: 'video' } };

/** The ids each of the next `n` polls reported. */
async function nextPolls(t: PolledTrigger, n: number): Promise<string[][]> {
	const polls: string[][] = [];
	for (let i = 0; i < n; i++)
		polls.push(((await t.poll()) ?? []).map((item) => item.json.id as string));
	return polls;
}

/**
 * `quiet` polls that report nothing and read at most 2 pages of the job list each; then the followed
 * jobs complete, and the next two polls report each once (a third, nothing).
 */
async function quietThenReported(
	t: PolledTrigger,
	sandbox: Sandbox,
	followed: string[],
	quiet: number,
): Promise<void> {
	for (let n = 0; n < quiet; n++) {
		sandbox.resetLedger();
		expect(await t.poll()).toBeNull();
		expect(reads(sandbox).length).toBeLessThanOrEqual(2);
		expect(reads(sandbox).filter((r) => r.route !== 'GET /jobs')).toEqual([]);
	}
	followed.forEach((id) => sandbox.completeJob(id));
	const after = await nextPolls(t, 3);
	expect(after.slice(0, 2).flat().sort()).toEqual([...followed].sort());
	expect(after[2]).toEqual([]);
}

/**
 * A workspace created oldest first, a minute apart: 'video', a job that fits VIDEO (queued); a
 * number, that many queued jobs VIDEO excludes, created within that minute. The video jobs' ids.
 */
async function workspaceOf(sandbox: Sandbox, layout: Array<'video' | number>): Promise<string[]> {
	const start = Date.now() - layout.length * 60000;
	const ids: string[] = [];
	for (const [n, part] of layout.entries()) {
		const time = start + n * 60000;
		if (part === 'video') {
			sandbox.setCreationTime(new Date(time).toISOString());
			ids.push(await orderDirectly(sandbox, { metadata: { team: 'video' } }));
			sandbox.setCreationTime(null);
			continue;
		}
		const clock = jest.spyOn(Date, 'now').mockReturnValue(time + 60000);
		sandbox.seedHistory(part, {
			status: 'queued',
			metadata: { team: 'marketing' },
			withinMs: 50000,
		});
		clock.mockRestore();
	}
	return ids;
}

/** The id the job list shows just above a job. */
async function listedAbove(sandbox: Sandbox, id: string): Promise<string> {
	const ids: string[] = [];
	let after = '';
	for (;;) {
		const res = await fetch(
			`${sandbox.baseUrl}/jobs?limit=100${after && `&starting_after=${after}`}`,
			{
				headers: { authorization: `Bearer ${sandbox.keys.full}` },
			},
		);
		const page = (await res.json()) as { data: Array<{ id: string }>; has_more: boolean };
		ids.push(...page.data.map((job) => job.id));
		if (!page.has_more) return ids[ids.indexOf(id) - 1];
		after = ids[ids.length - 1];
	}
}

/**
 * Date.now moved on by `add` (the sandbox's list lag and the trigger read it); with a sandbox, the
 * jobs it creates meanwhile are created at that time.
 */
function laterClock(sandbox?: Sandbox) {
	const realNow = Date.now;
	let offset = 0;
	const spy = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + offset);
	const created = () => sandbox?.setCreationTime(new Date(Date.now()).toISOString());
	created();
	return {
		add: (ms: number) => {
			offset += ms;
			created();
		},
		restore: () => {
			spy.mockRestore();
			sandbox?.setCreationTime(null);
		},
	};
}
type Clock = ReturnType<typeof laterClock>;

/** The clock moves past the lag window: a poll reads the jobs created within it one last time. */
async function pastWindow(t: PolledTrigger, clock: Clock): Promise<void> {
	clock.add(LAG_MS);
	expect(await t.poll()).toBeNull();
}

describe('what it reports', () => {
	test('a job ordered outside n8n that completes: one execution, the job as read, verified', async () => {
		const t = await trigger();
		await t.activate();
		const id = await orderDirectly(sb, {
			title: 'From the dashboard',
			metadata: { source: 'dashboard' },
		});
		expect(await t.poll()).toBeNull();
		sb.completeJob(id);
		const items = await t.poll();
		expect(items).toMatchObject([
			{
				pairedItem: { item: 0 },
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
		while (!sb.ledger.requests.some((r) => r.route === 'GET /jobs' && !r.query.status))
			await new Promise((r) => setTimeout(r, 5));
		sb.completeJob(queued);
		expect(await activation).toBeNull();
		sb.setLatency(0);
		expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger)).toEqual([queued]);
		expect(await t.poll()).toBeNull();
	});

	test('Events and the metadata filter choose the jobs', async () => {
		const t = await trigger({
			events: ['job.cancelled'],
			filters: { metadataKey: 'source', metadataValue: 'n8n' },
		});
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

	test('Attach Captions: the poll reads the job list only; its execution downloads the files', async () => {
		const t = await trigger({
			attachCaptions: true,
			formats: ['srt', 'vtt'],
			binaryPropertyName: 'data',
		});
		await t.activate();
		const id = await orderDirectly(sb, { title: 'Episode 3' });
		sb.completeJob(id);
		const items = await t.poll();
		expect(items![0].binary!.data_srt).toMatchObject({ fileName: 'Episode 3.srt' });
		expect(
			(await (await binaryDataService()).getAsBuffer(items![0].binary!.data_vtt)).toString(),
		).toMatch(/^WEBVTT/);
		expect(items![0].pairedItem).toEqual({ item: 0 });
		expect(await t.poll()).toBeNull();
	});

	test('a download that fails for good: the job is reported once, with captions_error naming the format and the cause', async () => {
		const t = await trigger({ attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' });
		await t.activate();
		const id = await orderDirectly(sb, { title: 'Episode 4' });
		sb.completeJob(id);
		sb.injectFault('GET /jobs/{id}/captions', {
			status: 404,
			code: 'not_found',
			message: 'Not there',
		});
		const items = await t.poll();
		expect(items!.map((i) => i.json.id)).toEqual([id]);
		expect(items![0].binary).toBeUndefined();
		expect(items![0].json.captions_error).toMatch(
			/^The captions could not be downloaded \(SRT: Not there/,
		);
		expect(await t.poll()).toBeNull();
	});

	test('jobs created at the same instant as the newest one a poll saw, listed below it, are reported', async () => {
		const t = await trigger();
		sb.setCreationTime(new Date().toISOString());
		const first = await orderDirectly(sb);
		await t.activate();
		// Created at the cursor's instant; the list orders such jobs by id, so some come below it.
		const later = await Promise.all(
			Array.from({ length: 12 }, async () => await orderDirectly(sb)),
		);
		for (const id of [first, ...later]) sb.completeJob(id);
		expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger).sort()).toEqual(
			[first, ...later].sort(),
		);
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
		expect(items![0].json).toMatchObject({
			title: 'Newer',
			event_type: 'job.completed',
			verified: true,
		});
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

	test('two polls at once (n8n starts one at each Poll Time, also while the last one still reads): each job once', async () => {
		const t = await trigger();
		const id = await orderDirectly(sb);
		await t.activate();
		sb.completeJob(id);
		// The sandbox answers slowly, so the second poll starts while the first reads.
		sb.setLatency(100);
		const both = await Promise.all([t.poll(), t.poll()]);
		sb.setLatency(0);
		expect(both.filter((items) => items !== null)).toHaveLength(1);
		expect(await nextPolls(t, 2)).toEqual([[], []]);
		expect(reportedIds(t)).toEqual([id]);
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
		sb.injectFault('GET /jobs', {
			status: 400,
			code: 'invalid_request',
			message: 'Injected failure',
		});
		await expect(t.poll()).rejects.toThrow(/Injected failure/);
		// Transient faults are retried within the poll.
		sb.injectFault('GET /jobs', { status: 503, code: 'temporarily_unavailable', retryAfter: 0 });
		sb.injectFault('GET /jobs', { kind: 'reset' });
		expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger).sort()).toEqual(
			[...ids].sort(),
		);
		expect(await t.poll()).toBeNull();
		expect(reportedIds(t).sort()).toEqual([...ids].sort());
	});
	test('a failure after a poll read its first page: nothing kept from it, so the next poll reads the same pages and reports the followed job once', async () => {
		const own = await createSandbox({ timing: null });
		const [followed] = await workspaceOf(own, ['video', 150]);
		const clock = laterClock(own);
		try {
			const t = await trigger(VIDEO, own);
			await t.activate();
			await pastWindow(t, clock);
			// The page of the followed job fails for good.
			own.injectFault('GET /jobs', {
				status: 403,
				code: 'forbidden',
				message: 'Injected',
				after: 1,
			});
			await expect(t.poll()).rejects.toThrow(/Injected/);
			own.completeJob(followed);
			expect(await nextPolls(t, 2)).toEqual([[followed], []]);
		} finally {
			clock.restore();
			await own.close();
		}
	});

	test('a restart brings back the state of the last poll that reported: it reads further back once, then two pages; nothing twice', async () => {
		const own = await createSandbox({ timing: null });
		const [a, b] = await workspaceOf(own, ['video', 'video', 300]);
		const clock = laterClock(own);
		try {
			const t = await trigger(VIDEO, own);
			await t.activate();
			await pastWindow(t, clock);
			own.completeJob(a);
			expect((await nextPolls(t, 2)).flat()).toEqual([a]);
			// 300 newer jobs the Filters exclude finish and the lag window passes them: n8n saves nothing.
			for (let n = 0; n < 300; n++)
				own.completeJob(await orderDirectly(own, { metadata: { team: 'marketing' } }));
			expect(await nextPolls(t, 2)).toEqual([[], []]);
			await pastWindow(t, clock);
			own.completeJob(b);
			own.resetLedger();
			const restarted = ((await t.restart()) ?? []).map((item) => item.json.id as string);
			expect(reads(own).length).toBeGreaterThan(3);
			expect([restarted, ...(await nextPolls(t, 1))].flat()).toEqual([b]);
			await pastWindow(t, clock);
			for (let n = 0; n < 3; n++) {
				own.resetLedger();
				expect(await t.poll()).toBeNull();
				expect(reads(own).length).toBeLessThanOrEqual(2);
			}
			expect(reportedIds(t)).toEqual([a, b]);
		} finally {
			clock.restore();
			await own.close();
		}
	}, 60000);
});

describe('the order in which jobs become visible', () => {
	test('a job that becomes visible after a newer one was reported: its completion is reported once', async () => {
		const t = await trigger();
		await t.activate();
		// The service writes `late` first, but it becomes visible only after `newer` was seen.
		const late = await orderDirectly(sb, { title: 'Written first, visible last' });
		sb.hideJob(late);
		const newer = await orderDirectly(sb);
		sb.completeJob(newer);
		expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger)).toEqual([newer]);
		sb.showJob(late);
		sb.completeJob(late);
		expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger)).toEqual([late]);
		expect(await t.poll()).toBeNull();
		// Visible late and still open: followed until it finishes.
		const lateOpen = await orderDirectly(sb);
		sb.hideJob(lateOpen);
		sb.completeJob(await orderDirectly(sb));
		await t.poll();
		sb.showJob(lateOpen);
		expect(await t.poll()).toBeNull();
		sb.completeJob(lateOpen);
		expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger)).toEqual([lateOpen]);
		expect(await t.poll()).toBeNull();
	});

	test('a job the list shows 70 s after its creation, below 150 newer ones that complete meanwhile (a poll every 20 s): reported once when it completes, each of the 150 once; so is one shown 4.5 minutes late', async () => {
		const clock = laterClock(sb);
		try {
			const t = await trigger();
			await t.activate();
			for (const lateMs of [70000, 270000]) {
				const late = await orderDirectly(sb);
				sb.hideJob(late);
				clock.add(1000);
				const newer = await Promise.all(
					Array.from({ length: 150 }, async () => await orderDirectly(sb)),
				);
				newer.forEach((id) => sb.completeJob(id));
				const reported: string[] = [];
				// Every 10 s: the job shows at lateMs, completes 20 s later; a poll every 20 s.
				for (let time = 10000; time <= lateMs + 60000; time += 10000) {
					clock.add(10000);
					if (time === lateMs) sb.showJob(late);
					if (time === lateMs + 20000) sb.completeJob(late);
					if (time % 20000 === 0) reported.push(...(await nextPolls(t, 1)).flat());
				}
				expect(reported.sort()).toEqual([...newer, late].sort());
			}
		} finally {
			clock.restore();
		}
	}, 60000);

	test('a list that shows each job a minute after its creation: a job finished before it is listed and one still open are each reported once', async () => {
		const lagging = await createSandbox({ timing: null, listLagMs: 60000 });
		const clock = laterClock();
		try {
			const t = await trigger({}, lagging);
			await t.activate();
			const done = await orderDirectly(lagging);
			const open = await orderDirectly(lagging);
			lagging.completeJob(done);
			expect(await t.poll()).toBeNull();
			clock.add(61000);
			expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger)).toEqual([done]);
			expect(await t.poll()).toBeNull();
			lagging.completeJob(open);
			expect(await nextPolls(t, 3)).toEqual([[open], [], []]);
			expect(reportedIds(t)).toEqual([done, open]);
		} finally {
			clock.restore();
			await lagging.close();
		}
	});

	test('a followed job whose page the service refuses to start at (400 for the job above it): read by its id, reported once by the first or second poll', async () => {
		const own = await createSandbox({ timing: null });
		const [followed] = await workspaceOf(own, ['video', 150]);
		const clock = laterClock(own);
		try {
			const t = await trigger(VIDEO, own);
			await t.activate();
			await pastWindow(t, clock);
			// The job listed just above it leaves the list: starting_after it is refused.
			own.hideJob(await listedAbove(own, followed));
			own.resetLedger();
			expect(await nextPolls(t, 2)).toEqual([[], []]);
			expect(own.ledger.requests.filter((r) => r.status === 400)).toHaveLength(1);
			expect(reads(own).map((r) => r.path)).toContain(`/jobs/${followed}`);
			own.completeJob(followed);
			const after = await nextPolls(t, 3);
			expect(after.slice(0, 2).flat()).toEqual([followed]);
			expect(after[2]).toEqual([]);
		} finally {
			clock.restore();
			await own.close();
		}
	});
});

describe('what a poll costs', () => {
	test('first activation on a workspace of 10,000 old jobs reads the lag window of its history only; past it, a quiet poll reads one page', async () => {
		const big = await createSandbox({ timing: null });
		big.seedHistory(10000);
		const clock = laterClock(big);
		try {
			const t = await trigger({}, big);
			await t.activate();
			// The open lists (none), then the newest pages down past the lag window (a job a second: 4).
			expect(reads(big).map((r) => r.query.status ?? 'all')).toEqual([
				'queued',
				'processing',
				...['all', 'all', 'all', 'all'],
			]);
			await pastWindow(t, clock);
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
			// Polls read them again within the lag window (a job may enter the list late), not past it.
			big.resetLedger();
			ids.slice(120).forEach((id) => big.completeJob(id));
			expect(await t.poll()).toHaveLength(30);
			expect(reads(big)).toHaveLength(2);
			await pastWindow(t, clock);
			big.resetLedger();
			expect(await t.poll()).toBeNull();
			expect(reads(big)).toHaveLength(1);
		} finally {
			clock.restore();
			await big.close();
		}
	}, 60000);

	test('5,000 open jobs the Filters exclude cost a quiet poll nothing: one read, and none of them in static data', async () => {
		const busy = await createSandbox({ timing: null });
		try {
			busy.seedHistory(5000, { status: 'queued', metadata: { source: 'marketing' } });
			const t = await trigger({ filters: { metadataKey: 'source', metadataValue: 'n8n' } }, busy);
			await t.activate();
			const ours = await orderDirectly(busy, { metadata: { source: 'n8n' } });
			expect(await t.poll()).toBeNull();
			busy.resetLedger();
			expect(await t.poll()).toBeNull();
			expect(reads(busy)).toHaveLength(1);
			busy.completeJob(ours);
			expect(reportedIds({ executions: [(await t.poll())!] } as PolledTrigger)).toEqual([ours]);
			expect(t.saved().followed).toEqual({});
			expect(JSON.stringify(t.saved()).length).toBeLessThan(50000);
		} finally {
			await busy.close();
		}
	}, 60000);

	test('4 followed jobs older than 500 open ones the Filters exclude, created just before activation: past the lag window, each quiet poll reads at most 2 pages, none by id; once complete, each is reported once by the first or second poll', async () => {
		const own = await createSandbox({ timing: null });
		const followed = await workspaceOf(own, ['video', 'video', 'video', 'video', 500]);
		const clock = laterClock(own);
		try {
			const t = await trigger(VIDEO, own);
			own.resetLedger();
			await t.activate();
			// The open lists, all of them (6 pages and 1), then the newest pages down past the lag window.
			expect(reads(own).filter((r) => r.query.status)).toHaveLength(7);
			await pastWindow(t, clock);
			await quietThenReported(t, own, followed, 6);
		} finally {
			clock.restore();
			await own.close();
		}
	}, 60000);

	test('3,300 queued jobs the Filters exclude created at one instant (a bulk order, a clock counting seconds) above 4 older followed ones: polls read them while the lag window holds them, then each quiet poll reads at most 2 pages, none by id; once complete, the 4 are reported once by the first or second poll', async () => {
		const own = await createSandbox({ timing: null });
		const clock = laterClock(own);
		try {
			const followed: string[] = [];
			for (let n = 0; n < 4; n++)
				followed.push(await orderDirectly(own, { metadata: { team: 'video' } }));
			clock.add(60000);
			own.seedHistory(3300, { status: 'queued', metadata: { team: 'marketing' }, withinMs: 0 });
			const t = await trigger(VIDEO, own);
			await t.activate();
			for (let waited = 0; waited <= LAG_MS; waited += 20000) {
				clock.add(20000);
				expect(await t.poll()).toBeNull();
			}
			await quietThenReported(t, own, followed, 6);
		} finally {
			clock.restore();
			await own.close();
		}
	}, 60000);

	test('20 followed jobs processing under 300 newer completions: past the lag window, a quiet poll reads at most 2 pages; when they finish, each is reported once by the first or second poll', async () => {
		const own = await createSandbox({ timing: null });
		const clock = laterClock(own);
		try {
			const t = await trigger(VIDEO, own);
			await t.activate();
			const followed: string[] = [];
			for (let n = 0; n < 20; n++) {
				followed.push(await orderDirectly(own, { metadata: { team: 'video' } }));
				own.startJob(followed[n]);
			}
			clock.add(1000);
			for (let n = 0; n < 300; n++)
				own.completeJob(await orderDirectly(own, { metadata: { team: 'marketing' } }));
			// Polls read the newer jobs while the lag window holds them (a job may enter the list late).
			expect(await nextPolls(t, 2)).toEqual([[], []]);
			await pastWindow(t, clock);
			await quietThenReported(t, own, followed, 4);
		} finally {
			clock.restore();
			await own.close();
		}
	}, 60000);

	test('followed jobs queued far apart in the list: a poll reads one page of them, and the next execution says so in a hint (the items carry no trace of it); each is still reported once', async () => {
		const own = await createSandbox({ timing: null });
		const followed = await workspaceOf(own, ['video', 150, 'video', 150]);
		const clock = laterClock(own);
		try {
			const t = await trigger(VIDEO, own);
			await t.activate();
			await pastWindow(t, clock);
			expect(await nextPolls(t, 2)).toEqual([[], []]);
			// Past the bound: reported by a later poll than the second (here the third at most).
			followed.forEach((id) => own.completeJob(id));
			const polls = await nextPolls(t, 4);
			expect(polls.flat().sort()).toEqual([...followed].sort());
			expect(t.executions).toHaveLength(1);
			expect(t.executions[0][0].json).not.toHaveProperty('poll_notices');
			expect(t.hints[0]).toEqual([
				expect.objectContaining({
					message:
						"The followed jobs lie in more than one page of the job list, and a poll reads one such page: a job's completion may be reported some polls late.",
					type: 'warning',
				}),
			]);
			// Within the bound again: the next execution shows no hint.
			const next = await orderDirectly(own, { metadata: { team: 'video' } });
			own.completeJob(next);
			expect(await t.poll()).toHaveLength(1);
			expect(t.hints.at(-1)).toEqual([]);
		} finally {
			clock.restore();
			await own.close();
		}
	}, 60000);
});

describe('floods', () => {
	test("a poll that finds a flood reports every job at once: its execution downloads the captions, paced with the key's reads", async () => {
		const t = await trigger({ attachCaptions: true, formats: ['srt'], binaryPropertyName: 'data' });
		await t.activate();
		const ids = await Promise.all(Array.from({ length: 30 }, async () => await orderDirectly(sb)));
		for (const id of ids) sb.completeJob(id);
		sb.setRateLimits({ readPerSecond: 10 });
		sb.resetLedger();
		const items = (await t.poll())!;
		expect(items.map((i) => i.json.id).sort()).toEqual([...ids].sort());
		expect(items.every((i) => i.binary?.data && i.json.captions_error === undefined)).toBe(true);
		expect(sb.ledger.captionDownloads).toHaveLength(30);
		expect(await t.poll()).toBeNull();
	}, 60000);

	test("an execution reporting 300 jobs with five formats downloads at most Batching's default Concurrency at once, and reports every job with its captions", async () => {
		const t = await pollTrigger({
			nodeType: new CaptioningPollingTrigger(),
			typeName: 'captioningPollingTrigger',
			parameters: {
				events: ['job.completed'],
				attachCaptions: true,
				formats: ['srt', 'vtt', 'txt', 'docx', 'json'],
				binaryPropertyName: 'data',
			},
			// The invoiced workspace: the prepaid one's balance is for the other tests.
			credentials: {
				captioningApi: { apiKey: sb.keys.otherWorkspace, baseUrl: sb.baseUrl },
			},
		});
		await t.activate();
		const ids = await Promise.all(
			Array.from({ length: 300 }, async () => await orderDirectly(sb, {}, sb.keys.otherWorkspace)),
		);
		for (const id of ids) sb.completeJob(id);
		sb.resetLedger();
		// Each download takes a little while, so those under way overlap as they would over a network.
		sb.setLatency(5);
		let items;
		try {
			// The poll reads pages one after another; then its execution downloads.
			items = (await t.poll())!;
		} finally {
			sb.setLatency(0);
		}
		expect(items).toHaveLength(300);
		expect(
			items.every((i) => Object.keys(i.binary ?? {}).length === 5 && !i.json.captions_error),
		).toBe(true);
		expect(sb.ledger.captionDownloads).toHaveLength(1500);
		expect(sb.maxInFlight()).toBeLessThanOrEqual(DEFAULT_CONCURRENCY);
	}, 120000);
});
