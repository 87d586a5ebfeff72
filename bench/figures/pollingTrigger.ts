// 16. The Captioning Polling Trigger, in n8n's engine in this process (test/engine/polling.ts), a
// poll every 20 s with the clock moved:
// - the quiet polls of the first 3 minutes after activation on a workspace with 5,000 open jobs
//   that the Filters exclude, created in the 5 minutes before it (within the lag window all along),
//   and 4 followed jobs older than all of them: the reads each poll sends (activation's apart); then
//   the 4 complete and must be reported once, by the first or second poll after;
// - the same with 3,300 queued jobs created at one instant (a bulk order, a clock counting seconds):
//   six quiet polls once the lag window has passed them;
// - a job the list shows 70 s after its creation, below 150 newer ones that complete meanwhile:
//   how many times it is reported once it completes;
// - the execution of a poll that reports 300 completed jobs of an hour each with all five formats
//   attached, against the sandbox in a process of its own: this process's RSS growth while the
//   captions are downloaded into n8n's binary store (filesystem mode).
import { CaptioningPollingTrigger } from '../../nodes/CaptioningPollingTrigger/CaptioningPollingTrigger.node.js';
import { LAG_MS } from '../../nodes/CaptioningPollingTrigger/cursor';
import type { PolledTrigger } from '../../test/engine/polling';
import { pollTrigger } from '../../test/engine/polling';
import type { Sandbox } from '../../test/helpers/sandbox';
import { createSandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, peakRssGrowth, round, sandboxProcess } from '../support';

const OPEN = 5000;
const QUEUED = 3300;
const QUIET = 6;
const FOLLOWED = 4;
const LATE_MS = 70000;
const NEWER = 150;
const SPAN_MS = 3 * 60000;
const EVERY_MS = 20000;
const REPORTED = 300;
const FORMATS = ['srt', 'vtt', 'txt', 'docx', 'json'];

const trigger = async (apiKey: string, baseUrl: string, parameters: Record<string, unknown>) =>
	await pollTrigger({
		nodeType: new CaptioningPollingTrigger(),
		typeName: 'captioningPollingTrigger',
		parameters: {
			events: ['job.completed', 'job.cancelled'],
			attachCaptions: false,
			...parameters,
		},
		credentials: { captioningApi: { apiKey, baseUrl } },
	});

const order = async (sb: Sandbox, team: string) =>
	(
		(await (
			await fetch(`${sb.baseUrl}/jobs`, {
				method: 'POST',
				headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
				body: JSON.stringify({ media_url: 'https://media.example.com/a.mp4', metadata: { team } }),
			})
		).json()) as { id: string }
	).id;

interface Quiet {
	activation: number;
	/** The reads of polls within the lag window of the excluded jobs (the queued workspace's). */
	within: number[];
	reads: number[];
	/** The poll after the followed jobs completed (1: the first) that reported each, in order. */
	reportedBy: number[];
}

/** Date.now moved on by `add`; the sandbox's jobs are created at that time. */
function movedClock(sb: Sandbox) {
	const realNow = Date.now;
	let offset = 0;
	Date.now = () => realNow() + offset;
	const add = (ms: number) => {
		offset += ms;
		sb.setCreationTime(new Date(Date.now()).toISOString());
	};
	add(0);
	return { add, restore: () => (Date.now = realNow) };
}

/** A poll that must report nothing: its reads. */
async function quietPoll(t: PolledTrigger, sb: Sandbox): Promise<number> {
	sb.resetLedger();
	if (await t.poll()) throw new Error('a quiet poll reported a job');
	return sb.ledger.requests.length;
}

/** The followed jobs complete: the poll after (1: the first) that reported each, the first or second. */
async function reportedBy(t: PolledTrigger, sb: Sandbox, followed: string[], next: () => void) {
	for (const id of followed) sb.completeJob(id);
	const reported: Array<[string, number]> = [];
	for (let n = 1; n <= 3; n++, next())
		for (const item of (await t.poll()) ?? []) reported.push([item.json.id as string, n]);
	const by = reported.map(([, n]) => n);
	if (
		reported
			.map(([id]) => id)
			.sort()
			.join() !== [...followed].sort().join() ||
		by.some((n) => n > 2)
	)
		throw new Error(
			`the ${FOLLOWED} followed jobs were not each reported once by the first or second poll after they completed: ${JSON.stringify(reported)}`,
		);
	return by;
}

/**
 * FOLLOWED jobs that fit the Filters, then a minute later `excluded` queued jobs they exclude,
 * created over `withinMs` before activation; then a poll every 20 s: those up to `skipMs` after
 * activation are `within`, the next `count` are `reads`; then the followed jobs complete.
 */
async function quietPolls(shape: {
	excluded: number;
	withinMs: number;
	skipMs: number;
	count: number;
}): Promise<Quiet> {
	const sb = await createSandbox({ timing: null });
	const clock = movedClock(sb);
	try {
		const followed: string[] = [];
		for (let n = 0; n < FOLLOWED; n++) followed.push(await order(sb, 'video'));
		clock.add(60000 + shape.withinMs);
		const marketing = { team: 'marketing' };
		sb.seedHistory(shape.excluded, {
			status: 'queued',
			metadata: marketing,
			withinMs: shape.withinMs,
		});
		const t = await trigger(sb.keys.full, sb.baseUrl, {
			filters: { metadataKey: 'team', metadataValue: 'video' },
		});
		sb.resetLedger();
		await t.activate();
		const activation = sb.ledger.requests.length;
		const [within, reads]: number[][] = [[], []];
		for (let at = EVERY_MS; reads.length < shape.count; at += EVERY_MS) {
			clock.add(EVERY_MS);
			(at <= shape.skipMs ? within : reads).push(await quietPoll(t, sb));
		}
		const next = () => clock.add(EVERY_MS);
		return { activation, within, reads, reportedBy: await reportedBy(t, sb, followed, next) };
	} finally {
		clock.restore();
		await sb.close();
	}
}

/** A job the list shows LATE_MS after its creation, below NEWER newer ones that complete: how many times it is reported. */
async function lateListed(): Promise<number> {
	const sb = await createSandbox({ timing: null });
	const clock = movedClock(sb);
	try {
		const t = await trigger(sb.keys.full, sb.baseUrl, {});
		await t.activate();
		const late = await order(sb, 'video');
		sb.hideJob(late);
		clock.add(1000);
		for (let n = 0; n < NEWER; n++) sb.completeJob(await order(sb, 'marketing'));
		let times = 0;
		// Every 10 s: the job shows at LATE_MS, completes 20 s later; a poll every 20 s.
		for (let at = 10000; at <= LATE_MS + 60000; at += 10000) {
			clock.add(10000);
			if (at === LATE_MS) sb.showJob(late);
			if (at === LATE_MS + 20000) sb.completeJob(late);
			if (at % EVERY_MS === 0)
				times += ((await t.poll()) ?? []).filter((item) => item.json.id === late).length;
		}
		return times;
	} finally {
		clock.restore();
		await sb.close();
	}
}

async function downloadGrowth(): Promise<number> {
	const sb = await sandboxProcess();
	try {
		const t = await trigger(sb.keys.otherWorkspace, sb.baseUrl, {
			events: ['job.completed'],
			attachCaptions: true,
			formats: FORMATS,
			binaryPropertyName: 'data',
		});
		await t.activate();
		for (let n = 0; n < REPORTED; n++)
			await fetch(`${sb.baseUrl}/jobs`, {
				method: 'POST',
				headers: {
					authorization: `Bearer ${sb.keys.otherWorkspace}`,
					'content-type': 'application/json',
				},
				body: JSON.stringify({
					media_url: `https://media.example.com/hour-${n}.mp4?duration=3600`,
				}),
			});
		// The sandbox's jobs complete about 10 s after they are ordered.
		await new Promise((r) => setTimeout(r, 15000));
		global.gc?.();
		const { result, rssGrowthMiB } = await peakRssGrowth(async () => await t.poll());
		if (result?.length !== REPORTED || result.some((i) => Object.keys(i.binary ?? {}).length !== 5))
			throw new Error(
				`the poll reported ${result?.length ?? 0} jobs, not ${REPORTED} with 5 files`,
			);
		return round(rssGrowthMiB, 1);
	} finally {
		sb.stop();
	}
}

const average = (xs: number[]) => round(xs.reduce((a, b) => a + b, 0) / xs.length);

export const pollingTrigger: Section = {
	name: 'pollingTrigger',
	title: `16. the polling trigger: the quiet polls of the first ${SPAN_MS / 60000} minutes after activation, with ${OPEN} open jobs the Filters exclude created in the 5 minutes before it and ${FOLLOWED} older followed jobs; ${QUIET} quiet polls past the lag window of ${QUEUED} queued jobs created at one instant; a job listed ${LATE_MS / 1000} s late; an execution attaching five formats to ${REPORTED} jobs`,
	async run() {
		const busy = await quietPolls({
			excluded: OPEN,
			withinMs: LAG_MS,
			skipMs: 0,
			count: SPAN_MS / EVERY_MS,
		});
		const queued = await quietPolls({
			excluded: QUEUED,
			withinMs: 0,
			skipMs: LAG_MS + EVERY_MS,
			count: QUIET,
		});
		const [busyAverage, queuedAverage] = [average(busy.reads), average(queued.reads)];
		for (const [name, quiet] of [
			['busy', busy],
			['queued', queued],
		] as const)
			log(
				`  ${name}: activation ${quiet.activation} reads; within the lag window ${quiet.within.join(', ') || 'none'}; ${quiet.reads.length} quiet polls every ${EVERY_MS / 1000} s: ${average(quiet.reads)} reads on average (${quiet.reads.join(', ')}); the ${FOLLOWED} followed jobs, once complete, reported by poll ${quiet.reportedBy.join(', ')} after`,
			);
		const late = await lateListed();
		log(
			`  a job listed ${LATE_MS / 1000} s late below ${NEWER} newer ones: reported ${late} times`,
		);
		const growth = await downloadGrowth();
		log(`  ${REPORTED} jobs × ${FORMATS.length} formats attached: RSS growth ${growth} MiB`);
		const windowPages = 2 + OPEN / 100;
		return {
			figures: {
				pollQuietReadsBusyWorkspace: busyAverage,
				pollQuietReadsQueuedWorkspace: queuedAverage,
				pollLateListedReported: late,
				pollAttachRssGrowthMiB: growth,
			},
			rows: [
				[
					'polling trigger: reads of a quiet poll (average, first 3 minutes)',
					`${busyAverage}`,
					`${OPEN} open jobs the Filters exclude, created in the 5 minutes before activation (within the lag window), ${FOLLOWED} older followed (activation ${busy.activation} reads; reported by poll ${Math.max(...busy.reportedBy)} after they completed)`,
					'',
					`≤ ${windowPages} (2, a page per 100 in the window)`,
					busyAverage <= windowPages,
				],
				[
					`polling trigger: reads of a quiet poll (average of ${QUIET}, past the lag window)`,
					`${queuedAverage}`,
					`${QUEUED} queued jobs the Filters exclude created at one instant, ${FOLLOWED} older followed (activation ${queued.activation} reads; ${queued.within.length} polls within the window, ${queued.within[0]} reads each; reported by poll ${Math.max(...queued.reportedBy)} after they completed)`,
					'',
					'≤ 2',
					queuedAverage <= 2,
				],
				[
					`polling trigger: a job listed ${LATE_MS / 1000} s late, times reported`,
					`${late}`,
					`below ${NEWER} newer ones that completed meanwhile, a poll every ${EVERY_MS / 1000} s`,
					'',
					'1',
					late === 1,
				],
				[
					`polling trigger: RSS growth attaching ${FORMATS.length} formats to ${REPORTED} jobs`,
					`${growth} MiB`,
					`${REPORTED * FORMATS.length} files of hour-long jobs`,
					'',
					'≤ 64 MiB',
					growth <= 64,
				],
			],
		};
	},
};
