// 3. 500 items into Job → Create at a write limit of 50/s, against the floor 500/50; jobs and charges
// counted by the sandbox, also with 10% injected 503s, connection resets and lost responses.
import { runCaptioning } from '../../test/helpers/captioning';
import { createSandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, round } from '../support';

const BATCH_ITEMS = 500;
const WRITE_LIMIT = 50;

async function measure(faults: boolean) {
	const sb = await createSandbox({ timing: null, rateLimits: { writePerSecond: WRITE_LIMIT } });
	try {
		if (faults) {
			sb.setRandomFaults({
				rate: 0.1,
				match: 'POST /jobs',
				kinds: [
					{ kind: 'status', status: 503, retryAfter: 5 },
					{ kind: 'reset' },
					// A reset after the job was created: the response is lost, the retry must replay it.
					{ kind: 'lose-response' },
				],
			});
		}
		const input = Array.from({ length: BATCH_ITEMS }, (_, i) => ({
			json: { url: `https://media.example.com/batch/${i}.mp4` },
		}));
		const started = process.hrtime.bigint();
		const result = await runCaptioning(
			sb,
			{ resource: 'job', operation: 'create', source: 'url', mediaUrl: '={{ $json.url }}' },
			{ input },
		);
		const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
		if (result.failure) throw new Error(`batch failed: ${result.failure.message}`);
		const faultsSeen = sb.ledger.requests.filter((r) => r.fault !== undefined).length;
		return {
			wallSeconds,
			floorSeconds: BATCH_ITEMS / WRITE_LIMIT,
			jobs: sb.ledger.jobs.length,
			charges: sb.ledger.charges.length,
			faultsSeen,
		};
	} finally {
		await sb.close();
	}
}

export const batch: Section = {
	name: 'batch',
	title: '3. batch ordering',
	async run() {
		const clean = await measure(false);
		log(`  clean: ${clean.wallSeconds.toFixed(2)} s for ${BATCH_ITEMS} items`);
		const faulty = await measure(true);
		log(`  with faults (${faulty.faultsSeen} injected): ${faulty.wallSeconds.toFixed(2)} s`);
		const figures = {
			batchVsFloor: round(clean.wallSeconds / clean.floorSeconds),
			batchJobs: clean.jobs,
			batchCharges: clean.charges,
			batchFaultJobs: faulty.jobs,
			batchFaultCharges: faulty.charges,
			batchFaultVsFloor: round(faulty.wallSeconds / faulty.floorSeconds),
		};
		return {
			figures,
			rows: [
				[
					`batch ${BATCH_ITEMS} at ${WRITE_LIMIT}/s`,
					`${clean.wallSeconds.toFixed(2)} s`,
					`floor ${clean.floorSeconds} s`,
					`${figures.batchVsFloor}×`,
					'≤ 1.2×',
					figures.batchVsFloor <= 1.2,
				],
				[
					'batch jobs / charges',
					`${clean.jobs} / ${clean.charges}`,
					`${BATCH_ITEMS} items`,
					'',
					'exactly 500',
					clean.jobs === BATCH_ITEMS && clean.charges === BATCH_ITEMS,
				],
				[
					'with 10% 503s and resets',
					`${faulty.jobs} / ${faulty.charges}`,
					`${faulty.faultsSeen} faults, ${faulty.wallSeconds.toFixed(1)} s`,
					'',
					'exactly 500',
					faulty.jobs === BATCH_ITEMS && faulty.charges === BATCH_ITEMS,
				],
				[
					'batch with faults vs floor',
					`${faulty.wallSeconds.toFixed(2)} s`,
					`floor ${faulty.floorSeconds} s`,
					`${figures.batchFaultVsFloor}×`,
					'≤ 1.5×',
					figures.batchFaultVsFloor <= 1.5,
				],
			],
		};
	},
};
