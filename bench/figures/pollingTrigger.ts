// 16. The Captioning Polling Trigger, in n8n's engine in this process (test/engine/polling.ts):
// - a quiet poll on a workspace with 5,000 open jobs that the Filters exclude and 4 followed jobs
//   under 300 newer ones (reads it sends), then those 4 completed and reported once their check
//   is due;
// - the execution of a poll that reports 300 completed jobs of an hour each with all five formats
//   attached, against the sandbox in a process of its own: this process's RSS growth while the
//   captions are downloaded into n8n's binary store (filesystem mode).
import { CaptioningPollingTrigger } from '../../nodes/CaptioningPollingTrigger/CaptioningPollingTrigger.node.js';
import { pollTrigger } from '../../test/engine/polling';
import { createSandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, peakRssGrowth, round, sandboxProcess } from '../support';

const OPEN = 5000;
const FOLLOWED = 4;
const NEWER = 300;
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

async function quietReads(): Promise<number> {
	const sb = await createSandbox({ timing: null });
	const order = async (team: string) =>
		(
			(await (
				await fetch(`${sb.baseUrl}/jobs`, {
					method: 'POST',
					headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
					body: JSON.stringify({
						media_url: 'https://media.example.com/a.mp4',
						metadata: { team },
					}),
				})
			).json()) as { id: string }
		).id;
	const realNow = Date.now;
	try {
		sb.seedHistory(OPEN, { status: 'queued', metadata: { team: 'marketing' } });
		const t = await trigger(sb.keys.full, sb.baseUrl, {
			filters: { metadataKey: 'team', metadataValue: 'video' },
		});
		await t.activate();
		const followed = [];
		for (let n = 0; n < FOLLOWED; n++) followed.push(await order('video'));
		for (let n = 0; n < NEWER; n++) sb.completeJob(await order('marketing'));
		await t.poll();
		sb.resetLedger();
		await t.poll();
		const reads = sb.ledger.requests.length;
		// The followed jobs complete; the poll once their check is due (past the longest wait) reports each.
		for (const id of followed) sb.completeJob(id);
		Date.now = () => realNow() + 16 * 60000;
		const reported = ((await t.poll()) ?? []).map((item) => item.json.id);
		if (followed.some((id) => !reported.includes(id)) || reported.length !== FOLLOWED)
			throw new Error(`the poll reported ${reported.length} jobs, not the ${FOLLOWED} followed`);
		return reads;
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
	title: `16. the polling trigger: a quiet poll with ${OPEN} open jobs the Filters exclude and ${FOLLOWED} followed jobs under ${NEWER} newer; an execution attaching five formats to ${REPORTED} jobs`,
	async run() {
		const reads = await quietReads();
		log(
			`  quiet poll: ${reads} reads with ${OPEN} open jobs the Filters exclude and ${FOLLOWED} followed jobs under ${NEWER} newer (reported once they completed)`,
		);
		const growth = await downloadGrowth();
		log(`  ${REPORTED} jobs × ${FORMATS.length} formats attached: RSS growth ${growth} MiB`);
		return {
			figures: { pollQuietReadsBusyWorkspace: reads, pollAttachRssGrowthMiB: growth },
			rows: [
				[
					'polling trigger: reads of a quiet poll',
					`${reads}`,
					`${OPEN} open jobs the Filters exclude, ${FOLLOWED} followed under ${NEWER} newer`,
					'',
					'≤ 2',
					reads <= 2,
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
