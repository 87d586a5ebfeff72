// The Captioning Polling Trigger in real n8n (npm run test:e2e), polling every 20 s, two workflows
// at once, each on a workspace of its own: a job the list shows 70 s after its creation, below 150
// newer jobs that complete meanwhile, is reported once when it completes, and each of the 150 once;
// a workspace of 3,300 queued jobs the Filters exclude (created over 6 hours) above 4 older
// followed ones: quiet polls read at most 2 pages on average (the sandbox's ledger), and the 4 are
// reported once when they complete. Each reported job's SRT is appended to a file of its own: a job
// reported twice would show twice in it. Versions: N8N_E2E_VERSIONS (default 2.41.1 and 1.122.5).
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import type { LedgerRequest, Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import { executionsApi } from '../real/executions';
import { pollingWorkflow } from '../real/flood';
import type { N8n } from '../real/instance';
import { createN8n, installN8n, tempFolder, tempJson } from '../real/instance';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const EVERY_SECONDS = 20;
const LATE_MS = 70000;
const NEWER = 150;
const QUEUED = 3300;
const FOLLOWED = 4;
const QUIET = 6;
const HOUR = 3600000;

/** The lagging list in the first workspace (its read-only key), the busy workspace in the other. */
const LATE = { workflow: 'wfPollLate1', key: 'readOnly' } as const;
const BUSY = { workflow: 'wfPollBusy1', key: 'otherWorkspace' } as const;

const sleep = async (ms: number) => await new Promise((r) => setTimeout(r, ms));

async function order(sb: Sandbox, key: string, metadata: Record<string, string> = {}) {
	const res = await fetch(`${sb.baseUrl}/jobs`, {
		method: 'POST',
		headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
		body: JSON.stringify({ media_url: 'https://media.example.com/lag.mp4', metadata }),
	});
	return ((await res.json()) as { id: string }).id;
}

/** How many times each job's captions were appended to its SRT file, by job id. */
function written(folder: string): Record<string, number> {
	return Object.fromEntries(
		readdirSync(folder).map((file) => [
			file.replace(/\.srt$/, ''),
			(readFileSync(path.join(folder, file), 'utf8').match(/^1\n00:00:00,000 --> /gm) ?? []).length,
		]),
	);
}

/** A key's list reads, grouped by poll (a poll's reads come within a few seconds, polls 20 s apart). */
function pollsOf(sb: Sandbox, key: string, since: number): LedgerRequest[][] {
	const polls: LedgerRequest[][] = [];
	for (const read of sb.ledger.requests.filter(
		(r) => r.keyName === key && r.at >= since && r.method === 'GET' && !/captions/.test(r.path),
	)) {
		const last = polls.at(-1)?.at(-1);
		if (last && read.at - last.at < 5000) polls.at(-1)!.push(read);
		else polls.push([read]);
	}
	return polls;
}

describe.each(VERSIONS)(
	'n8n %s: the polling trigger, a lagging list, a busy workspace',
	(version) => {
		let n8n: N8n;
		let sb: Sandbox;
		const work = tempFolder('captioning-lag-');
		const out = { late: path.join(work, 'late'), busy: path.join(work, 'busy') };
		const api = executionsApi(() => n8n);
		let activated = 0;
		const followed: string[] = [];
		let late: Promise<{ late: string; newer: string[] }>;
		let busy: Promise<LedgerRequest[][]>;

		/**
		 * Waits until the files of these jobs are written, then two polls more. Otherwise it fails
		 * with what n8n ran of the workflow: each execution's status, and the errors of failed ones.
		 */
		const reported = async (folder: string, ids: string[], workflowId: string) => {
			const missing = () => ids.filter((id) => !written(folder)[id]);
			await api
				.waitFor(`${ids.length} SRT files`, async () => (missing().length ? undefined : true))
				.catch(async (error: Error) => {
					const left = missing();
					const runs = (await api.executions(workflowId)).map((e) => `${e.id} ${e.status}`);
					const errors = await api.errorsOf(workflowId);
					throw new Error(
						`${left.length} missing: ${left.join(', ')}; executions of ${workflowId}: ${runs.join(', ')}; their errors: ${errors.join(' | ')}; ${error.message}`,
					);
				});
			await sleep(2 * EVERY_SECONDS * 1000 + 2000);
		};

		/** The lagging list: the job is hidden from the list (and reads) for 70 s, then completes. */
		const runLate = async () => {
			const id = await order(sb, sb.keys.full);
			sb.hideJob(id);
			const created = Date.now();
			const newer: string[] = [];
			for (let n = 0; n < NEWER; n++) newer.push(await order(sb, sb.keys.full));
			newer.forEach((job) => sb.completeJob(job));
			await sleep(created + LATE_MS - Date.now());
			sb.showJob(id);
			await sleep(EVERY_SECONDS * 1000 + 2000);
			sb.completeJob(id);
			await reported(out.late, [...newer, id], LATE.workflow);
			return { late: id, newer };
		};

		/** The busy workspace: quiet polls, then the followed jobs complete. */
		const runBusy = async () => {
			await api.waitFor(
				'six quiet polls',
				async () => (pollsOf(sb, BUSY.key, activated).length > QUIET + 1 ? true : undefined),
				(QUIET + 3) * EVERY_SECONDS * 1000,
			);
			const polls = pollsOf(sb, BUSY.key, activated).slice(1, QUIET + 1);
			followed.forEach((id) => sb.completeJob(id));
			await reported(out.busy, followed, BUSY.workflow);
			return polls;
		};

		beforeAll(
			async () => {
				sb = await createSandbox({ timing: null });
				sb.setCreationTime(new Date(Date.now() - 7 * HOUR).toISOString());
				for (let n = 0; n < FOLLOWED; n++)
					followed.push(await order(sb, sb.keys.otherWorkspace, { team: 'video' }));
				sb.setCreationTime(null);
				const marketing = { team: 'marketing' };
				sb.seedHistory(QUEUED, {
					status: 'queued',
					metadata: marketing,
					workspace: 1,
					withinMs: 6 * HOUR,
				});
				n8n = await createN8n(await installN8n(version), [work]);
				const credential = (id: string, key: string) => ({
					id,
					name: id,
					type: 'captioningApi',
					data: { apiKey: key, baseUrl: sb.baseUrl },
				});
				n8n.importCredentials([
					credential('pollLateKey', sb.keys[LATE.key]),
					credential('pollBusyKey', sb.keys[BUSY.key]),
				]);
				const workflow = (id: string, credentialId: string, folder: string, filters = {}) => {
					mkdirSync(folder, { recursive: true });
					return tempJson(
						`${id}.json`,
						pollingWorkflow({
							id,
							credentialId,
							everySeconds: EVERY_SECONDS,
							out: folder,
							filters,
						}),
					);
				};
				n8n.importWorkflows([
					workflow(LATE.workflow, 'pollLateKey', out.late),
					workflow(BUSY.workflow, 'pollBusyKey', out.busy, {
						metadataKey: 'team',
						metadataValue: 'video',
					}),
				]);
				await n8n.start();
				activated = Date.now();
				await api.activate([LATE.workflow, BUSY.workflow]);
				// Activation reads the open lists and the newest pages of each workspace.
				await api.waitFor('both activations', async () =>
					[LATE.key, BUSY.key].every((key) => pollsOf(sb, key, activated).length > 0)
						? true
						: undefined,
				);
				late = runLate();
				busy = runBusy();
				// Each is awaited by its test; meanwhile a failure is not an unhandled rejection.
				late.catch(() => undefined);
				busy.catch(() => undefined);
			},
			20 * 60 * 1000,
		);

		afterAll(async () => {
			await n8n?.stop();
			await sb?.close();
		});

		test(`a job the list shows ${LATE_MS / 1000} s after its creation, below ${NEWER} newer ones that complete meanwhile: reported once when it completes, each of the ${NEWER} once`, async () => {
			const { late: id, newer } = await late;
			const files = written(out.late);
			expect(Object.keys(files).sort()).toEqual([...newer, id].sort());
			expect(Object.values(files).every((times) => times === 1)).toBe(true);
		}, 600000);

		test(`${QUEUED.toLocaleString('en')} queued jobs the Filters exclude above ${FOLLOWED} older followed ones: ${QUIET} quiet polls read at most 2 pages on average, none by id; the ${FOLLOWED} are reported once when they complete`, async () => {
			const polls = await busy;
			const reads = polls.flat();
			console.log(
				`n8n ${version}: ${QUIET} quiet polls on a workspace of ${QUEUED.toLocaleString('en')} queued jobs the Filters exclude read ${polls.map((poll) => poll.length).join(', ')} pages`,
			);
			expect(polls).toHaveLength(QUIET);
			expect(reads.filter((r) => r.route !== 'GET /jobs')).toEqual([]);
			expect(reads.length).toBeLessThanOrEqual(2 * QUIET);
			expect(written(out.busy)).toEqual(Object.fromEntries(followed.map((id) => [id, 1])));
		}, 600000);
	},
);
