// n8n killed (SIGKILL) while the triggers work, in real n8n over HTTPS (npm run test:e2e): nothing
// the service was told is received may be lost. n8n 2.x runs with
// N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE=true, as docs/triggers.md recommends for bursts: with n8n's
// defaults a 2-core machine running the suite after the others can fall behind the sender's 10 s
// for the whole burst and answer none (n8n's faults, CONTRIBUTING); whether an answered event has
// an execution does not depend on it, and the bench (crashBurst) measures the kill with the defaults.
// - The Captioning Trigger (Verify Events, Attach Captions SRT → a file per job) under a burst of
//   60 completions (the bench's crashBurst kills n8n under 600, with n8n's defaults), each delivered
//   once and redelivered when a try fails; n8n is killed once a third have been answered 200, then
//   started again. No event runs twice, and a crashed execution's Retry writes the captions. How
//   many answered events have no execution is printed: n8n itself loses a few (n8n's faults).
// - The Captioning Polling Trigger (Attach Captions SRT, polls every 10 s) killed while the execution
//   of a poll downloads the captions of 40 jobs: every job is in an execution n8n stored, or is
//   reported again.
// n8n 2.x answers a webhook once the execution is stored; n8n 1.x answers just before it stores it,
// as it does for its own Webhook node: there an event answered in that moment can be lost, which
// this suite prints rather than asserts. Versions: N8N_E2E_VERSIONS (default 2.41.1 and 1.122.5).
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { tlsPair } from '../helpers/https';
import type { Sandbox } from '../helpers/sandbox';
import { createSandbox } from '../helpers/sandbox';
import { activateBurstWorkflows, importBurstWorkflows, srtPath } from '../real/burst';
import type { Execution } from '../real/executions';
import { executionsApi } from '../real/executions';
import { pollingWorkflow } from '../real/flood';
import { killMidBurst } from '../real/killedBurst';
import type { N8n } from '../real/instance';
import { createN8n, installN8n, tempFolder, tempJson } from '../real/instance';

const VERSIONS = (process.env.N8N_E2E_VERSIONS ?? '2.41.1,1.122.5').split(',').filter(Boolean);
const BURST = 60;
const POLLED = 40;
const POLL_WORKFLOW = 'wfKilledPolling';
const POLL_CREDENTIAL = 'captioningKilledPoll';
/** The trigger node of each workflow: the node whose items are the jobs. */
const NODE_OF: Record<string, string> = { [POLL_WORKFLOW]: 'Job Finished' };

describe.each(VERSIONS)('n8n %s killed mid-run', (version) => {
	let n8n: N8n;
	let sb: Sandbox;
	const captionsTo = tempFolder('captioning-killed-srt-');
	const polledTo = path.join(captionsTo, 'polled');
	const { waitFor, newestId, jobsByExecution, activate, untilEnded } = executionsApi(() => n8n);
	/** Once no execution of the workflow runs: its executions since `afterId`, and the jobs they hold. */
	const stored = async (workflowId: string, afterId: number, killedAt: number) => {
		const left = await untilEnded(workflowId, undefined, killedAt);
		const all = await jobsByExecution(workflowId, NODE_OF[workflowId], afterId);
		return {
			all,
			left: left.length,
			jobs: new Set(all.flatMap((e) => e.jobs)),
		};
	};

	beforeAll(
		async () => {
			sb = await createSandbox({ timing: null, webhook: { ca: tlsPair().cert } });
			mkdirSync(polledTo, { recursive: true });
			n8n = await createN8n(
				await installN8n(version),
				[captionsTo],
				version.startsWith('2.') ? { N8N_EXPRESSION_ENGINE_LAZY_ACQUIRE: 'true' } : {},
			);
			importBurstWorkflows(n8n, sb, captionsTo);
			n8n.importCredentials([
				{
					id: POLL_CREDENTIAL,
					name: POLL_CREDENTIAL,
					type: 'captioningApi',
					data: { apiKey: sb.keys.readOnly, baseUrl: sb.baseUrl },
				},
			]);
			n8n.importWorkflows([
				tempJson(
					'killed-poll.json',
					pollingWorkflow({
						id: POLL_WORKFLOW,
						credentialId: POLL_CREDENTIAL,
						everySeconds: 10,
						out: polledTo,
						filters: { metadataKey: 'suite', metadataValue: 'killed-poll' },
					}),
				),
			]);
			await n8n.start();
			await activateBurstWorkflows(n8n, true);
			await activate([POLL_WORKFLOW]);
		},
		40 * 60 * 1000,
	);

	afterAll(async () => {
		await n8n?.stop();
		await sb?.close();
	});

	test(`the webhook trigger: ${BURST} completions with Attach Captions, n8n killed once a third are answered: no event runs twice, every job reaches the workflow, a crashed execution's Retry writes its captions`, async () => {
		const killed = await killMidBurst(n8n, sb, BURST);
		const { answeredBeforeKill, answered, executions, crashed, leftNew, lost } = killed;
		console.log(
			`n8n ${version}, killed mid-burst: ${answeredBeforeKill} events answered 200 before the kill, ${answered.size} of ${BURST} in all; ${executions.length} executions (${crashed.length} crashed, ${leftNew} left new and ${killed.leftRunning} left running by n8n); answered events with no execution: ${lost.length}; jobs with two successful executions: ${killed.ranTwice.length} (answered 200 before the kill: ${killed.ranTwiceAnsweredBeforeKill.length})`,
		);
		// Printed, not asserted: n8n itself can lose a few (CONTRIBUTING, "n8n's faults": 2.41.1 too,
		// measured on the package's earlier versions alike).
		// A second run only for an event whose 2xx never reached the sender (it delivered again).
		expect(killed.ranTwiceAnsweredBeforeKill).toEqual([]);
		// Every event reached the workflow in the end (the service's tries after the restart).
		expect(answered.size).toBe(BURST);
		// A crashed execution holds its event: its Retry writes the captions.
		if (crashed.length > 0) {
			const [job] = crashed[0].jobs;
			const retry = await n8n.rest<Execution>('POST', `/executions/${crashed[0].id}/retry`, {
				loadWorkflow: false,
			});
			expect(retry.status).toBe(200);
			await waitFor(
				'the retry to write the captions',
				async () => (existsSync(srtPath(captionsTo, job)) ? true : undefined),
				60000,
			);
		}
	}, 600000);

	test(`the polling trigger: n8n killed while a poll's execution downloads ${POLLED} jobs' captions: every job is in an execution n8n stored, or reported again`, async () => {
		const ids: string[] = [];
		for (let n = 0; n < POLLED; n++) {
			const res = await fetch(`${sb.baseUrl}/jobs`, {
				method: 'POST',
				headers: { authorization: `Bearer ${sb.keys.full}`, 'content-type': 'application/json' },
				body: JSON.stringify({
					media_url: `https://media.example.com/killed-poll-${n}.mp4`,
					metadata: { suite: 'killed-poll' },
				}),
			});
			ids.push(((await res.json()) as { id: string }).id);
		}
		const since = await newestId();
		// Four reads a second: the execution's downloads take about ten seconds.
		sb.setRateLimits({ readPerSecond: 4 });
		try {
			for (const id of ids) sb.completeJob(id);
			const written = () => readdirSync(polledTo).filter((f) => f.endsWith('.srt'));
			// Killed while the poll's execution downloads (the files are written once every download is done).
			const downloaded = () =>
				sb.ledger.captionDownloads.filter((d) => ids.includes(d.jobId)).length;
			await waitFor(
				'the downloads under way',
				async () => (downloaded() >= 8 ? true : undefined),
				120000,
			);
			const killedAt = Date.now();
			await n8n.kill();
			const before = downloaded();
			await n8n.start();
			// Polls after the restart report what no stored execution holds; then every job is in one.
			// Read again until it is, for at most 25 s after the start (it used to be read once then).
			const until = Date.now() + 25000;
			let found = await stored(POLL_WORKFLOW, since, killedAt);
			while (ids.some((id) => !found.jobs.has(id)) && Date.now() < until) {
				await new Promise((r) => setTimeout(r, Math.min(2000, Math.max(0, until - Date.now()))));
				found = await stored(POLL_WORKFLOW, since, killedAt);
			}
			const { all, left, jobs } = found;
			const lost = ids.filter((id) => !jobs.has(id));
			const statuses = all.map((e) => `${e.id} ${e.status} (${e.jobs.length} jobs)`).join(', ');
			console.log(
				`n8n ${version}, killed mid-report: ${before} of ${POLLED} captions downloaded before the kill; executions: ${statuses}; ${left} left new or running by n8n; jobs in no execution: ${lost.length}`,
			);
			expect(lost).toEqual([]);
			// An execution the kill ended (crashed, or failed) is retried, as a user would: its Retry
			// writes what it had not written.
			for (const execution of all.filter((e) => ['crashed', 'error'].includes(e.status)))
				expect(
					(await n8n.rest('POST', `/executions/${execution.id}/retry`, { loadWorkflow: false }))
						.status,
				).toBe(200);
			await waitFor(
				`every SRT (executions: ${statuses})`,
				async () => (ids.every((id) => written().includes(`${id}.srt`)) ? true : undefined),
				120000,
			);
			for (const id of ids)
				expect(readFileSync(path.join(polledTo, `${id}.srt`), 'utf8')).toMatch(
					/^1\n00:00:00,000 --> /,
				);
		} finally {
			sb.setRateLimits({});
		}
	}, 600000);
});
