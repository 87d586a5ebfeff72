// A flood at the Captioning Polling Trigger in real n8n, for the e2e suite (test/e2e/flood.test.ts)
// and the bench: `jobs` jobs finish at once, the service allows `readLimit` reads a second, Attach
// Captions downloads each job's SRT, and n8n polls every `everySeconds` seconds (n8n refuses a Poll
// Times entry under a minute, so several custom crons a minute, each at its own second). Each job's
// SRT is appended to a file of its own: a job reported twice would show twice in it.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import type { Sandbox } from '../helpers/sandbox';
import { writeSrtNode } from './burst';
import { executionsApi } from './executions';
import type { N8n } from './instance';
import { tempJson } from './instance';

export const FLOOD_WORKFLOW = 'wfPollingFlood1';
const CREDENTIAL_ID = 'captioningFlood';

export interface FloodOptions {
	jobs: number;
	everySeconds: number;
	readLimit: number;
}

/**
 * The polling workflow: the Captioning Polling Trigger (Attach Captions, SRT) every `everySeconds`
 * seconds → Write SRT, appended to `<out>/<job id>.srt`.
 */
export function pollingWorkflow(options: {
	id: string;
	credentialId: string;
	everySeconds: number;
	out: string;
	filters?: object;
}): object {
	const seconds = Array.from(
		{ length: Math.floor(60 / options.everySeconds) },
		(_, n) => n * options.everySeconds,
	);
	return {
		id: options.id,
		name: `Polling: ${options.id}`,
		versionId: `${options.id}-v1`,
		active: false,
		settings: { executionOrder: 'v1' },
		nodes: [
			{
				id: `${options.id}-trigger`,
				name: 'Job Finished',
				type: 'n8n-nodes-captioning.captioningPollingTrigger',
				typeVersion: 1,
				position: [0, 0],
				parameters: {
					pollTimes: {
						item: seconds.map((second) => ({
							mode: 'custom',
							cronExpression: `${second} * * * * *`,
						})),
					},
					events: ['job.completed'],
					filters: options.filters ?? {},
					attachCaptions: true,
					formats: ['srt'],
					binaryPropertyName: 'data',
				},
				credentials: { captioningApi: { id: options.credentialId, name: options.credentialId } },
			},
			writeSrtNode(options.id, options.out, '{{ $json.id }}'),
		],
		connections: { 'Job Finished': { main: [[{ node: 'Write SRT', type: 'main', index: 0 }]] } },
	};
}

/** Imports (and on 2.x publishes) the polling workflow, polling with the read-only key; call before n8n starts. */
export async function importFlood(
	n8n: N8n,
	sb: Sandbox,
	out: string,
	everySeconds: number,
): Promise<void> {
	mkdirSync(out, { recursive: true });
	await n8n.cli([
		'import:credentials',
		`--input=${tempJson('flood-credentials.json', [{ id: CREDENTIAL_ID, name: CREDENTIAL_ID, type: 'captioningApi', data: { apiKey: sb.keys.readOnly, baseUrl: sb.baseUrl } }])}`,
	]);
	await n8n.cli([
		'import:workflow',
		`--input=${tempJson('flood.json', pollingWorkflow({ id: FLOOD_WORKFLOW, credentialId: CREDENTIAL_ID, everySeconds, out }))}`,
	]);
}

/** Activates the workflow and waits until its activation has read the service. */
export async function activateFlood(n8n: N8n, sb: Sandbox, since: number): Promise<void> {
	const api = executionsApi(() => n8n);
	await api.activate([FLOOD_WORKFLOW]);
	// Activation reads the open lists and the newest page (3 reads, the poller's key).
	await api.waitFor('the trigger to activate', async () =>
		sb.ledger.requests.filter((r) => r.keyName === 'readOnly' && r.at >= since && r.status !== null)
			.length >= 3
			? true
			: undefined,
	);
}

export interface FloodResult {
	ids: string[];
	/** The SRT files written, by name, and whether each holds its captions exactly once. */
	written: string[];
	writtenOnce: boolean;
	/** From the flood until the last SRT file was there. */
	lastReportedMs: number;
	listReads: number;
	downloads: number;
	refused: number;
	/** Each poll that reported: its jobs, list reads, other reads and 429s since the previous one. */
	polls: Array<{ jobs: number; lists: number; other: number; refused: number }>;
	reported: number;
	/** The longest time without a request to the service while captions were still to download. */
	idleMaxMs: number;
	/** The worst time from the first poll after the flood to a job's report (its SRT written). */
	reportLagMs: number;
}

/** Floods the trigger and waits until every job's SRT is written, then two more polls. */
export async function runFlood(
	n8n: N8n,
	sb: Sandbox,
	out: string,
	options: FloodOptions,
): Promise<FloodResult> {
	const { executions, runDataOf, waitFor } = executionsApi(() => n8n);
	const ids: string[] = [];
	for (let n = 0; n < options.jobs; n++) {
		const res = await fetch(`${sb.baseUrl}/jobs`, {
			method: 'POST',
			headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
			body: JSON.stringify({ media_url: `https://media.example.com/flood-${n}.mp4` }),
		});
		ids.push(((await res.json()) as { id: string }).id);
	}
	sb.setRateLimits({ readPerSecond: options.readLimit });
	const flooded = Date.now();
	try {
		for (const id of ids) sb.completeJob(id);
		const written = () => readdirSync(out).filter((f) => f.endsWith('.srt'));
		await waitFor(
			'every SRT',
			async () => (ids.every((id) => written().includes(`${id}.srt`)) ? true : undefined),
			300000,
		);
		const lastReportedMs = Date.now() - flooded;
		// Two more polls: nothing may come twice.
		await new Promise((r) => setTimeout(r, 2 * options.everySeconds * 1000 + 1000));
		const ours = sb.ledger.requests
			.filter((r) => r.keyName === 'readOnly' && r.at >= flooded)
			.sort((a, b) => a.at - b.at);
		const downloads = sb.ledger.captionDownloads.filter((d) => ids.includes(d.jobId));
		const lastDownload = Math.max(...downloads.map((d) => d.at));
		const working = ours.filter((r) => r.at <= lastDownload);
		let idleMaxMs = 0;
		for (let n = 1; n < working.length; n++)
			idleMaxMs = Math.max(idleMaxMs, working[n].at - working[n - 1].at);
		// Per poll that reported: its jobs and the reads since the previous one's execution (a poll's
		// execution starts when it returned, and polls of the node do not overlap).
		const runs = (await executions(FLOOD_WORKFLOW))
			.filter((e) => Date.parse(e.startedAt!) >= flooded)
			.sort((a, b) => Date.parse(a.startedAt!) - Date.parse(b.startedAt!));
		let since = flooded;
		let reported = 0;
		const polls: FloodResult['polls'] = [];
		for (const run of runs) {
			const started = Date.parse(run.startedAt!);
			const jobs = (await runDataOf(run.id))['Job Finished'][0].data!.main![0]!.length;
			const reads = ours.filter((r) => r.at > since && r.at <= started);
			const lists = reads.filter((r) => r.route === 'GET /jobs').length;
			polls.push({
				jobs,
				lists,
				other: reads.length - lists,
				refused: reads.filter((r) => r.status === 429).length,
			});
			reported += jobs;
			since = started;
		}
		const firstPoll = ours[0]?.at ?? flooded;
		const lastReport = flooded + lastReportedMs;
		return {
			ids,
			written: written(),
			writtenOnce: written().every(
				(file) =>
					(readFileSync(path.join(out, file), 'utf8').match(/^1\n00:00:00,000 --> /gm) ?? [])
						.length === 1,
			),
			lastReportedMs,
			listReads: ours.filter((r) => r.route === 'GET /jobs').length,
			downloads: downloads.length,
			refused: ours.filter((r) => r.status === 429).length,
			polls,
			reported,
			idleMaxMs,
			reportLagMs: lastReport - firstPoll,
		};
	} finally {
		sb.setRateLimits({});
	}
}

export const describePolls = (polls: FloodResult['polls']) =>
	polls
		.map((p) => `${p.jobs} jobs/${p.lists} lists/${p.other} other reads (${p.refused}×429)`)
		.join('; ');
