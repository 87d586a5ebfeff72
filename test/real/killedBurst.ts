// n8n killed (SIGKILL) in the middle of a burst at the Captioning Trigger with Attach Captions (the
// burst workflows of ./burst.ts), for the e2e suite (test/e2e/killedMidRun.test.ts) and the bench:
// `count` completions within two seconds, each delivered once and again while a try fails (about
// 90 s of tries, long enough for n8n to come back); n8n killed once a third are answered 200, then
// started again. Which answered events have no execution at all, stored or crashed?
import type { Sandbox } from '../helpers/sandbox';
import { BURST_CAPTIONS_WORKFLOW, prepareBurst } from './burst';
import type { Execution } from './executions';
import { executionsApi } from './executions';
import type { N8n } from './instance';

export interface KilledBurst {
	answeredBeforeKill: number;
	/** Jobs whose event was answered 200 by some try. */
	answered: Set<string>;
	/** Every execution of the workflow since the burst, with the job each holds. */
	executions: Array<Execution & { jobs: string[] }>;
	crashed: Array<Execution & { jobs: string[] }>;
	/** Executions n8n stored but never started (killed in between): their events were not answered. */
	leftNew: number;
	/** Executions killed before their first node that n8n's recovery left "running" (2.41.1). */
	leftRunning: number;
	/** Answered events with no execution at all. */
	lost: string[];
	/** Jobs with two or more successful executions (a run each), and those of them answered 200 before the kill. */
	ranTwice: string[];
	ranTwiceAnsweredBeforeKill: string[];
}

export async function killMidBurst(n8n: N8n, sb: Sandbox, count: number): Promise<KilledBurst> {
	const { waitFor, newestId, jobsByExecution, untilEnded } = executionsApi(() => n8n);
	const ids = await prepareBurst(n8n, sb, 'triggerCaptions', count);
	const since = await newestId();
	sb.resetLedger();
	sb.setWebhook({ duplicate: false, attempts: 30 });
	const answered = () =>
		new Set(sb.ledger.deliveries.filter((d) => d.status === 200).map((d) => d.jobId));
	try {
		const completing = (async () => {
			for (const id of ids) {
				sb.completeJob(id);
				await new Promise((r) => setTimeout(r, 2000 / count));
			}
		})();
		await waitFor(
			'a third of the events answered',
			async () => (answered().size >= count / 3 ? true : undefined),
			120000,
		);
		const answeredBeforeKill = answered().size;
		const killedAt = Date.now();
		await n8n.kill();
		await completing;
		await n8n.start();
		await sb.settleDeliveries();
		const left = await untilEnded(BURST_CAPTIONS_WORKFLOW, undefined, killedAt);
		const executions = await jobsByExecution(BURST_CAPTIONS_WORKFLOW, 'Job Event', since);
		const held = new Set(executions.flatMap((e) => e.jobs));
		const runs = new Map<string, number>();
		for (const e of executions.filter((x) => x.status === 'success'))
			for (const job of e.jobs) runs.set(job, (runs.get(job) ?? 0) + 1);
		const ranTwice = [...runs].filter(([, n]) => n > 1).map(([job]) => job);
		const answeredBefore = new Set(
			sb.ledger.deliveries
				.filter((d) => d.status === 200 && d.at + (d.ms ?? 0) < killedAt)
				.map((d) => d.jobId),
		);
		return {
			answeredBeforeKill,
			answered: answered(),
			executions,
			crashed: executions.filter((e) => e.status === 'crashed'),
			leftNew: left.filter((e) => e.status === 'new').length,
			leftRunning: left.filter((e) => e.status === 'running').length,
			lost: [...answered()].filter((id) => !held.has(id)),
			ranTwice,
			ranTwiceAnsweredBeforeKill: ranTwice.filter((id) => answeredBefore.has(id)),
		};
	} finally {
		sb.setWebhook({ attempts: 1 });
	}
}
