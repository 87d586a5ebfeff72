// The Captioning Polling Trigger in n8n's engine (PollContext, then WorkflowExecute for the
// execution a poll starts) against the sandbox: every job of the workspace that finishes starts
// one execution, across polls, restarts and failures; a poll reads one page when nothing happened,
// whatever the size of the workspace; captions are downloaded by the execution, not the poll.
import type { IDataObject } from 'n8n-workflow';

import { pollWindow } from '../../nodes/CaptioningPollingTrigger/cursor';
import { CaptioningPollingTrigger } from '../../nodes/CaptioningPollingTrigger/CaptioningPollingTrigger.node.js';
import { binaryDataService } from '../engine/workflow';
import type { PolledTrigger } from '../engine/polling';
import { pollTrigger } from '../engine/polling';
import { orderDirectly } from '../helpers/captioning';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox, useSandbox } from '../helpers/sandbox';
import { DEFAULT_CONCURRENCY } from '../../nodes/Captioning/transport/concurrency';

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
});

describe('what a poll costs', () => {
	test('first activation on a workspace of 10,000 old jobs reads no history; a quiet poll reads one page', async () => {
		const big = await createSandbox({ timing: null });
		try {
			big.seedHistory(10000);
			const t = await trigger({}, big);
			await t.activate();
			// The open jobs (none), the newest page, the open jobs again: no history beyond a page.
			const open = [
				{ status: 'queued', limit: '100' },
				{ status: 'processing', limit: '100' },
			];
			expect(reads(big).map((r) => r.query)).toEqual([...open, { limit: '100' }, ...open]);
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
			expect(Object.keys(t.saved().open as object)).toEqual([]);
			expect(JSON.stringify(t.saved()).length).toBeLessThan(50000);
		} finally {
			await busy.close();
		}
	}, 60000);

	test('followed jobs below 300 older ones: a quiet poll reads one page; they are checked by id on a backoff (from a minute, doubling while none finished), and one that finished is reported once', async () => {
		const own = await createSandbox({ timing: null });
		const ago = (minutes: number) =>
			own.setCreationTime(new Date(Date.now() - minutes * 60000).toISOString());
		const later = (ms: number) => jest.spyOn(Date, 'now').mockReturnValue(Date.now() + ms);
		try {
			const t = await trigger({}, own);
			await t.activate();
			ago(120);
			const old = [];
			for (let n = 0; n < 4; n++) old.push(await orderDirectly(own));
			ago(30);
			for (let n = 0; n < 300; n++) own.completeJob(await orderDirectly(own));
			own.setCreationTime(null);
			for (let n = 0; n < 20; n++) await orderDirectly(own);
			// The first poll checks them (due at once), then waits a minute before the next check.
			expect((await t.poll())!.length).toBe(300);
			own.resetLedger();
			expect(await t.poll()).toBeNull();
			expect(reads(own).map((r) => r.route)).toEqual(['GET /jobs']);
			own.completeJob(old[0]);
			own.resetLedger();
			const clock = later(61000);
			try {
				expect((await t.poll())!.map((i) => i.json.id)).toEqual([old[0]]);
			} finally {
				clock.mockRestore();
			}
			// The list past the newest job seen and a page further, then each followed job by its id.
			expect(
				reads(own)
					.filter((r) => r.route === 'GET /jobs/{id}')
					.map((r) => r.path)
					.sort(),
			).toEqual(old.map((id) => `/jobs/${id}`).sort());
			expect(reads(own).filter((r) => r.route === 'GET /jobs')).toHaveLength(2);
			expect(t.saved().checkEveryMs).toBe(60000);
			// A check that finds none finished doubles the wait: nothing by id a minute later.
			own.resetLedger();
			const minute = later(2 * 61000);
			try {
				expect(await t.poll()).toBeNull();
				expect(reads(own).filter((r) => r.route === 'GET /jobs/{id}')).toHaveLength(3);
			} finally {
				minute.mockRestore();
			}
			own.resetLedger();
			const twoMinutes = later(3 * 61000);
			try {
				expect(await t.poll()).toBeNull();
				expect(reads(own).map((r) => r.route)).toEqual(['GET /jobs']);
			} finally {
				twoMinutes.mockRestore();
			}
		} finally {
			await own.close();
		}
	});

	test('past the most open jobs followed, the oldest are dropped, and the next execution says so in a hint (the items carry no trace of it)', async () => {
		const own = await createSandbox({ timing: null });
		const maxOpen = pollWindow.maxOpen;
		pollWindow.maxOpen = 2;
		try {
			const t = await trigger({}, own);
			await t.activate();
			for (let n = 0; n < 3; n++) await orderDirectly(own);
			expect(await t.poll()).toBeNull();
			own.completeJob(await orderDirectly(own));
			const items = (await t.poll())!;
			expect(items).toHaveLength(1);
			expect(items[0].json).not.toHaveProperty('poll_notices');
			expect(t.hints.at(-1)).toEqual([
				expect.objectContaining({
					message:
						'Open jobs that fit the Filters no longer followed: 1 (at most the newest 2 are followed); their completion is not reported.',
					type: 'warning',
				}),
			]);
			own.completeJob(await orderDirectly(own));
			await t.poll();
			expect(t.hints.at(-1)).toEqual([]);
		} finally {
			pollWindow.maxOpen = maxOpen;
			await own.close();
		}
	});

	test('a lagging list: a job that enters the list 6 minutes after its creation, under 600 newer completions, is reported once, by the next check of the window', async () => {
		const own = await createSandbox({ timing: null });
		const later = (ms: number) => jest.spyOn(Date, 'now').mockReturnValue(Date.now() + ms);
		try {
			const t = await trigger({}, own);
			await t.activate();
			own.setCreationTime(new Date(Date.now() - 6 * 60000).toISOString());
			const late = await orderDirectly(own);
			own.hideJob(late);
			own.setCreationTime(null);
			for (let n = 0; n < 600; n++) own.completeJob(await orderDirectly(own));
			expect((await t.poll())!.length).toBe(600);
			own.showJob(late);
			own.completeJob(late);
			// A quiet poll does not reach it (one page); the next check of the window does.
			expect(await t.poll()).toBeNull();
			const clock = later(61000);
			try {
				expect((await t.poll())!.map((i) => i.json.id)).toEqual([late]);
			} finally {
				clock.mockRestore();
			}
			const again = later(20 * 61000);
			try {
				expect(await t.poll()).toBeNull();
			} finally {
				again.mockRestore();
			}
			expect(reportedIds(t).filter((id) => id === late)).toEqual([late]);
		} finally {
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
