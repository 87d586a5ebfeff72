// The Captioning Polling Trigger under a flood, in real n8n (npm run test:e2e): 300 jobs finish at
// once, the service allows 10 reads a second, Attach Captions downloads each job's SRT, and n8n polls
// every 10 s (six Poll Times a minute): the work of one poll outlasts the interval, and n8n starts
// the next poll anyway. Every job must be reported once and its SRT written once. Measures the list
// reads, the reads of each poll that reported (a poll's execution starts when its poll returned,
// and polls of the node do not overlap, so the reads since the previous poll's execution are its
// own) and the time until the last job was reported. Versions: N8N_E2E_VERSIONS (default 2.41.1
// and 1.122.5).
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import { executionsApi } from './executions';
import type { N8n } from './n8n';
import { createN8n, installN8n, tempFolder, tempJson } from './n8n';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const FLOOD = 300;

describe.each(VERSIONS)('n8n %s: the polling trigger under a flood', (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	const work = tempFolder('captioning-flood-');
	const out = path.join(work, 'polled');
	const { waitFor, activateOn1x, executions, runDataOf } = executionsApi(() => n8n);

	beforeAll(async () => {
		mkdirSync(out, { recursive: true });
		sb = await createSandbox({ timing: null });
		n8n = await createN8n(await installN8n(version), [work]);
		await n8n.cli(['import:credentials', `--input=${tempJson('credentials.json', [{ id: 'captioningFlood', name: 'captioningFlood', type: 'captioningApi', data: { apiKey: sb.keys.readOnly, baseUrl: sb.baseUrl } }])}`]);
		const credentials = { captioningApi: { id: 'captioningFlood', name: 'captioningFlood' } };
		await n8n.cli([
			'import:workflow',
			`--input=${tempJson('flood.json', {
				id: 'wfPollingFlood1',
				name: 'Polling under a flood',
				versionId: 'wfPollingFlood1-v1',
				active: false,
				settings: { executionOrder: 'v1' },
				nodes: [
					{
						id: 'flood-trigger',
						name: 'Job Finished',
						type: 'n8n-nodes-captioning.captioningPollingTrigger',
						typeVersion: 1,
						position: [0, 0],
						// Every 10 seconds: n8n refuses a poll interval under a minute, but takes six entries,
						// each once a minute at its own second.
						parameters: {
							pollTimes: { item: [0, 10, 20, 30, 40, 50].map((second) => ({ mode: 'custom', cronExpression: `${second} * * * * *` })) },
							events: ['job.completed'],
							filters: {},
							attachCaptions: true,
							formats: ['srt'],
							binaryPropertyName: 'data',
						},
						credentials,
					},
					// Append: a job reported twice would write its captions twice into its file.
					{ id: 'flood-write', name: 'Write SRT', type: 'n8n-nodes-base.readWriteFile', typeVersion: 1, position: [220, 0], parameters: { operation: 'write', fileName: `=${out}/{{ $json.id }}.srt`, dataPropertyName: 'data', options: { append: true } } },
				],
				connections: { 'Job Finished': { main: [[{ node: 'Write SRT', type: 'main', index: 0 }]] } },
			})}`,
		]);
		if (version.startsWith('2.')) await n8n.cli(['publish:workflow', '--id=wfPollingFlood1']);
		const since = Date.now();
		await n8n.start();
		await activateOn1x(['wfPollingFlood1']);
		// Activation reads the open lists, the newest job and the open lists again (the poller's key).
		await waitFor('the trigger to activate', async () => (sb.ledger.requests.filter((r) => r.keyName === 'readOnly' && r.at >= since && r.status !== null).length >= 5 ? true : undefined));
	}, 40 * 60 * 1000);

	afterAll(async () => {
		await n8n?.stop();
		await sb?.close();
	});

	test(`${FLOOD} jobs finish at once under a read limit of 10/s, polls every 10 s: each job reported once, each SRT written once`, async () => {
		const ids: string[] = [];
		for (let n = 0; n < FLOOD; n++) {
			const res = await fetch(`${sb.baseUrl}/jobs`, { method: 'POST', headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' }, body: JSON.stringify({ media_url: `https://media.example.com/flood-${n}.mp4` }) });
			ids.push(((await res.json()) as { id: string }).id);
		}
		sb.setRateLimits({ readPerSecond: 10 });
		const flooded = Date.now();
		for (const id of ids) sb.completeJob(id);
		const written = () => readdirSync(out).filter((f) => f.endsWith('.srt'));
		await waitFor('every SRT', async () => (written().length === FLOOD ? true : undefined), 240000);
		const lastMs = Date.now() - flooded;
		// Two more polls: nothing may come twice.
		await new Promise((r) => setTimeout(r, 21000));
		for (const file of written()) expect(readFileSync(path.join(out, file), 'utf8').match(/^1\n00:00:00,000 --> /gm)).toHaveLength(1);
		expect(written().sort()).toEqual(ids.map((id) => `${id}.srt`).sort());
		const lists = sb.ledger.requests.filter((r) => r.keyName === 'readOnly' && r.route === 'GET /jobs' && r.at >= flooded);
		const downloads = sb.ledger.captionDownloads.filter((d) => ids.includes(d.jobId));
		expect(downloads).toHaveLength(FLOOD);
		const refused = sb.ledger.requests.filter((r) => r.keyName === 'readOnly' && r.at >= flooded && r.status === 429).length;
		// Per poll that reported: the jobs it reported and the reads since the previous one's execution.
		const runs = (await executions('wfPollingFlood1')).filter((e) => Date.parse(e.startedAt!) >= flooded).sort((a, b) => Date.parse(a.startedAt!) - Date.parse(b.startedAt!));
		let since = flooded;
		let reported = 0;
		const polls: string[] = [];
		for (const run of runs) {
			const started = Date.parse(run.startedAt!);
			const jobs = (await runDataOf(run.id))['Job Finished'][0].data!.main![0]!.length;
			const reads = sb.ledger.requests.filter((r) => r.keyName === 'readOnly' && r.at > since && r.at <= started);
			const listReads = reads.filter((r) => r.route === 'GET /jobs').length;
			polls.push(`${jobs} jobs/${listReads} lists/${reads.length - listReads} other reads (${reads.filter((r) => r.status === 429).length}×429)`);
			reported += jobs;
			since = started;
		}
		expect(reported).toBe(FLOOD);
		console.log(`n8n ${version}: a flood of ${FLOOD} at 10 reads/s, polls every 10 s: last job reported after ${(lastMs / 1000).toFixed(1)} s; ${lists.length} list reads, ${downloads.length} downloads (each once), ${refused} answered 429; ${runs.length} polls reported, each: ${polls.join('; ')}`);
		sb.setRateLimits({});
	}, 360000);
});
