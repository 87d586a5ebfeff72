// 16. The Captioning Polling Trigger, in n8n's engine in this process (test/engine/polling.ts):
// - the quiet polls of the first 3 minutes after activation (one every 20 s, the clock moved) on a
//   workspace with 5,000 open jobs that the Filters exclude, created in the 5 minutes before it, and
//   4 followed jobs older than all of them: the reads each poll sends (activation's apart); then
//   the 4 complete and must be reported once, by the first or second poll after;
// - the execution of a poll that reports 300 completed jobs of an hour each with all five formats
//   attached, against the sandbox in a process of its own: this process's RSS growth while the
//   captions are downloaded into n8n's binary store (filesystem mode).
import { CaptioningPollingTrigger } from '../../nodes/CaptioningPollingTrigger/CaptioningPollingTrigger.node.js';
import { pollTrigger } from '../../test/engine/polling';
import type { Sandbox } from '../../test/helpers/sandbox';
import { createSandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, peakRssGrowth, round, sandboxProcess } from '../support';

const OPEN = 5000;
const FOLLOWED = 4;
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
	reads: number[];
	/** The poll after the followed jobs completed (1: the first) that reported each, in order. */
	reportedBy: number[];
}

async function quietPolls(): Promise<Quiet> {
	const sb = await createSandbox({ timing: null });
	const realNow = Date.now;
	let clock = 0;
	Date.now = () => realNow() + clock;
	try {
		sb.setCreationTime(new Date(Date.now() - 6 * 60000).toISOString());
		const followed: string[] = [];
		for (let n = 0; n < FOLLOWED; n++) followed.push(await order(sb, 'video'));
		sb.setCreationTime(null);
		sb.seedHistory(OPEN, {
			status: 'queued',
			metadata: { team: 'marketing' },
			withinMs: 5 * 60000,
		});
		const t = await trigger(sb.keys.full, sb.baseUrl, {
			filters: { metadataKey: 'team', metadataValue: 'video' },
		});
		sb.resetLedger();
		await t.activate();
		const activation = sb.ledger.requests.length;
		const reads: number[] = [];
		for (clock = EVERY_MS; clock <= SPAN_MS; clock += EVERY_MS) {
			sb.resetLedger();
			if (await t.poll()) throw new Error('a quiet poll reported a job');
			reads.push(sb.ledger.requests.length);
		}
		for (const id of followed) sb.completeJob(id);
		const reported: Array<[string, number]> = [];
		for (let n = 1; n <= 3; n++, clock += EVERY_MS)
			for (const item of (await t.poll()) ?? []) reported.push([item.json.id as string, n]);
		const reportedBy = reported.map(([, n]) => n);
		const ids = reported.map(([id]) => id).sort();
		if (ids.join() !== [...followed].sort().join() || reportedBy.some((n) => n > 2))
			throw new Error(
				`the ${FOLLOWED} followed jobs were not each reported once by the first or second poll after they completed: ${JSON.stringify(reported)}`,
			);
		return { activation, reads, reportedBy };
	} finally {
		Date.now = realNow;
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

export const pollingTrigger: Section = {
	name: 'pollingTrigger',
	title: `16. the polling trigger: the quiet polls of the first ${SPAN_MS / 60000} minutes after activation, with ${OPEN} open jobs the Filters exclude created in the 5 minutes before it and ${FOLLOWED} older followed jobs; an execution attaching five formats to ${REPORTED} jobs`,
	async run() {
		const quiet = await quietPolls();
		const average = round(quiet.reads.reduce((a, b) => a + b, 0) / quiet.reads.length);
		log(
			`  activation: ${quiet.activation} reads; ${quiet.reads.length} quiet polls every ${EVERY_MS / 1000} s: ${average} reads on average (${quiet.reads.join(', ')}); the ${FOLLOWED} followed jobs, once complete, reported by poll ${quiet.reportedBy.join(', ')} after`,
		);
		const growth = await downloadGrowth();
		log(`  ${REPORTED} jobs × ${FORMATS.length} formats attached: RSS growth ${growth} MiB`);
		return {
			figures: { pollQuietReadsBusyWorkspace: average, pollAttachRssGrowthMiB: growth },
			rows: [
				[
					'polling trigger: reads of a quiet poll (average, first 3 minutes)',
					`${average}`,
					`${OPEN} open jobs the Filters exclude, created in the 5 minutes before activation, ${FOLLOWED} older followed (activation ${quiet.activation} reads; reported by poll ${Math.max(...quiet.reportedBy)} after they completed)`,
					'',
					'≤ 2',
					average <= 2,
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
