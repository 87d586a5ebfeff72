// 5. 50 items with Wait for Completion: Poll (1 s), every job taking the same time, against one such
// item alone; reads per polling round.
import { runCaptioning } from '../../test/helpers/captioning';
import { createSandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, round } from '../support';

const WAIT_ITEMS = 50;
const WAIT_JOB_SECONDS = Number(process.env.BENCH_WAIT_JOB_SECONDS ?? 10);

/** Reads of the job list and of single jobs, grouped into polling rounds (rounds are 1 s apart). */
function pollingRounds(requests: Array<{ route?: string; at: number }>): {
	reads: number;
	rounds: number;
} {
	const reads = requests
		.filter((r) => r.route === 'GET /jobs' || r.route === 'GET /jobs/{id}')
		.map((r) => r.at);
	let rounds = 0;
	let last = -Infinity;
	for (const at of reads) {
		if (at - last > 300) rounds += 1;
		last = at;
	}
	return { reads: reads.length, rounds };
}

async function measure() {
	const sb = await createSandbox({
		timing: { queuedMs: 500, processingMs: WAIT_JOB_SECONDS * 1000 - 500 },
	});
	try {
		const params = {
			resource: 'job',
			operation: 'create',
			source: 'url',
			mediaUrl: '={{ $json.url }}',
			waitForCompletion: 'poll',
			pollInterval: 1,
			timeout: 10,
		};
		const timed = async (items: number) => {
			sb.resetLedger();
			const input = Array.from({ length: items }, (_, i) => ({
				json: { url: `https://media.example.com/wait/${items}/${i}.mp4` },
			}));
			const started = process.hrtime.bigint();
			const result = await runCaptioning(sb, params, { input });
			const seconds = Number(process.hrtime.bigint() - started) / 1e9;
			if (result.failure) throw new Error(`wait failed: ${result.failure.message}`);
			if (result.items.some((i) => i.json.status !== 'completed'))
				throw new Error('a job did not complete');
			return { seconds, ...pollingRounds(sb.ledger.requests) };
		};
		const single = await timed(1);
		const batch = await timed(WAIT_ITEMS);
		return { single, batch };
	} finally {
		await sb.close();
	}
}

export const wait: Section = {
	name: 'wait',
	title: `5. waiting together: ${WAIT_ITEMS} items, jobs of ${WAIT_JOB_SECONDS} s, Poll every 1 s`,
	async run() {
		const w = await measure();
		log(
			`  one item alone: ${w.single.seconds.toFixed(2)} s; ${WAIT_ITEMS} items: ${w.batch.seconds.toFixed(2)} s, ${w.batch.reads} reads in ${w.batch.rounds} rounds`,
		);
		const figures = {
			waitBatchVsSingle: round(w.batch.seconds / w.single.seconds),
			waitReadsPerRound: round(w.batch.reads / w.batch.rounds),
		};
		return {
			figures,
			rows: [
				[
					`wait: ${WAIT_ITEMS} items vs one`,
					`${w.batch.seconds.toFixed(2)} s`,
					`one ${w.single.seconds.toFixed(2)} s`,
					`${figures.waitBatchVsSingle}×`,
					'≤ 1.5×',
					figures.waitBatchVsSingle <= 1.5,
				],
				[
					'wait: reads per round',
					`${w.batch.reads} reads`,
					`${w.batch.rounds} rounds, ${WAIT_ITEMS} jobs`,
					`${figures.waitReadsPerRound}`,
					'≤ 3',
					figures.waitReadsPerRound <= 3,
				],
			],
		};
	},
};
