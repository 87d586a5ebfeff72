// npm run bench [-- --json]: the figures of issue 5, each measured beside its reference in this run.
//   1. upload memory: peak RSS growth while Upload → Create streams 2 GiB from n8n's binary store
//   2. upload speed: the same upload's throughput against curl -T of the same file, same endpoint
//   3. batch ordering: 500 items into Job → Create at a write limit of R/s, against the floor 500/R;
//      jobs and charges counted by the sandbox, also with 10% injected 503s and connection resets
//   4. load cost: time to require the compiled nodes and credentials on top of n8n-workflow
//   5. waiting together: 50 items with Wait for Completion Poll (1 s), each job taking WAIT_JOB_SECONDS,
//      against one such item alone; reads per polling round
//   6. concurrent uploads: 4 uploads of 512 MiB under way at once (Concurrency 4), peak RSS growth
//   7. paying once with a Binary File: Job → Create of the 2 GiB file (SHA-256 read, upload, order)
//      and its repeat in the same workflow (SHA-256 read, upload found, order replayed), each against
//      Upload → Create of the same file; peak RSS growth while hashing
//   8. On Webhook for a batch of 100: reads the resume webhook sends per event received, and the time
//      from the last event's delivery to the end of the resumed run (the next node's start, at most)
//   9. a burst at the webhook trigger, in real n8n 2.41.1 (installed into the cache if missing, as the
//      e2e suite does): 150 jobs finish within 2 s, each event delivered twice, 10 reads/s; reads per
//      event, and the p95 time until n8n answered a first try, against n8n's own Webhook node given
//      the same burst in the same n8n (test/e2e/burst.ts), bursts alternating, two each
//  10. Job → Create from an S3 Object of 2 GiB (a real signature-checking S3 server, test/helpers/s3.ts,
//      the object sparse on disk): bytes of it that crossed n8n (the S3 server counts what it sent to
//      each request; n8n's are those signed in the header, the service's carry the signature in the
//      query), and the time to order it against ordering a plain Media URL and a 1 KiB S3 Object,
//      alternating, seven each; the S3 server runs in a process of its own (bench/s3server.ts)
import { execFile, spawn } from 'node:child_process';
import type { IExecuteFunctions, INodeType } from 'n8n-workflow';
import { cpus } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { activateBurstWorkflows, fireBurst, importBurstWorkflows } from '../test/e2e/burst';
import { createN8n, installN8n } from '../test/e2e/n8n';
import { binaryDataService, node, storeBinary } from '../test/harness/n8n';
import { runUntilWaiting } from '../test/harness/waiting';
import { Captioning } from '../nodes/Captioning/Captioning.node.js';
import { tlsPair } from '../test/helpers/https';
import { runCaptioning } from '../test/helpers/captioning';
import { generatedMedia } from '../test/helpers/media';
import type { Sandbox } from '../test/helpers/sandbox';
import { createSandbox } from '../test/helpers/sandbox';
import { signedHeaders } from '../nodes/Captioning/transport/s3';

const run = promisify(execFile);
const root = path.resolve(__dirname, '..');
const asJson = process.argv.includes('--json');
const UPLOAD_BYTES = Number(process.env.BENCH_UPLOAD_BYTES ?? 2 * 1024 ** 3);
const BATCH_ITEMS = 500;
const WRITE_LIMIT = 50;
const WAIT_ITEMS = 50;
const WAIT_JOB_SECONDS = Number(process.env.BENCH_WAIT_JOB_SECONDS ?? 10);
const CONCURRENT_UPLOADS = 4;
const CONCURRENT_UPLOAD_BYTES = Number(process.env.BENCH_CONCURRENT_UPLOAD_BYTES ?? 512 * 1024 ** 2);
const log = (line: string) => process.stderr.write(`${line}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The sandbox in its own process, so the bench process's memory is the node's alone. */
async function sandboxProcess(latencyMs = 0): Promise<{ baseUrl: string; keys: { full: string }; stop: () => void }> {
	const child = spawn(process.execPath, [path.join(root, 'sandbox/cli.js'), '--port', '0', '--storage-port', '0', '--latency-ms', String(latencyMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
	let out = '';
	for await (const chunk of child.stdout) {
		out += String(chunk);
		const base = /Base URL:\s+(\S+)/.exec(out);
		const key = /API key \(full\):\s+(\S+)/.exec(out);
		if (base && key) return { baseUrl: base[1], keys: { full: key[1] }, stop: () => child.kill() };
	}
	throw new Error(`sandbox did not start: ${out}`);
}

async function createUpload(baseUrl: string, key: string): Promise<{ id: string; upload_url: string }> {
	const res = await fetch(`${baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
	return (await res.json()) as { id: string; upload_url: string };
}

async function uploadFigures() {
	const sandbox = await sandboxProcess();
	try {
		log(`generating ${UPLOAD_BYTES / 1024 ** 2} MiB in n8n's filesystem binary store…`);
		const binary = await storeBinary(generatedMedia(UPLOAD_BYTES).stream, { fileName: 'bench.mp4', mimeType: 'video/mp4' });
		const file = (await binaryDataService()).getPath(binary!.data.id!);
		// Let the kernel write the new file out before timing anything that reads it.
		await run('sync');
		const fakeSandbox = { baseUrl: sandbox.baseUrl, keys: sandbox.keys } as unknown as Sandbox;

		// Warm the code path (n8n loads its execution modules on first use), then take the baseline.
		const warmUp = await storeBinary(Buffer.alloc(4 * 1024 * 1024, 1), { fileName: 'warm.mp4', mimeType: 'video/mp4' });
		await runCaptioning(fakeSandbox, { resource: 'upload', operation: 'create', binaryPropertyName: 'data' }, { input: [{ json: {}, binary: warmUp }] });
		// No forced gc() here: measured, running with --expose-gc and calling it slowed the uploads
		// that followed to about half of curl's speed, against parity without it.
		await new Promise((r) => setTimeout(r, 200));
		const baseline = process.memoryUsage.rss();
		let peak = baseline;
		// rss() alone: the full memoryUsage() walks the heap and would slow what it measures.
		const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
		const ours: number[] = [];
		const curl: number[] = [];
		try {
			for (let round = 1; round <= 3; round++) {
				const started = process.hrtime.bigint();
				const result = await runCaptioning(fakeSandbox, { resource: 'upload', operation: 'create', binaryPropertyName: 'data' }, { input: [{ json: {}, binary }] });
				const seconds = Number(process.hrtime.bigint() - started) / 1e9;
				if (result.failure) throw new Error(`upload failed: ${result.failure.message}`);
				const check = await fetch(`${sandbox.baseUrl}/jobs`, {
					method: 'POST',
					headers: { authorization: `Bearer ${sandbox.keys.full}`, 'content-type': 'application/json' },
					body: JSON.stringify({ upload_id: result.items[0].json.id }),
				});
				if (check.status !== 201) throw new Error(`the sandbox did not receive the whole file (${check.status})`);
				ours.push(UPLOAD_BYTES / seconds);
				log(`  node upload round ${round}: ${(UPLOAD_BYTES / seconds / 1024 ** 2).toFixed(0)} MiB/s`);

				const target = await createUpload(sandbox.baseUrl, sandbox.keys.full);
				const { stdout } = await run('curl', ['-sS', '-T', file, '-o', '/dev/null', '-w', '%{http_code} %{time_total}', target.upload_url]);
				const [code, total] = stdout.trim().split(' ');
				if (code !== '200') throw new Error(`curl upload answered ${code}`);
				curl.push(UPLOAD_BYTES / Number(total));
				log(`  curl -T round ${round}: ${(UPLOAD_BYTES / Number(total) / 1024 ** 2).toFixed(0)} MiB/s`);
			}
		} finally {
			clearInterval(sampler);
		}
		return {
			rssGrowthMiB: (peak - baseline) / 1024 ** 2,
			oursMiBs: median(ours) / 1024 ** 2,
			curlMiBs: median(curl) / 1024 ** 2,
		};
	} finally {
		sandbox.stop();
	}
}

/** Job → Create from the 2 GiB file, first and repeated, beside Upload → Create of it, round after round. */
async function repeatFigures() {
	const sandbox = await sandboxProcess();
	try {
		const binary = await storeBinary(generatedMedia(UPLOAD_BYTES).stream, { fileName: 'repeat.mp4', mimeType: 'video/mp4' });
		await run('sync');
		const fakeSandbox = { baseUrl: sandbox.baseUrl, keys: sandbox.keys } as unknown as Sandbox;
		const timed = async (params: object, workflowId?: string) => {
			const started = process.hrtime.bigint();
			const result = await runCaptioning(fakeSandbox, params as never, { input: [{ json: {}, binary }], workflowId });
			if (result.failure) throw new Error(`${JSON.stringify(params)} failed: ${result.failure.message}`);
			return { seconds: Number(process.hrtime.bigint() - started) / 1e9, item: result.items[0].json };
		};
		const order = { resource: 'job', operation: 'create', source: 'binary', binaryPropertyName: 'data' };
		const upload: number[] = [];
		const first: number[] = [];
		const repeat: number[] = [];
		const baseline = process.memoryUsage.rss();
		let peak = baseline;
		const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
		try {
			for (let round = 1; round <= 2; round++) {
				upload.push((await timed({ resource: 'upload', operation: 'create', binaryPropertyName: 'data' })).seconds);
				const workflowId = `bench-repeat-${round}`;
				const a = await timed(order, workflowId);
				const b = await timed(order, workflowId);
				if (a.item.idempotent_replayed !== false || b.item.idempotent_replayed !== true || a.item.id !== b.item.id) throw new Error('the repeat was not replayed');
				first.push(a.seconds);
				repeat.push(b.seconds);
				log(`  round ${round}: upload ${upload.at(-1)!.toFixed(1)} s, order ${a.seconds.toFixed(1)} s, repeat ${b.seconds.toFixed(1)} s`);
			}
		} finally {
			clearInterval(sampler);
		}
		return { upload: median(upload), first: median(first), repeat: median(repeat), rssGrowthMiB: (peak - baseline) / 1024 ** 2 };
	} finally {
		sandbox.stop();
	}
}

/** The node after Job → Create: passes its items on. */
const nextNode: INodeType = {
	description: { displayName: 'Next', name: 'noOp', group: ['transform'], version: 1, description: '', defaults: {}, inputs: ['main'], outputs: ['main'], properties: [] } as unknown as INodeType['description'],
	async execute(this: IExecuteFunctions) {
		return [this.getInputData()];
	},
};

/** 100 items waiting On Webhook: the jobs complete one by one, the sandbox delivers each event. */
async function webhookBatchFigures() {
	const items = 100;
	const sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
	try {
		const parameters = { resource: 'job', operation: 'create', source: 'url', mediaUrl: '={{ $json.url }}', waitForCompletion: 'webhook', timeout: 60 };
		const waiting = await runUntilWaiting({
			nodes: [node('Captioning', 'captioning', parameters, { typeVersion: 1.2 }), node('Next', 'noOp', {})],
			connections: { Captioning: { main: [[{ node: 'Next', type: 'main', index: 0 }]] } },
			nodeName: 'Captioning',
			nodeTypes: { captioning: new Captioning(), noOp: nextNode },
			credentials: { captioningApi: { apiKey: sb.keys.full, baseUrl: sb.baseUrl } },
			input: Array.from({ length: items }, (_, i) => ({ json: { url: `https://media.example.com/webhook-batch/${i}.mp4` } })),
			mode: 'webhook',
			workflowId: 'bench-webhook-batch',
		});
		try {
			const ids = sb.ledger.jobs.map((j) => j.id);
			const readsBefore = sb.ledger.requests.filter((r) => r.method === 'GET').length;
			for (const id of ids.slice(0, -1)) {
				sb.completeJob(id);
				await sb.settleDeliveries();
			}
			const started = process.hrtime.bigint();
			sb.completeJob(ids.at(-1)!);
			const done = await waiting.resumed;
			const resumeMs = Number(process.hrtime.bigint() - started) / 1e6;
			if (done.output('Next').length !== items) throw new Error('the resumed run did not hand on every job');
			const reads = sb.ledger.requests.filter((r) => r.method === 'GET').length - readsBefore;
			return { items, events: waiting.answers.length, reads, resumeMs };
		} finally {
			await waiting.close();
		}
	} finally {
		await sb.close();
	}
}

/** Four files of 512 MiB uploaded by one run of Upload → Create, all four under way at once. */
async function concurrentUploadFigures() {
	const sandbox = await sandboxProcess();
	try {
		log(`generating ${CONCURRENT_UPLOAD_BYTES / 1024 ** 2} MiB × ${CONCURRENT_UPLOADS} in n8n's filesystem binary store…`);
		const input = [];
		for (let n = 0; n < CONCURRENT_UPLOADS; n++) {
			input.push({ json: {}, binary: await storeBinary(generatedMedia(CONCURRENT_UPLOAD_BYTES).stream, { fileName: `bench-${n}.mp4`, mimeType: 'video/mp4' }) });
		}
		await run('sync');
		const fakeSandbox = { baseUrl: sandbox.baseUrl, keys: sandbox.keys } as unknown as Sandbox;
		await new Promise((r) => setTimeout(r, 200));
		const baseline = process.memoryUsage.rss();
		let peak = baseline;
		const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
		const started = process.hrtime.bigint();
		try {
			const result = await runCaptioning(fakeSandbox, { resource: 'upload', operation: 'create', binaryPropertyName: 'data', batching: { concurrency: CONCURRENT_UPLOADS } }, { input });
			if (result.failure) throw new Error(`concurrent uploads failed: ${result.failure.message}`);
			if (result.items.some((i) => i.json.size_bytes !== CONCURRENT_UPLOAD_BYTES)) throw new Error('an upload is missing from the output');
		} finally {
			clearInterval(sampler);
		}
		const seconds = Number(process.hrtime.bigint() - started) / 1e9;
		return { rssGrowthMiB: (peak - baseline) / 1024 ** 2, seconds };
	} finally {
		sandbox.stop();
	}
}

/** Reads of the job list and of single jobs, grouped into polling rounds (rounds are 1 s apart). */
function pollingRounds(requests: Array<{ route?: string; at: number }>): { reads: number; rounds: number } {
	const reads = requests.filter((r) => r.route === 'GET /jobs' || r.route === 'GET /jobs/{id}').map((r) => r.at);
	let rounds = 0;
	let last = -Infinity;
	for (const at of reads) {
		if (at - last > 300) rounds += 1;
		last = at;
	}
	return { reads: reads.length, rounds };
}

/** 50 items waited for together against one item alone, every job taking the same time. */
async function waitFigures() {
	const sb = await createSandbox({ timing: { queuedMs: 500, processingMs: WAIT_JOB_SECONDS * 1000 - 500 } });
	try {
		const params = { resource: 'job', operation: 'create', source: 'url', mediaUrl: '={{ $json.url }}', waitForCompletion: 'poll', pollInterval: 1, timeout: 10 };
		const timed = async (items: number) => {
			sb.resetLedger();
			const input = Array.from({ length: items }, (_, i) => ({ json: { url: `https://media.example.com/wait/${items}/${i}.mp4` } }));
			const started = process.hrtime.bigint();
			const result = await runCaptioning(sb, params, { input });
			const seconds = Number(process.hrtime.bigint() - started) / 1e9;
			if (result.failure) throw new Error(`wait failed: ${result.failure.message}`);
			if (result.items.some((i) => i.json.status !== 'completed')) throw new Error('a job did not complete');
			return { seconds, ...pollingRounds(sb.ledger.requests) };
		};
		const single = await timed(1);
		const batch = await timed(WAIT_ITEMS);
		return { single, batch };
	} finally {
		await sb.close();
	}
}

async function batchFigures(faults: boolean) {
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
		const input = Array.from({ length: BATCH_ITEMS }, (_, i) => ({ json: { url: `https://media.example.com/batch/${i}.mp4` } }));
		const started = process.hrtime.bigint();
		const result = await runCaptioning(sb, { resource: 'job', operation: 'create', source: 'url', mediaUrl: '={{ $json.url }}' }, { input });
		const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
		if (result.failure) throw new Error(`batch failed: ${result.failure.message}`);
		const faultsSeen = sb.ledger.requests.filter((r) => r.fault !== undefined).length;
		return { wallSeconds, floorSeconds: BATCH_ITEMS / WRITE_LIMIT, jobs: sb.ledger.jobs.length, charges: sb.ledger.charges.length, outputs: result.items.length, faultsSeen };
	} finally {
		await sb.close();
	}
}

async function loadFigures() {
	const pkg = require(path.join(root, 'package.json')) as { n8n: { nodes: string[]; credentials: string[] } };
	const files = [...pkg.n8n.credentials, ...pkg.n8n.nodes].map((f) => path.join(root, f));
	// What n8n does at start for a community package: require each file and construct its class.
	const script = `
		const { performance } = require('node:perf_hooks');
		const t0 = performance.now();
		require('n8n-workflow');
		const t1 = performance.now();
		for (const f of ${JSON.stringify(files)}) { const m = require(f); for (const C of Object.values(m)) new C(); }
		const t2 = performance.now();
		process.stdout.write(JSON.stringify({ workflow: t1 - t0, ours: t2 - t1 }));`;
	const workflow: number[] = [];
	const ours: number[] = [];
	for (let i = 0; i < 15; i++) {
		const { stdout } = await run(process.execPath, ['-e', script], { cwd: root });
		const r = JSON.parse(stdout) as { workflow: number; ours: number };
		workflow.push(r.workflow);
		ours.push(r.ours);
	}
	return { workflowMs: median(workflow), loadMs: median(ours) };
}

const BURST_EVENTS = 150;

async function triggerBurstFigures() {
	const sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
	const n8n = await createN8n(await installN8n('2.41.1', log));
	try {
		await importBurstWorkflows(n8n, sb);
		await n8n.start();
		await activateBurstWorkflows(n8n);
		const firstTries = { trigger: [] as number[], webhookNode: [] as number[] };
		let reads = 0;
		let events = 0;
		for (const target of ['webhookNode', 'trigger', 'webhookNode', 'trigger'] as const) {
			const burst = await fireBurst(n8n, sb, target, BURST_EVENTS);
			firstTries[target].push(...burst.deliveries.filter((d) => d.attempt === 1).map((d) => d.ms ?? Infinity));
			if (target === 'trigger') {
				reads += burst.reads;
				events += burst.events;
				if (burst.executions !== burst.events) log(`  WARNING: the trigger started ${burst.executions} executions for ${burst.events} jobs (n8n too slow for the sender's three tries? run the bench on an idle machine)`);
			}
			log(`  ${target}: ${burst.reads} reads, p95 answer ${burst.p95Ms} ms, ${burst.deliveries.filter((d) => d.attempt > 1).length} deliveries tried again`);
		}
		const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(0.95 * xs.length) - 1];
		return { reads, events, triggerP95Ms: p95(firstTries.trigger), webhookNodeP95Ms: p95(firstTries.webhookNode) };
	} finally {
		await n8n.stop();
		await sb.close();
	}
}

const S3_OBJECT_BYTES = Number(process.env.BENCH_S3_OBJECT_BYTES ?? 2 * 1024 ** 3);
const S3_LOOPBACK = { serviceMs: 0, storeMs: 0 };
/** A captioning service across the internet, a bucket in n8n's own region. */
const S3_AT_DISTANCE = { serviceMs: 50, storeMs: 10 };

/** The S3 server (bench/s3server.ts) in its own process; its requests as it reports them. */
async function s3Process(objects: Record<string, number>, latencyMs = 0) {
	const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench/s3server.ts'), '--latency-ms', String(latencyMs), ...Object.entries(objects).map(([k, v]) => `${k}=${v}`)], { stdio: ['ignore', 'pipe', 'inherit'] });
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
	return { ...(await ready), accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', requests, stop: () => child.kill() };
}

/** Section 10; `latency`: how far away the service and the store are (ms per request; 0: loopback). */
async function s3Figures(latency = { serviceMs: 0, storeMs: 0 }) {
	const sandbox = await sandboxProcess(latency.serviceMs);
	const s3 = await s3Process({ 'bench/lecture.mp4': S3_OBJECT_BYTES, 'bench/short.mp4': 1024 }, latency.storeMs);
	try {
		const fakeSandbox = { baseUrl: sandbox.baseUrl, keys: sandbox.keys } as unknown as Sandbox;
		const s3Credential = { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true };
		const timed = async (params: object, workflowId: string) => {
			const started = process.hrtime.bigint();
			const result = await runCaptioning(fakeSandbox, { resource: 'job', operation: 'create', ...params } as never, { input: [{ json: {} }], workflowId, s3: s3Credential });
			if (result.failure) throw new Error(`${JSON.stringify(params)} failed: ${result.failure.message}`);
			if (result.items[0].json.idempotent_replayed !== false) throw new Error('a new workflow replayed an order');
			return Number(process.hrtime.bigint() - started) / 1e6;
		};
		const kinds = {
			url: (n: number) => ({ source: 'url', mediaUrl: `https://media.example.com/bench-${n}.mp4` }),
			large: () => ({ source: 's3', s3Bucket: s3.bucket, s3Key: 'bench/lecture.mp4' }),
			small: () => ({ source: 's3', s3Bucket: s3.bucket, s3Key: 'bench/short.mp4' }),
		};
		const times: Record<keyof typeof kinds, number[]> = { url: [], large: [], small: [] };
		// A first round, not counted: module loading and connection set-up.
		for (const [kind, params] of Object.entries(kinds)) await timed(params(0), `bench-warm-${kind}`);
		const before = s3.requests.length;
		for (let round = 1; round <= 7; round++) {
			for (const [kind, params] of Object.entries(kinds) as Array<[keyof typeof kinds, (n: number) => object]>) times[kind].push(await timed(params(round), `bench-${kind}-${round}`));
		}
		// The service's fetches (the sandbox takes each job as it is ordered) may still be under way.
		await new Promise((r) => setTimeout(r, 500));
		const requests = s3.requests.slice(before);
		const fromN8n = requests.filter((r) => !r.url.includes('X-Amz-Signature'));
		const large = fromN8n.filter((r) => r.url.includes('lecture.mp4'));
		const headAlone: number[] = [];
		for (let n = 0; n < 7; n++) {
			const url = `${s3.endpoint}/${s3.bucket}/bench/lecture.mp4`;
			const started = process.hrtime.bigint();
			await (await fetch(url, { method: 'HEAD', headers: signedHeaders(s3Credential, 'HEAD', url, new Date()) })).arrayBuffer();
			headAlone.push(Number(process.hrtime.bigint() - started) / 1e6);
		}
		return {
			n8nBytes: large.reduce((sum, r) => sum + r.bytes, 0) / 7,
			n8nRequests: large.map((r) => r.method),
			serviceFetches: requests.filter((r) => r.url.includes('X-Amz-Signature') && r.status === 206).length,
			urlMs: median(times.url),
			s3Ms: median(times.large),
			smallMs: median(times.small),
			headMs: median(headAlone),
		};
	} finally {
		s3.stop();
		sandbox.stop();
	}
}

async function main() {
	const started = Date.now();
	log(`machine: ${cpus().length} cores, Node ${process.version}`);
	if (process.env.BENCH_ONLY === 's3') {
		// Section 10 alone, while working on it: BENCH_ONLY=s3 npm run bench
		for (const latency of [S3_LOOPBACK, S3_AT_DISTANCE]) {
			const s3 = await s3Figures(latency);
			process.stdout.write(`${JSON.stringify({ ...latency, ...s3, s3OrderVsUrlOrder: Number((s3.s3Ms / s3.urlMs).toFixed(2)), s3OrderLargeVsSmall: Number((s3.s3Ms / s3.smallMs).toFixed(2)) })}\n`);
		}
		process.exit(0);
	}
	log('1-2. upload memory and speed');
	const upload = await uploadFigures();
	log('3. batch ordering');
	const clean = await batchFigures(false);
	log(`  clean: ${clean.wallSeconds.toFixed(2)} s for ${BATCH_ITEMS} items`);
	const faulty = await batchFigures(true);
	log(`  with faults (${faulty.faultsSeen} injected): ${faulty.wallSeconds.toFixed(2)} s`);
	log('4. load cost');
	const load = await loadFigures();
	log(`5. waiting together: ${WAIT_ITEMS} items, jobs of ${WAIT_JOB_SECONDS} s, Poll every 1 s`);
	const wait = await waitFigures();
	log(`  one item alone: ${wait.single.seconds.toFixed(2)} s; ${WAIT_ITEMS} items: ${wait.batch.seconds.toFixed(2)} s, ${wait.batch.reads} reads in ${wait.batch.rounds} rounds`);
	log(`6. concurrent uploads: ${CONCURRENT_UPLOADS} × ${CONCURRENT_UPLOAD_BYTES / 1024 ** 2} MiB`);
	const concurrent = await concurrentUploadFigures();
	log(`  ${concurrent.seconds.toFixed(1)} s, peak RSS growth ${concurrent.rssGrowthMiB.toFixed(1)} MiB`);

	log(`7. paying once with a Binary File of ${UPLOAD_BYTES / 1024 ** 2} MiB: order and repeat vs upload`);
	const repeat = await repeatFigures();

	log('8. On Webhook for a batch of 100 items, every job completing on its own');
	const webhookBatch = await webhookBatchFigures();
	log(`  ${webhookBatch.events} events, ${webhookBatch.reads} reads, last event to resumed: ${webhookBatch.resumeMs.toFixed(0)} ms`);

	log(`9. a burst at the webhook trigger in real n8n: ${BURST_EVENTS} events in 2 s, each twice, 10 reads/s, against n8n's Webhook node`);
	const burst = await triggerBurstFigures();

	log(`10. ordering an S3 Object of ${S3_OBJECT_BYTES / 1024 ** 2} MiB against a Media URL, alternating, five each`);
	const s3 = await s3Figures(S3_LOOPBACK);
	const s3Far = await s3Figures(S3_AT_DISTANCE);
	log(`  the service ${S3_AT_DISTANCE.serviceMs} ms away, the store ${S3_AT_DISTANCE.storeMs} ms: Media URL ${s3Far.urlMs.toFixed(1)} ms, S3 Object ${s3Far.s3Ms.toFixed(1)} ms`);
	log(`  Media URL ${s3.urlMs.toFixed(1)} ms, S3 Object of ${S3_OBJECT_BYTES / 1024 ** 2} MiB ${s3.s3Ms.toFixed(1)} ms, of 1 KiB ${s3.smallMs.toFixed(1)} ms (medians of 7); a signed HEAD alone ${s3.headMs.toFixed(1)} ms; n8n → S3 for the large one: ${s3.n8nRequests.join(', ')}; the service fetched ${s3.serviceFetches} times`);

	const figures = {
		uploadRssGrowthMiB: Number(upload.rssGrowthMiB.toFixed(1)),
		uploadVsCurl: Number((upload.oursMiBs / upload.curlMiBs).toFixed(2)),
		batchVsFloor: Number((clean.wallSeconds / clean.floorSeconds).toFixed(2)),
		batchJobs: clean.jobs,
		batchCharges: clean.charges,
		batchFaultJobs: faulty.jobs,
		batchFaultCharges: faulty.charges,
		loadMs: Number(load.loadMs.toFixed(1)),
		batchFaultVsFloor: Number((faulty.wallSeconds / faulty.floorSeconds).toFixed(2)),
		waitBatchVsSingle: Number((wait.batch.seconds / wait.single.seconds).toFixed(2)),
		waitReadsPerRound: Number((wait.batch.reads / wait.batch.rounds).toFixed(2)),
		uploadConcurrentRssGrowthMiB: Number(concurrent.rssGrowthMiB.toFixed(1)),
		binaryOrderVsUpload: Number((repeat.first / repeat.upload).toFixed(2)),
		binaryRepeatVsUpload: Number((repeat.repeat / repeat.upload).toFixed(2)),
		binaryRepeatRssGrowthMiB: Number(repeat.rssGrowthMiB.toFixed(1)),
		webhookBatchReadsPerEvent: Number((webhookBatch.reads / webhookBatch.events).toFixed(2)),
		webhookBatchResumeMs: Number(webhookBatch.resumeMs.toFixed(0)),
		triggerBurstReadsPerEvent: Number((burst.reads / burst.events).toFixed(2)),
		triggerBurstP95VsWebhookNode: Number((burst.triggerP95Ms / burst.webhookNodeP95Ms).toFixed(2)),
		s3BytesThroughN8n: s3.n8nBytes,
		s3OrderVsUrlOrder: Number((s3.s3Ms / s3.urlMs).toFixed(2)),
		s3OrderLargeVsSmall: Number((s3.s3Ms / s3.smallMs).toFixed(2)),
		s3OrderVsUrlOrderAtDistance: Number((s3Far.s3Ms / s3Far.urlMs).toFixed(2)),
	};
	// figure, measured, reference, ratio, target, met
	const rows: Array<[string, string, string, string, string, boolean]> = [
		['upload RSS growth', `${figures.uploadRssGrowthMiB} MiB`, `file ${UPLOAD_BYTES / 1024 ** 2} MiB`, '', '≤ 64 MiB', figures.uploadRssGrowthMiB <= 64],
		['upload speed vs curl -T', `${upload.oursMiBs.toFixed(0)} MiB/s`, `curl ${upload.curlMiBs.toFixed(0)} MiB/s`, `${figures.uploadVsCurl}×`, '≥ 0.8×', figures.uploadVsCurl >= 0.8],
		[`batch ${BATCH_ITEMS} at ${WRITE_LIMIT}/s`, `${clean.wallSeconds.toFixed(2)} s`, `floor ${clean.floorSeconds} s`, `${figures.batchVsFloor}×`, '≤ 1.2×', figures.batchVsFloor <= 1.2],
		['batch jobs / charges', `${clean.jobs} / ${clean.charges}`, `${BATCH_ITEMS} items`, '', 'exactly 500', clean.jobs === BATCH_ITEMS && clean.charges === BATCH_ITEMS],
		['with 10% 503s and resets', `${faulty.jobs} / ${faulty.charges}`, `${faulty.faultsSeen} faults, ${faulty.wallSeconds.toFixed(1)} s`, '', 'exactly 500', faulty.jobs === BATCH_ITEMS && faulty.charges === BATCH_ITEMS],
		['load cost on top of n8n-workflow', `${load.loadMs.toFixed(1)} ms`, `n8n-workflow ${load.workflowMs.toFixed(0)} ms`, '', '≤ 30 ms', load.loadMs <= 30],
		['batch with faults vs floor', `${faulty.wallSeconds.toFixed(2)} s`, `floor ${faulty.floorSeconds} s`, `${figures.batchFaultVsFloor}×`, '≤ 1.5×', figures.batchFaultVsFloor <= 1.5],
		[`wait: ${WAIT_ITEMS} items vs one`, `${wait.batch.seconds.toFixed(2)} s`, `one ${wait.single.seconds.toFixed(2)} s`, `${figures.waitBatchVsSingle}×`, '≤ 1.5×', figures.waitBatchVsSingle <= 1.5],
		['wait: reads per round', `${wait.batch.reads} reads`, `${wait.batch.rounds} rounds, ${WAIT_ITEMS} jobs`, `${figures.waitReadsPerRound}`, '≤ 3', figures.waitReadsPerRound <= 3],
		['binary order (hash + upload) vs upload', `${repeat.first.toFixed(1)} s`, `upload ${repeat.upload.toFixed(1)} s`, `${figures.binaryOrderVsUpload}×`, '≤ 1.5×', figures.binaryOrderVsUpload <= 1.5],
		['binary repeat (hash, replay) vs upload', `${repeat.repeat.toFixed(1)} s`, `upload ${repeat.upload.toFixed(1)} s`, `${figures.binaryRepeatVsUpload}×`, '≤ 1×', figures.binaryRepeatVsUpload <= 1],
		['order and repeat, RSS growth', `${figures.binaryRepeatRssGrowthMiB} MiB`, `file ${UPLOAD_BYTES / 1024 ** 2} MiB`, '', '≤ 64 MiB', figures.binaryRepeatRssGrowthMiB <= 64],
		['On Webhook, 100 items: reads per event', `${webhookBatch.reads} reads`, `${webhookBatch.events} events`, `${figures.webhookBatchReadsPerEvent}`, '≤ 2', figures.webhookBatchReadsPerEvent <= 2],
		['On Webhook: last event to resumed run', `${figures.webhookBatchResumeMs} ms`, '100 jobs read back', '', '≤ 1000 ms', figures.webhookBatchResumeMs <= 1000],
		['trigger burst: reads per event', `${burst.reads} reads`, `${burst.events} events (2 bursts), each sent twice`, `${figures.triggerBurstReadsPerEvent}`, '≤ 0.2', figures.triggerBurstReadsPerEvent <= 0.2],
		["trigger burst: p95 answer vs n8n's Webhook node", `${burst.triggerP95Ms} ms`, `Webhook node ${burst.webhookNodeP95Ms} ms`, `${figures.triggerBurstP95VsWebhookNode}×`, '≤ 1.5×', figures.triggerBurstP95VsWebhookNode <= 1.5],
		[`${CONCURRENT_UPLOADS} uploads at once, RSS growth`, `${figures.uploadConcurrentRssGrowthMiB} MiB`, `${CONCURRENT_UPLOADS} × ${CONCURRENT_UPLOAD_BYTES / 1024 ** 2} MiB`, '', '≤ 128 MiB', figures.uploadConcurrentRssGrowthMiB <= 128],
		['S3 Object order: media bytes through n8n', `${figures.s3BytesThroughN8n} bytes`, `object ${S3_OBJECT_BYTES / 1024 ** 2} MiB; n8n sent ${s3.n8nRequests.length / 7} HEAD per order`, '', '0 (the HEAD only)', figures.s3BytesThroughN8n === 0],
		['S3 Object order vs Media URL order', `${s3.s3Ms.toFixed(1)} ms`, `Media URL ${s3.urlMs.toFixed(1)} ms (a HEAD alone ${s3.headMs.toFixed(1)} ms)`, `${figures.s3OrderVsUrlOrder}×`, '≤ 1.5×', figures.s3OrderVsUrlOrder <= 1.5],
		[`the same, the service ${S3_AT_DISTANCE.serviceMs} ms away, the store ${S3_AT_DISTANCE.storeMs} ms`, `${s3Far.s3Ms.toFixed(1)} ms`, `Media URL ${s3Far.urlMs.toFixed(1)} ms`, `${figures.s3OrderVsUrlOrderAtDistance}×`, '≤ 1.5×', figures.s3OrderVsUrlOrderAtDistance <= 1.5],
		['S3 Object order: 2 GiB vs 1 KiB object', `${s3.s3Ms.toFixed(1)} ms`, `1 KiB ${s3.smallMs.toFixed(1)} ms`, `${figures.s3OrderLargeVsSmall}×`, '≈ 1× (size does not count)', figures.s3OrderLargeVsSmall <= 1.2],
	];
	const header = ['figure', 'measured', 'reference', 'ratio', 'target', 'met'];
	const table = [header, ...rows.map((r) => [...r.slice(0, 5), r[5] ? 'yes' : 'NO'] as string[])];
	const widths = header.map((_, c) => Math.max(...table.map((row) => row[c].length)));
	const lines = table.map((row) => `| ${row.map((cell, c) => cell.padEnd(widths[c])).join(' | ')} |`);
	lines.splice(1, 0, `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
	process.stdout.write(`\n${lines.join('\n')}\n\nmachine: ${cpus().length} cores, Node ${process.version}; ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
	if (asJson) process.stdout.write(`${JSON.stringify(figures)}\n`);
	process.exit(0);
}

main().catch((error) => {
	process.stderr.write(`${(error as Error).stack}\n`);
	process.exit(1);
});
