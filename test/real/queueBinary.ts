// By hand, too heavy for CI (npm run bench:queue-binary; issue #40): real n8n 2.41.1 in queue mode
// (Postgres 15, Redis 7, main with production webhooks off, one webhook process, ONE worker), binary
// data in database mode. A Webhook → Read/Write Files from Disk (20 files of 200 MiB, distinct bytes)
// → Job → Create (Binary File, Idempotency Automatic, Don't Wait, Batching → Concurrency left at its
// default). The worker's RSS is sampled from /proc every 100 ms by a process of its own, from before
// the webhook call to past the execution's end. Target: growth ≤ Concurrency × file size + 256 MiB,
// and each file uploaded, ordered and charged once (the sandbox's ledger). The peaks within the Read
// Files node and within the Captioning node (their start and run times from the execution's data)
// tell n8n's own read into its database from the node's reads back out of it.
//
// QUEUE_BINARY_FILES and QUEUE_BINARY_FILE_MIB change the batch (a quick smoke run),
// QUEUE_BINARY_CONCURRENCY sets Batching → Concurrency, QUEUE_BINARY_N8N_ENV adds n8n settings (JSON,
// e.g. '{"DB_POSTGRESDB_POOL_SIZE":"6"}'), QUEUE_BINARY_SAMPLES writes the RSS samples (CSV); the report
// is one summary line and one JSON line on stdout, the progress on stderr. Needs about 2 × files ×
// size of free disk (the files, and Postgres's copy), freed at the end.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';

import { DEFAULT_CONCURRENCY } from '../../nodes/Captioning/transport/limits';
import { tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import type { Item } from './executions';
import { executionsApi } from './executions';
import { installN8n, tempFolder } from './instance';
import type { QueueCluster } from './queueMode';
import { chain, postJson, startQueueCluster } from './queueMode';
import { log, round } from '../../bench/support';

const VERSION = '2.41.1';
const FILES = Number(process.env.QUEUE_BINARY_FILES ?? 20);
const FILE_MIB = Number(process.env.QUEUE_BINARY_FILE_MIB ?? 200);
/** Batching → Concurrency: left at the node's default unless QUEUE_BINARY_CONCURRENCY says. */
const SET_CONCURRENCY = process.env.QUEUE_BINARY_CONCURRENCY
	? Number(process.env.QUEUE_BINARY_CONCURRENCY)
	: undefined;
const CONCURRENCY = SET_CONCURRENCY ?? DEFAULT_CONCURRENCY;
const HEADROOM_MIB = 256;
const LIMIT_MIB = CONCURRENCY * FILE_MIB + HEADROOM_MIB;
const SAMPLE_MS = 100;
/** The execution may take this long (it took about 18 minutes on 2 cores, 2026-11-27). */
const RUN_TIMEOUT_MS = 30 * 60 * 1000;
const BINARY_MODE = 'database';
const WORKFLOW = 'wfQueueBinary01';
const WARM_WORKFLOW = 'wfQueueBinWarm1';
const CREDENTIAL = 'captioningSandbox';
/** More n8n settings for every process, as JSON (e.g. '{"DB_POSTGRESDB_POOL_SIZE":"6"}'): none by default. */
const EXTRA_ENV = JSON.parse(process.env.QUEUE_BINARY_N8N_ENV ?? '{}') as Record<string, string>;

const sleep = async (ms: number) => await new Promise((r) => setTimeout(r, ms));
const mib = (bytes: number) => bytes / 1024 ** 2;

/** `count` files of `sizeMiB` each: a random MiB of its own, repeated (distinct per file, not compressible by Postgres). */
function writeFiles(dir: string, prefix: string, count: number, sizeMiB: number): string[] {
	mkdirSync(dir, { recursive: true });
	const names: string[] = [];
	for (let i = 0; i < count; i++) {
		const name = `${prefix}-${String(i).padStart(2, '0')}.mp4`;
		const block = randomBytes(1024 * 1024);
		const fd = openSync(path.join(dir, name), 'w');
		try {
			for (let k = 0; k < sizeMiB; k++) writeSync(fd, block);
		} finally {
			closeSync(fd);
		}
		names.push(name);
	}
	return names;
}

interface Sample {
	at: number;
	mib: number;
}

/** Samples a process's VmRSS every SAMPLE_MS from a process of its own (this one hosts the sandbox, busy hashing uploads). */
function sampleRss(pid: number): { samples: Sample[]; stop: () => void } {
	const code = `const fs=require('node:fs');const pid=process.argv[1];const tick=()=>{let s;try{s=fs.readFileSync('/proc/'+pid+'/status','utf8')}catch{process.exit(0)}const m=/VmRSS:\\s+(\\d+)/.exec(s);process.stdout.write(Date.now()+' '+(m?m[1]:'0')+'\\n')};tick();setInterval(tick,${SAMPLE_MS});`;
	const child = spawn(process.execPath, ['-e', code, String(pid)], {
		stdio: ['ignore', 'pipe', 'inherit'],
	});
	const samples: Sample[] = [];
	let pending = '';
	child.stdout.on('data', (d) => {
		pending += String(d);
		const lines = pending.split('\n');
		pending = lines.pop()!;
		for (const line of lines) {
			const [at, kib] = line.split(' ').map(Number);
			if (Number.isFinite(at) && kib > 0) samples.push({ at, mib: kib / 1024 });
		}
	});
	return { samples, stop: () => child.kill() };
}

const within = (samples: Sample[], from: number, to: number) =>
	samples.filter((s) => s.at >= from && s.at <= to);
const peakOf = (samples: Sample[]) => Math.max(0, ...samples.map((s) => s.mib));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

type NodeRun = {
	startTime?: number;
	executionTime?: number;
	error?: { message?: string };
	data?: { main?: Array<Item[] | null> };
};

async function measure(cluster: QueueCluster, sb: Sandbox, report: Record<string, unknown>) {
	const { n8n, hooks, workers } = cluster;
	const api = executionsApi(() => n8n);
	const worker = workers[0];
	const hook = hooks[0];
	const settled = async (workflowId: string, ms: number) =>
		await api.waitFor(
			`an execution of ${workflowId} to end`,
			async () => {
				if (!worker.pid()) throw new Error(`the worker exited:\n${worker.log().slice(-4000)}`);
				return (await api.executions(workflowId)).find(
					(e) => e.status !== 'running' && e.status !== 'new',
				);
			},
			ms,
		);

	// Main activates the published workflows after it answers (their webhooks go into Postgres for the
	// webhook process): until then the webhook process answers 404. The first call answered 200
	// starts the warm-up (two files of 1 MiB), which loads the nodes' code into the worker.
	const warmDeadline = Date.now() + 120000;
	for (;;) {
		const res = await postJson(hook.url, '/webhook/queue-binary-warm', {});
		if (res.status === 200) break;
		if (Date.now() > warmDeadline)
			throw new Error(`the warm-up webhook answered ${res.status}: ${res.text}\n${cluster.logs()}`);
		await sleep(1000);
	}
	const warm = await settled(WARM_WORKFLOW, 180000);
	if (warm.status !== 'success')
		throw new Error(`the warm-up ended ${warm.status}\n${cluster.logs()}`);
	log(
		`  warm-up: ${warm.status} (${sb.ledger.jobs.length} jobs, ${sb.ledger.uploads.length} uploads)`,
	);
	// The worker settles after the warm-up (its RSS falls for some seconds) before the baseline.
	await sleep(10000);
	sb.resetLedger();

	const pid = worker.pid()!;
	const sampler = sampleRss(pid);
	let posted = 0;
	try {
		await sleep(5000);
		posted = Date.now();
		log(`  calling the webhook: ${FILES} files of ${FILE_MIB} MiB, worker pid ${pid}`);
		const answer = await postJson(hook.url, '/webhook/queue-binary', {});
		if (answer.status !== 200)
			throw new Error(`the webhook answered ${answer.status}: ${answer.text}`);
		const progress = setInterval(() => {
			const last = sampler.samples.at(-1);
			log(
				`  ${Math.round((Date.now() - posted) / 1000)} s: worker RSS ${last ? last.mib.toFixed(0) : '?'} MiB; the service has ${sb.ledger.uploads.filter((u) => u.complete).length} uploads, ${sb.ledger.jobs.length} jobs`,
			);
		}, 15000);
		try {
			const run = await settled(WORKFLOW, RUN_TIMEOUT_MS);
			report.executionId = run.id;
			report.status = run.status;
			if (run.status !== 'success') log(`  the execution ended ${run.status}:\n${cluster.logs()}`);
		} finally {
			clearInterval(progress);
		}
		await sleep(5000);
	} finally {
		sampler.stop();
		const samples = sampler.samples;
		if (process.env.QUEUE_BINARY_SAMPLES)
			writeFileSync(
				process.env.QUEUE_BINARY_SAMPLES,
				`ms,rss_mib\n${samples.map((x) => `${x.at - posted},${x.mib.toFixed(1)}`).join('\n')}\n`,
			);
		const before = samples.filter((s) => s.at < posted);
		const baseline = median(before.slice(-Math.round(3000 / SAMPLE_MS)).map((s) => s.mib));
		const during = samples.filter((s) => s.at >= posted);
		const gaps = samples.slice(1).map((s, i) => s.at - samples[i].at);
		Object.assign(report, {
			baselineMiB: round(baseline, 1),
			peakMiB: round(peakOf(during), 1),
			growthMiB: round(peakOf(during) - baseline, 1),
			afterMiB: round(samples.at(-1)?.mib ?? 0, 1),
			samples: samples.length,
			maxSampleGapMs: Math.max(0, ...gaps),
		});
	}

	const executionId = String(report.executionId);
	const detail = await n8n.rest<{ startedAt?: string; stoppedAt?: string }>(
		'GET',
		`/executions/${executionId}`,
	);
	const stoppedAt = detail.body.stoppedAt ? Date.parse(detail.body.stoppedAt) : Date.now();
	const startedAt = detail.body.startedAt ? Date.parse(detail.body.startedAt) : posted;
	const samples = sampler.samples;
	const baseline = Number(report.baselineMiB);
	// To the execution's end (the samples after it only show what the worker kept).
	const inRun = within(samples, posted, stoppedAt + SAMPLE_MS);
	report.peakMiB = round(peakOf(inRun), 1);
	report.growthMiB = round(peakOf(inRun) - baseline, 1);
	report.executionSeconds = round((stoppedAt - startedAt) / 1000, 1);

	const runData = (await api.runDataOf(executionId)) as unknown as Record<string, NodeRun[]>;
	const windowOf = (node: string) => {
		const nodeRun = runData[node]?.[0];
		if (!nodeRun?.startTime) return undefined;
		const from = nodeRun.startTime;
		const to = from + (nodeRun.executionTime ?? 0);
		const at = samples.filter((s) => s.at <= from).at(-1)?.mib ?? baseline;
		const peak = peakOf(within(samples, from, to + SAMPLE_MS));
		return {
			seconds: round((to - from) / 1000, 1),
			atStartMiB: round(at, 1),
			peakMiB: round(peak, 1),
			growthOverBaselineMiB: round(peak - baseline, 1),
			growthWithinNodeMiB: round(peak - at, 1),
			error: nodeRun.error?.message,
		};
	};
	report.readFiles = windowOf('Read Files');
	report.captioning = windowOf('Order');

	// The binary mode, as n8n used it: the ids of the files Read Files stored, and Postgres's rows.
	const read = runData['Read Files']?.[0]?.data?.main?.[0] ?? [];
	const ids = read.map(
		(item) =>
			String(
				(item as Item & { binary?: Record<string, { id?: string }> }).binary?.data?.id ?? '',
			).split(':')[0],
	);
	const rows = await cluster.sql(
		`SELECT count(*) || ' ' || coalesce(sum("fileSize"), 0) FROM binary_data WHERE "sourceType" = 'execution' AND "sourceId" = '${executionId}'`,
	);
	const [rowCount, rowBytes] = rows.split(' ').map(Number);
	report.binaryMode = {
		configured: BINARY_MODE,
		idPrefixes: [...new Set(ids)],
		readItems: read.length,
		postgresRows: rowCount,
		postgresMiB: round(mib(rowBytes), 1),
	};

	const ordered = runData.Order?.[0]?.data?.main?.[0] ?? [];
	const { ledger } = sb;
	const bytes = FILE_MIB * 1024 * 1024;
	report.ledger = {
		uploads: ledger.uploads.length,
		uploadsComplete: ledger.uploads.filter((u) => u.complete && u.receivedBytes === bytes).length,
		distinctUploadedFiles: new Set(ledger.uploads.map((u) => u.sha256)).size,
		jobs: ledger.jobs.length,
		distinctUploadIdsOrdered: new Set(ledger.jobs.map((j) => j.body.upload_id)).size,
		postJobs: ledger.requests.filter((r) => r.route === 'POST /jobs').length,
		charges: ledger.charges.length,
		requests: Object.entries(
			ledger.requests.reduce<Record<string, number>>((counts, r) => {
				const key = `${r.route ?? r.path} ${r.status}`;
				counts[key] = (counts[key] ?? 0) + 1;
				return counts;
			}, {}),
		)
			.map(([k, n]) => `${k} ×${n}`)
			.join(', '),
	};
	report.outputItems = ordered.length;
	report.distinctJobsOut = new Set(
		ordered.filter((i) => i.json.object === 'job').map((i) => i.json.id),
	).size;
	report.ranOnTheWorker = cluster.ranOn(executionId).length === 1;
}

/** What the worker's log says of its database connection (n8n's DbConnectionMonitor). */
function databaseEvents(cluster: QueueCluster | undefined): Record<string, number> {
	const text = cluster?.workers[0]?.log() ?? '';
	const count = (re: RegExp) => (text.match(re) ?? []).length;
	return {
		pingFailures: count(/Database ping failed/g),
		recoveries: count(/Triggering database connection recovery/g),
		doubleReleases: count(/^Release called on client which has already been released/gm),
	};
}

async function main(): Promise<number> {
	const report: Record<string, unknown> = {
		n8nVersion: VERSION,
		files: FILES,
		fileMiB: FILE_MIB,
		concurrency: CONCURRENCY,
		concurrencySet: SET_CONCURRENCY !== undefined,
		limitMiB: LIMIT_MIB,
		n8nEnv: EXTRA_ENV,
	};
	const work = tempFolder('captioning-queue-binary-');
	let cluster: QueueCluster | undefined;
	let sb: Sandbox | undefined;
	let stopping = false;
	const cleanUp = async () => {
		if (stopping) return;
		stopping = true;
		await cluster?.stop().catch((e: Error) => log(`  stopping n8n: ${e.message}`));
		await sb?.close().catch(() => undefined);
		rmSync(work, { recursive: true, force: true });
	};
	for (const signal of ['SIGINT', 'SIGTERM'] as const)
		process.once(signal, () => void cleanUp().finally(() => process.exit(130)));
	const started = Date.now();
	try {
		log(`queue binary: writing ${FILES} files of ${FILE_MIB} MiB into ${work}`);
		writeFiles(path.join(work, 'big'), 'clip', FILES, FILE_MIB);
		writeFiles(path.join(work, 'warm'), 'warm', 2, 1);
		const install = await installN8n(VERSION, log);
		sb = await createSandbox({
			timing: { queuedMs: 300, processingMs: 1500 },
			webhook: { ca: tlsPair().cert },
		});
		const credentials = { captioningApi: { id: CREDENTIAL, name: CREDENTIAL } };
		const workflow = (id: string, hook: string, webhookId: string, glob: string) =>
			chain(id, `Queue: ${hook}`, [
				[
					'Start',
					'n8n-nodes-base.webhook',
					2,
					{ httpMethod: 'POST', path: hook, responseMode: 'onReceived', options: {} },
					{ webhookId },
				],
				['Read Files', 'n8n-nodes-base.readWriteFile', 1, { fileSelector: glob, options: {} }],
				[
					'Order',
					'n8n-nodes-captioning.captioning',
					1,
					{
						resource: 'job',
						operation: 'create',
						source: 'binary',
						binaryPropertyName: 'data',
						idempotency: 'auto',
						waitForCompletion: 'none',
						...(SET_CONCURRENCY === undefined ? {} : { concurrency: SET_CONCURRENCY }),
					},
					{ credentials },
				],
			]);
		log('  starting Postgres, Redis, n8n main, a webhook process and one worker');
		cluster = await startQueueCluster({
			install,
			fileAccess: [work],
			env: {
				// n8n 2.41.1's own default in queue mode (BinaryDataConfig); said here so the run cannot drift.
				N8N_DEFAULT_BINARY_DATA_MODE: BINARY_MODE,
				N8N_BINARY_DATA_DATABASE_MAX_FILE_SIZE: '512',
				...EXTRA_ENV,
			},
			webhookProcesses: 1,
			workers: 1,
			credentials: [
				{
					id: CREDENTIAL,
					name: CREDENTIAL,
					type: 'captioningApi',
					data: { apiKey: sb.keys.full, baseUrl: sb.baseUrl },
				},
			],
			workflows: () => [
				[
					WARM_WORKFLOW,
					workflow(
						WARM_WORKFLOW,
						'queue-binary-warm',
						'a1f0e2d3-4c5b-4a69-8e7f-0d1c2b3a4f51',
						`${work}/warm/*.mp4`,
					),
				],
				[
					WORKFLOW,
					workflow(
						WORKFLOW,
						'queue-binary',
						'b2e1f3c4-5d6a-4b7c-9f8e-1e2d3c4b5a62',
						`${work}/big/*.mp4`,
					),
				],
			],
		});
		await measure(cluster, sb, report);
	} catch (error) {
		report.error = (error as Error).message.slice(0, 4000);
	} finally {
		report.workerDatabase = databaseEvents(cluster);
		await cleanUp();
	}
	report.scriptSeconds = Math.round((Date.now() - started) / 1000);

	const ledger = report.ledger as Record<string, number> | undefined;
	const orderedOnce =
		ledger !== undefined &&
		['uploads', 'uploadsComplete', 'jobs', 'distinctUploadIdsOrdered', 'postJobs', 'charges'].every(
			(k) => ledger[k] === FILES,
		);
	const growth = report.growthMiB as number | undefined;
	report.growthMet = growth !== undefined && growth <= LIMIT_MIB;
	report.orderedOnce = orderedOnce;
	const node = (w: unknown) => {
		const v = w as
			| { peakMiB: number; growthOverBaselineMiB: number; seconds: number; error?: string }
			| undefined;
		if (!v) return 'n/a';
		const failed = v.error ? `, failed: ${v.error}` : '';
		return `peak ${v.peakMiB} MiB (+${v.growthOverBaselineMiB}) over ${v.seconds} s${failed}`;
	};
	process.stdout.write(
		`queue binary: ${FILES} × ${FILE_MIB} MiB, n8n ${VERSION} queue mode, binary ${BINARY_MODE}, one worker, Concurrency ${CONCURRENCY}: ` +
			(report.error
				? `FAILED (${String(report.error).split('\n')[0]}); `
				: `execution ${String(report.status)}; `) +
			`worker RSS baseline ${String(report.baselineMiB)} MiB, peak ${String(report.peakMiB)} MiB, growth ${String(growth)} MiB, limit ${LIMIT_MIB} MiB (${report.growthMet ? 'met' : 'NOT met'}); ` +
			`Read Files ${node(report.readFiles)}, Captioning ${node(report.captioning)}; ` +
			`worker database pings failed ${(report.workerDatabase as Record<string, number>).pingFailures}, recoveries ${(report.workerDatabase as Record<string, number>).recoveries}; ` +
			`uploads ${ledger?.uploads}, jobs ${ledger?.jobs}, POST /jobs ${ledger?.postJobs}, charges ${ledger?.charges} (${orderedOnce ? 'each file ordered once' : 'NOT each once'})\n`,
	);
	process.stdout.write(`${JSON.stringify(report)}\n`);
	if (report.error || report.status !== 'success') return 1;
	return report.growthMet && orderedOnce ? 0 : 2;
}

main().then(
	(code) => process.exit(code),
	(error: unknown) => {
		log(String((error as Error).stack ?? error));
		process.exit(1);
	},
);
