// 6. Four uploads of 512 MiB under way at once in one run of Upload → Create (Concurrency 4): peak
// RSS growth.
import type { INodeExecutionData } from 'n8n-workflow';

import { storeBinary } from '../../test/engine/workflow';
import { runCaptioning } from '../../test/helpers/captioning';
import { generatedMedia } from '../../test/helpers/media';
import type { Sandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, peakRssGrowth, round, run, sandboxProcess } from '../support';

const CONCURRENT_UPLOADS = 4;
const CONCURRENT_UPLOAD_BYTES = Number(
	process.env.BENCH_CONCURRENT_UPLOAD_BYTES ?? 512 * 1024 ** 2,
);

async function measure() {
	const sandbox = await sandboxProcess();
	try {
		log(
			`generating ${CONCURRENT_UPLOAD_BYTES / 1024 ** 2} MiB × ${CONCURRENT_UPLOADS} in n8n's filesystem binary store…`,
		);
		const input: INodeExecutionData[] = [];
		for (let n = 0; n < CONCURRENT_UPLOADS; n++) {
			input.push({
				json: {},
				binary: await storeBinary(generatedMedia(CONCURRENT_UPLOAD_BYTES).stream, {
					fileName: `bench-${n}.mp4`,
					mimeType: 'video/mp4',
				}),
			});
		}
		await run('sync');
		const fakeSandbox = { baseUrl: sandbox.baseUrl, keys: sandbox.keys } as unknown as Sandbox;
		await new Promise((r) => setTimeout(r, 200));
		const started = process.hrtime.bigint();
		const { rssGrowthMiB } = await peakRssGrowth(async () => {
			const result = await runCaptioning(
				fakeSandbox,
				{
					resource: 'upload',
					operation: 'create',
					binaryPropertyName: 'data',
					concurrency: CONCURRENT_UPLOADS,
				},
				{ input },
			);
			if (result.failure) throw new Error(`concurrent uploads failed: ${result.failure.message}`);
			if (result.items.some((i) => i.json.size_bytes !== CONCURRENT_UPLOAD_BYTES))
				throw new Error('an upload is missing from the output');
		});
		return { rssGrowthMiB, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
	} finally {
		sandbox.stop();
	}
}

export const concurrentUploads: Section = {
	name: 'concurrentUploads',
	title: `6. concurrent uploads: ${CONCURRENT_UPLOADS} × ${CONCURRENT_UPLOAD_BYTES / 1024 ** 2} MiB`,
	async run() {
		const c = await measure();
		log(`  ${c.seconds.toFixed(1)} s, peak RSS growth ${c.rssGrowthMiB.toFixed(1)} MiB`);
		const figures = { uploadConcurrentRssGrowthMiB: round(c.rssGrowthMiB, 1) };
		return {
			figures,
			rows: [
				[
					`${CONCURRENT_UPLOADS} uploads at once, RSS growth`,
					`${figures.uploadConcurrentRssGrowthMiB} MiB`,
					`${CONCURRENT_UPLOADS} × ${CONCURRENT_UPLOAD_BYTES / 1024 ** 2} MiB`,
					'',
					'≤ 128 MiB',
					figures.uploadConcurrentRssGrowthMiB <= 128,
				],
			],
		};
	},
};
