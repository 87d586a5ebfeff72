// 17. Forged deliveries at a Captioning Trigger without the Webhook Secret Token, 50 a second for 60 s
// (each with a made-up job id), beside a 100-item Job → Get batch on the same key at 10 reads/s: the
// batch's time against its time alone, and the reads the flood cost (none: refused at once, 401).
import { Agent, request } from 'undici';

import { CaptioningTrigger } from '../../nodes/CaptioningTrigger/CaptioningTrigger.node.js';
import { serveTrigger } from '../../test/engine/servedTrigger';
import { forgedEvent, orderDirectly, runCaptioning } from '../../test/helpers/captioning';
import { tlsPair } from '../../test/helpers/https';
import type { Sandbox } from '../../test/helpers/sandbox';
import { createSandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, round } from '../support';

const BATCH = 100;
const READS_PER_SECOND = 10;
const FLOOD_PER_SECOND = 50;
const FLOOD_SECONDS = Number(process.env.BENCH_FLOOD_SECONDS ?? 60);
/** The batch starts this long into the flood. */
const BATCH_AFTER_MS = 5000;

const reads = (sb: Sandbox) =>
	sb.ledger.requests.filter((r) => r.route === 'GET /jobs' || r.route === 'GET /jobs/{id}').length;

async function timedBatch(sb: Sandbox, ids: string[]): Promise<number> {
	const started = process.hrtime.bigint();
	const run = await runCaptioning(
		sb,
		{ resource: 'job', operation: 'get', jobId: '={{ $json.id }}' },
		{ input: ids.map((id) => ({ json: { id } })), workflowId: 'bench-forged-flood' },
	);
	const seconds = Number(process.hrtime.bigint() - started) / 1e9;
	if (run.failure) throw new Error(`batch failed: ${run.failure.message}`);
	return seconds;
}

async function measure() {
	const sb = await createSandbox({ timing: null, rateLimits: { readPerSecond: READS_PER_SECOND } });
	const trigger = await serveTrigger({
		nodeType: new CaptioningTrigger(),
		typeName: 'captioningTrigger',
		parameters: { events: ['job.completed', 'job.cancelled'], verify: true, attachCaptions: false },
		credentials: { captioningApi: { apiKey: sb.keys.full, baseUrl: sb.baseUrl, webhookToken: '' } },
	});
	const agent = new Agent({ connect: { ca: tlsPair().cert } });
	try {
		const ids: string[] = [];
		for (let i = 0; i < BATCH; i++)
			ids.push(await orderDirectly(sb, { media_url: `https://media.example.com/flood/${i}.mp4` }));
		const alone = await timedBatch(sb, ids);

		sb.resetLedger();
		const answers = new Map<number, number>();
		let sent = 0;
		const posts: Array<Promise<void>> = [];
		const flood = setInterval(() => {
			posts.push(
				request(trigger.url, {
					method: 'POST',
					dispatcher: agent,
					headers: { 'content-type': 'application/json' },
					body: JSON.stringify(forgedEvent(sent++)),
				}).then(async (res) => {
					await res.body.dump();
					answers.set(res.statusCode, (answers.get(res.statusCode) ?? 0) + 1);
				}),
			);
		}, 1000 / FLOOD_PER_SECOND);
		const floodEnds = Date.now() + FLOOD_SECONDS * 1000;
		await new Promise((resolve) => setTimeout(resolve, BATCH_AFTER_MS));
		const readsBefore = reads(sb);
		const beside = await timedBatch(sb, ids);
		const batchReads = reads(sb) - readsBefore;
		await new Promise((resolve) => setTimeout(resolve, Math.max(0, floodEnds - Date.now())));
		clearInterval(flood);
		await Promise.all(posts);
		await trigger.idle();
		return {
			alone,
			beside,
			sent,
			answers: Object.fromEntries(answers),
			floodReads: reads(sb) - batchReads,
			executions: trigger.executions.length,
		};
	} finally {
		await trigger.close();
		await agent.close();
		await sb.close();
	}
}

export const forgedFlood: Section = {
	name: 'forgedFlood',
	title: `17. forged deliveries without the token, ${FLOOD_PER_SECOND}/s for ${FLOOD_SECONDS} s, beside a ${BATCH}-item Job → Get batch on the same key at ${READS_PER_SECOND} reads/s`,
	async run() {
		const r = await measure();
		log(
			`  batch alone ${r.alone.toFixed(2)} s, beside the flood ${r.beside.toFixed(2)} s; ${r.sent} forged deliveries answered ${JSON.stringify(r.answers)}, ${r.floodReads} reads, ${r.executions} executions`,
		);
		const figures = {
			forgedFloodBatchVsAlone: round(r.beside / r.alone),
			forgedFloodReads: r.floodReads,
		};
		return {
			figures,
			rows: [
				[
					`${BATCH}-item batch beside ${FLOOD_PER_SECOND}/s forged deliveries`,
					`${r.beside.toFixed(2)} s`,
					`alone ${r.alone.toFixed(2)} s`,
					`${figures.forgedFloodBatchVsAlone}×`,
					'≤ 1.2×',
					figures.forgedFloodBatchVsAlone <= 1.2,
				],
				[
					'reads the forged deliveries cost',
					`${r.floodReads}`,
					`${r.sent} deliveries, ${r.executions} executions`,
					'',
					'0 (refused at once)',
					r.floodReads === 0 && r.executions === 0,
				],
			],
		};
	},
};
