// Many runs at once on one workspace key in real n8n, for the bench: the service allows 10 reads a
// second (per key) and 5 writes (per workspace), and at the same moment
// - a burst of 150 job events reaches the Captioning Trigger with Attach Captions (SRT), each event
//   delivered once (test/real/burst.ts);
// - a batch of 100 items goes into Job → Create, Wait for Completion: Poll every 2 s (as the
//   order-and-wait template waits), its jobs short enough that the limits set the pace;
// - the Captioning Polling Trigger (every 10 s, Attach Captions) reports 100 finished jobs.
// Every request carries the same key. What counts is how many the service refused (429) and how long
// it all took against the floor the limits set.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import type { Sandbox } from '../helpers/sandbox';
import {
	activateBurstWorkflows,
	BURST_CAPTIONS_WORKFLOW,
	BURST_CREDENTIAL_ID,
	fireBurst,
	importBurstWorkflows,
	prepareBurst,
	srtPath,
} from './burst';
import { executionsApi } from './executions';
import { pollingWorkflow } from './flood';
import type { N8n } from './instance';
import { tempJson } from './instance';
import { batchWaitWorkflow } from './workflows';

const BATCH_WORKFLOW = 'wfSharedBatch01';
const BATCH_HOOK = 'shared-key-batch';
const POLL_WORKFLOW = 'wfSharedPoll001';
export const SHARED = { burst: 150, batch: 100, polled: 100, readLimit: 10, writeLimit: 5 };
/** How many of each the runs hold (SHARED by default). */
export type SharedShape = typeof SHARED;

/** Imports the burst workflows, the batch and the polling trigger (all with the full key); call before n8n starts. */
export async function importSharedKey(
	n8n: N8n,
	sb: Sandbox,
	work: string,
	shape: SharedShape = SHARED,
): Promise<void> {
	for (const dir of ['burst', 'polled']) mkdirSync(path.join(work, dir), { recursive: true });
	importBurstWorkflows(n8n, sb, path.join(work, 'burst'));
	const urls = Array.from(
		{ length: shape.batch },
		(_, n) => `https://media.example.com/shared-batch-${n}.mp4`,
	);
	await n8n.cli([
		'import:workflow',
		`--input=${batchWaitWorkflow(BATCH_WORKFLOW, BATCH_HOOK, urls, 10, BURST_CREDENTIAL_ID, {}, { waitForCompletion: 'poll', pollInterval: 2 })}`,
	]);
	const polling = pollingWorkflow({
		id: POLL_WORKFLOW,
		credentialId: BURST_CREDENTIAL_ID,
		everySeconds: 10,
		out: path.join(work, 'polled'),
		filters: { metadataKey: 'group', metadataValue: 'polled' },
	});
	await n8n.cli(['import:workflow', `--input=${tempJson('shared-poll.json', polling)}`]);
}

export interface SharedKeyResult {
	requests: number;
	refused: number;
	/** Reads and writes the service let through. */
	reads: number;
	writes: number;
	/** The reads let through, by the sandbox's route (a job, a list, a caption file). */
	readsByRoute: Record<string, number>;
	/** From the moment it all started until the last request arrived. */
	seconds: number;
	/** max(reads / read limit, writes / write limit). */
	floorSeconds: number;
	burstExecutions: number;
	/** Burst jobs whose SRT was appended more than once: a job that ran twice. */
	burstRanTwice: number;
	burstSenderTimeouts: number;
	polledReported: number;
	/** Polled jobs whose SRT was appended more than once: a job reported twice. */
	polledTwice: number;
	batchStatus: string;
}

/** With `limited` false the key has no limits: how long n8n itself takes for the same runs. */
export async function runSharedKey(
	n8n: N8n,
	sb: Sandbox,
	work: string,
	limited = true,
	shape: SharedShape = SHARED,
): Promise<SharedKeyResult> {
	const api = executionsApi(() => n8n);
	await activateBurstWorkflows(n8n, true);
	await api.activate([BATCH_WORKFLOW, POLL_WORKFLOW]);
	const order = async (body: object) => {
		const res = await fetch(`${sb.baseUrl}/jobs`, {
			method: 'POST',
			headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
			body: JSON.stringify(body),
		});
		return ((await res.json()) as { id: string }).id;
	};
	const polled: string[] = [];
	for (let n = 0; n < shape.polled; n++)
		polled.push(
			await order({
				media_url: `https://media.example.com/shared-polled-${n}.mp4`,
				metadata: { group: 'polled' },
			}),
		);
	const burstJobs = await prepareBurst(n8n, sb, 'triggerCaptions', shape.burst);
	// Let the polling trigger see them open (a poll, about 10 s), so that they are reported when they finish.
	await new Promise((r) => setTimeout(r, 12000));
	// n8n polls at the minute's seconds 0, 10, 20… (its cron): every run starts 5 s before a poll, the
	// mean wait for one, so that the runs compared (with limits and without) wait alike.
	await new Promise((r) => setTimeout(r, (15000 - (Date.now() % 10000)) % 10000));
	sb.resetLedger();
	if (limited)
		sb.setRateLimits({ readPerSecond: shape.readLimit, writePerSecond: shape.writeLimit });
	// The batch's jobs finish on their own, quickly: the limits set the pace, not the service's work.
	sb.setTiming({ queuedMs: 300, processingMs: 1200 });
	const started = Date.now();
	try {
		for (const id of polled) sb.completeJob(id);
		const batch = n8n.post(`/webhook/${BATCH_HOOK}`, {});
		const burst = await fireBurst(n8n, sb, 'triggerCaptions', shape.burst, { among: burstJobs });
		await batch;
		const written = () =>
			readdirSync(path.join(work, 'polled')).filter((f) =>
				polled.includes(f.replace(/\.srt$/, '')),
			);
		await api.waitFor(
			'the polled jobs reported',
			async () => (written().length === shape.polled ? true : undefined),
			240000,
		);
		const batchRun = await api.waitFor(
			'the batch to finish',
			async () => {
				const list = await api.executions(BATCH_WORKFLOW);
				return list.length > 0 && !['new', 'running', 'waiting'].includes(list[0].status)
					? list[0]
					: undefined;
			},
			240000,
		);
		await api.untilEnded(BURST_CAPTIONS_WORKFLOW);
		const copies = (file: string) =>
			existsSync(file)
				? (readFileSync(file, 'utf8').match(/^1\n00:00:00,000 --> /gm) ?? []).length
				: 0;
		const burstRanTwice = burstJobs.filter(
			(id) => copies(srtPath(path.join(work, 'burst'), id)) > 1,
		).length;
		const polledTwice = polled.filter(
			(id) => copies(path.join(work, 'polled', `${id}.srt`)) > 1,
		).length;
		const requests = sb.ledger.requests.filter((r) => r.keyName === 'full');
		const passed = requests.filter((r) => r.status !== 429);
		const reads = passed.filter((r) => r.method === 'GET').length;
		const readsByRoute: Record<string, number> = {};
		for (const r of passed.filter((p) => p.method === 'GET'))
			readsByRoute[r.route ?? r.path] = (readsByRoute[r.route ?? r.path] ?? 0) + 1;
		const writes = passed.filter((r) => r.method === 'POST').length;
		const last = Math.max(...requests.map((r) => r.at));
		return {
			requests: requests.length,
			refused: requests.length - passed.length,
			reads,
			writes,
			readsByRoute,
			seconds: (last - started) / 1000,
			floorSeconds: Math.max(reads / shape.readLimit, writes / shape.writeLimit),
			burstExecutions: burst.executions,
			burstRanTwice,
			burstSenderTimeouts: burst.senderTimeouts,
			polledReported: written().length,
			polledTwice,
			batchStatus: batchRun.status,
		};
	} finally {
		sb.setRateLimits({});
		sb.setTiming(null);
	}
}
