// 10. Job → Create from an S3 Object of 2 GiB (a real signature-checking S3 server, test/helpers/s3Bucket.ts,
// the object sparse on disk): bytes of it that crossed n8n (the S3 server counts what it sent to each
// request; n8n's are those signed in the header, the service's carry the signature in the query),
// and the time to order it against ordering a plain Media URL, a 1 KiB S3 Object, and a signed HEAD
// sent from here, alternating, fifteen rounds; the S3 server runs in a process of its own
// (bench/s3server.ts). Once on loopback, once with the service 50 ms away and the store 10 ms away.
import { spawn } from 'node:child_process';
import path from 'node:path';

import { signedHeaders } from '../../nodes/Captioning/s3/signing';
import { runCaptioning } from '../../test/helpers/captioning';
import type { Sandbox } from '../../test/helpers/sandbox';
import type { Section } from '../support';
import { log, median, root, round, sandboxProcess } from '../support';

const S3_OBJECT_BYTES = Number(process.env.BENCH_S3_OBJECT_BYTES ?? 2 * 1024 ** 3);
/** Rounds of the alternation: each order kind and the HEAD once a round. */
const ROUNDS = 15;
const S3_LOOPBACK = { serviceMs: 0, storeMs: 0 };
/** A captioning service across the internet, a bucket in n8n's own region. */
const S3_AT_DISTANCE = { serviceMs: 50, storeMs: 10 };

/** The S3 server (bench/s3server.ts) in its own process; its requests as it reports them. */
async function s3Process(objects: Record<string, number>, latencyMs = 0) {
	const child = spawn(
		process.execPath,
		[
			'--import',
			'tsx',
			path.join(root, 'bench/s3server.ts'),
			'--latency-ms',
			String(latencyMs),
			...Object.entries(objects).map(([k, v]) => `${k}=${v}`),
		],
		{ stdio: ['ignore', 'pipe', 'inherit'] },
	);
	const requests: Array<{ method: string; url: string; status: number; bytes: number }> = [];
	let buffered = '';
	const ready = new Promise<{ endpoint: string; bucket: string }>((resolve, reject) => {
		child.stdout.on('data', (chunk) => {
			buffered += String(chunk);
			const lines = buffered.split('\n');
			buffered = lines.pop()!;
			for (const line of lines) {
				if (line.startsWith('READY ')) {
					const [, endpoint, bucket] = line.split(' ');
					resolve({ endpoint, bucket });
				} else if (line.startsWith('REQ ')) requests.push(JSON.parse(line.slice(4)));
			}
		});
		child.once('exit', (code) => reject(new Error(`the S3 server exited (${code})`)));
	});
	return {
		...(await ready),
		accessKeyId: 'S3RVER',
		secretAccessKey: 'S3RVER',
		requests,
		stop: () => child.kill(),
	};
}

/** Section 10; `latency`: how far away the service and the store are (ms per request; 0: loopback). */
async function measure(latency = { serviceMs: 0, storeMs: 0 }) {
	const sandbox = await sandboxProcess(latency.serviceMs);
	const s3 = await s3Process(
		{
			'bench/lecture.mp4': S3_OBJECT_BYTES,
			'bench/short.mp4': 1024,
			'bench/head.mp4': S3_OBJECT_BYTES,
		},
		latency.storeMs,
	);
	try {
		const fakeSandbox = { baseUrl: sandbox.baseUrl, keys: sandbox.keys } as unknown as Sandbox;
		const s3Credential = {
			accessKeyId: s3.accessKeyId,
			secretAccessKey: s3.secretAccessKey,
			region: 'us-east-1',
			endpoint: s3.endpoint,
			forcePathStyle: true,
		};
		// Workflow ids of this measure's own: n8n's store of what a workflow sent outlives the sandbox.
		const timed = async (params: object, workflow: string) => {
			const workflowId = `${workflow}-${latency.serviceMs}ms`;
			const started = process.hrtime.bigint();
			const result = await runCaptioning(
				fakeSandbox,
				{ resource: 'job', operation: 'create', ...params } as never,
				{ input: [{ json: {} }], workflowId, s3: s3Credential },
			);
			if (result.failure)
				throw new Error(`${JSON.stringify(params)} failed: ${result.failure.message}`);
			if (result.items[0].json.idempotent_replayed !== false)
				throw new Error('a new workflow replayed an order');
			return Number(process.hrtime.bigint() - started) / 1e6;
		};
		const kinds = {
			url: (n: number) => ({ source: 'url', mediaUrl: `https://media.example.com/bench-${n}.mp4` }),
			large: () => ({ source: 's3', s3Bucket: s3.bucket, s3Key: 'bench/lecture.mp4' }),
			small: () => ({ source: 's3', s3Bucket: s3.bucket, s3Key: 'bench/short.mp4' }),
		};
		// A signed HEAD of a 2 GiB object of its own, sent straight from here (not through n8n).
		const head = async () => {
			const url = `${s3.endpoint}/${s3.bucket}/bench/head.mp4`;
			const started = process.hrtime.bigint();
			await (
				await fetch(url, {
					method: 'HEAD',
					headers: signedHeaders(s3Credential, 'HEAD', url, new Date()),
				})
			).arrayBuffer();
			return Number(process.hrtime.bigint() - started) / 1e6;
		};
		const times: Record<keyof typeof kinds | 'head', number[]> = {
			url: [],
			large: [],
			small: [],
			head: [],
		};
		// A first round, not counted: module loading and connection set-up.
		for (const [kind, params] of Object.entries(kinds))
			await timed(params(0), `bench-warm-${kind}`);
		await head();
		const before = s3.requests.length;
		for (let round = 1; round <= ROUNDS; round++) {
			for (const [kind, params] of Object.entries(kinds) as Array<
				[keyof typeof kinds, (n: number) => object]
			>)
				times[kind].push(await timed(params(round), `bench-${kind}-${round}`));
			times.head.push(await head());
		}
		// The service's fetches (the sandbox takes each job as it is ordered) may still be under way.
		await new Promise((r) => setTimeout(r, 500));
		const requests = s3.requests.slice(before);
		const fromN8n = requests.filter((r) => !r.url.includes('X-Amz-Signature'));
		const large = fromN8n.filter((r) => r.url.includes('lecture.mp4'));
		return {
			n8nBytes: large.reduce((sum, r) => sum + r.bytes, 0) / ROUNDS,
			n8nRequests: large.map((r) => r.method),
			serviceFetches: requests.filter((r) => r.url.includes('X-Amz-Signature') && r.status === 206)
				.length,
			urlMs: median(times.url),
			s3Ms: median(times.large),
			smallMs: median(times.small),
			headMs: median(times.head),
		};
	} finally {
		s3.stop();
		sandbox.stop();
	}
}

export const s3: Section = {
	name: 's3',
	title: `10. ordering an S3 Object of ${S3_OBJECT_BYTES / 1024 ** 2} MiB against a Media URL, alternating, ${ROUNDS} each`,
	async run() {
		const near = await measure(S3_LOOPBACK);
		const far = await measure(S3_AT_DISTANCE);
		log(
			`  the service ${S3_AT_DISTANCE.serviceMs} ms away, the store ${S3_AT_DISTANCE.storeMs} ms: Media URL ${far.urlMs.toFixed(1)} ms, S3 Object ${far.s3Ms.toFixed(1)} ms`,
		);
		log(
			`  Media URL ${near.urlMs.toFixed(1)} ms, S3 Object of ${S3_OBJECT_BYTES / 1024 ** 2} MiB ${near.s3Ms.toFixed(1)} ms, of 1 KiB ${near.smallMs.toFixed(1)} ms (medians of ${ROUNDS}); a signed HEAD alone ${near.headMs.toFixed(1)} ms; n8n → S3 for the large one: ${near.n8nRequests.join(', ')}; the service fetched ${near.serviceFetches} times`,
		);
		const figures = {
			s3BytesThroughN8n: near.n8nBytes,
			s3OrderVsUrlOrder: round(near.s3Ms / near.urlMs),
			s3OrderVsUrlOrderAndHead: round(near.s3Ms / (near.urlMs + near.headMs)),
			s3OrderLargeVsSmall: round(near.s3Ms / near.smallMs),
			s3OrderVsUrlOrderAtDistance: round(far.s3Ms / far.urlMs),
		};
		return {
			figures,
			rows: [
				[
					'S3 Object order: media bytes through n8n',
					`${figures.s3BytesThroughN8n} bytes`,
					`object ${S3_OBJECT_BYTES / 1024 ** 2} MiB; n8n sent ${near.n8nRequests.length / ROUNDS} HEAD per order`,
					'',
					'0 (the HEAD only)',
					figures.s3BytesThroughN8n === 0,
				],
				[
					// On loopback the HEAD alone is most of a Media URL order: the S3 Object order is that
					// order plus its one HEAD at most (its ratio to the Media URL order alone is kept too).
					'S3 Object order vs Media URL order and one HEAD',
					`${near.s3Ms.toFixed(1)} ms (${figures.s3OrderVsUrlOrder}× the Media URL order)`,
					`Media URL ${near.urlMs.toFixed(1)} ms + a HEAD alone ${near.headMs.toFixed(1)} ms`,
					`${figures.s3OrderVsUrlOrderAndHead}×`,
					'≤ 1×',
					figures.s3OrderVsUrlOrderAndHead <= 1,
				],
				[
					`the same, the service ${S3_AT_DISTANCE.serviceMs} ms away, the store ${S3_AT_DISTANCE.storeMs} ms`,
					`${far.s3Ms.toFixed(1)} ms`,
					`Media URL ${far.urlMs.toFixed(1)} ms`,
					`${figures.s3OrderVsUrlOrderAtDistance}×`,
					'≤ 1.5×',
					figures.s3OrderVsUrlOrderAtDistance <= 1.5,
				],
				[
					'S3 Object order: 2 GiB vs 1 KiB object',
					`${near.s3Ms.toFixed(1)} ms`,
					`1 KiB ${near.smallMs.toFixed(1)} ms`,
					`${figures.s3OrderLargeVsSmall}×`,
					'≈ 1× (size does not count)',
					figures.s3OrderLargeVsSmall <= 1.2,
				],
			],
		};
	},
};
