// 7. Paying once with a Binary File: Job → Create of the 2 GiB file (SHA-256 read, upload, order) and
// its repeat in the same workflow (SHA-256 read, upload found, order replayed), each against Upload →
// Create of the same file; peak RSS growth while hashing.
import { storeBinary } from '../../test/engine/workflow';
import { runCaptioning } from '../../test/helpers/captioning';
import { generatedMedia } from '../../test/helpers/media';
import type { Sandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, median, peakRssGrowth, round, run, sandboxProcess } from '../support';
import { UPLOAD_BYTES } from './upload';

async function measure() {
	const sandbox = await sandboxProcess();
	try {
		const binary = await storeBinary(generatedMedia(UPLOAD_BYTES).stream, {
			fileName: 'repeat.mp4',
			mimeType: 'video/mp4',
		});
		await run('sync');
		const fakeSandbox = { baseUrl: sandbox.baseUrl, keys: sandbox.keys } as unknown as Sandbox;
		const timed = async (params: object, workflowId?: string) => {
			const started = process.hrtime.bigint();
			const result = await runCaptioning(fakeSandbox, params as never, {
				input: [{ json: {}, binary }],
				workflowId,
			});
			if (result.failure)
				throw new Error(`${JSON.stringify(params)} failed: ${result.failure.message}`);
			return {
				seconds: Number(process.hrtime.bigint() - started) / 1e9,
				item: result.items[0].json,
			};
		};
		const order = {
			resource: 'job',
			operation: 'create',
			source: 'binary',
			binaryPropertyName: 'data',
		};
		const upload: number[] = [];
		const first: number[] = [];
		const repeat: number[] = [];
		const { rssGrowthMiB } = await peakRssGrowth(async () => {
			for (let n = 1; n <= 2; n++) {
				upload.push(
					(await timed({ resource: 'upload', operation: 'create', binaryPropertyName: 'data' }))
						.seconds,
				);
				const workflowId = `bench-repeat-${n}`;
				const a = await timed(order, workflowId);
				const b = await timed(order, workflowId);
				if (
					a.item.idempotent_replayed !== false ||
					b.item.idempotent_replayed !== true ||
					a.item.id !== b.item.id
				)
					throw new Error('the repeat was not replayed');
				first.push(a.seconds);
				repeat.push(b.seconds);
				log(
					`  round ${n}: upload ${upload.at(-1)!.toFixed(1)} s, order ${a.seconds.toFixed(1)} s, repeat ${b.seconds.toFixed(1)} s`,
				);
			}
		});
		return { upload: median(upload), first: median(first), repeat: median(repeat), rssGrowthMiB };
	} finally {
		sandbox.stop();
	}
}

export const binaryRepeat: Section = {
	name: 'binaryRepeat',
	title: `7. paying once with a Binary File of ${UPLOAD_BYTES / 1024 ** 2} MiB: order and repeat vs upload`,
	async run() {
		const r = await measure();
		const figures = {
			binaryOrderVsUpload: round(r.first / r.upload),
			binaryRepeatVsUpload: round(r.repeat / r.upload),
			binaryRepeatRssGrowthMiB: round(r.rssGrowthMiB, 1),
		};
		return {
			figures,
			rows: [
				[
					'binary order (hash + upload) vs upload',
					`${r.first.toFixed(1)} s`,
					`upload ${r.upload.toFixed(1)} s`,
					`${figures.binaryOrderVsUpload}×`,
					'≤ 1.5×',
					figures.binaryOrderVsUpload <= 1.5,
				],
				[
					'binary repeat (hash, replay) vs upload',
					`${r.repeat.toFixed(1)} s`,
					`upload ${r.upload.toFixed(1)} s`,
					`${figures.binaryRepeatVsUpload}×`,
					'≤ 1×',
					figures.binaryRepeatVsUpload <= 1,
				],
				[
					'order and repeat, RSS growth',
					`${figures.binaryRepeatRssGrowthMiB} MiB`,
					`file ${UPLOAD_BYTES / 1024 ** 2} MiB`,
					'',
					'≤ 64 MiB',
					figures.binaryRepeatRssGrowthMiB <= 64,
				],
			],
		};
	},
};
