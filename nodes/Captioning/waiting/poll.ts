// Wait for Completion: Poll. Every job a node run waits for is checked in one round per interval
// (readJobs: a page of the job list holds 100 jobs). Each item's wait ends on its own: when
// its job is completed or cancelled, when its Timeout passes (whatever a round is doing then), or
// when the job cannot be read for good (404, a refused key). A round that fails for some jobs, or
// for all of them (an outage), leaves those waits to the next round.
import type { IExecuteFunctions } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { isFinal } from '../model/events';
import type { Job } from '../model/types';
import { cancelSignal, sleep } from '../transport';
import { readJobs } from '../transport/jobs';

/** The longest n8n's timers wait (a setTimeout: 2^31-1 ms, 24.8 days): Timeout and Poll Interval stay within. */
const TIMER_MS = 2 ** 31 - 1;
export const MAX_TIMEOUT_MINUTES = Math.floor(TIMER_MS / 60000);
export const MAX_INTERVAL_SECONDS = Math.floor(TIMER_MS / 1000);

/** An item's wait for its job (equal orders of a run share the job, each item waits on its own). */
interface ItemWait {
	job: Job;
	intervalMs: number;
	/** The last error reading the job, named if the wait ends by its Timeout. */
	lastError?: Error;
	/** Ends the wait with its outcome (once), and its Timeout's timer. */
	end: (outcome: Job | Error) => void;
}

/** Read errors that a later round would meet again: the job is gone, or the key may not read it. */
const lastsForGood = (error: Error) =>
	error instanceof NodeApiError && ['401', '403', '404'].includes(String(error.httpCode));

export class JobWaiter {
	private readonly waits = new Set<ItemWait>();
	private running = false;

	constructor(private readonly ctx: IExecuteFunctions) {}

	/** Resolves with the job once completed or cancelled; rejects when its Timeout passes. */
	async wait(
		job: Job,
		itemIndex: number,
		intervalSeconds: number,
		timeoutMinutes: number,
	): Promise<Job> {
		if (isFinal(job)) return job;
		const done = new Promise<Job>((resolve, reject) => {
			const timer = new AbortController();
			const wait: ItemWait = {
				job,
				intervalMs: intervalSeconds * 1000,
				end: (outcome) => {
					if (!this.waits.delete(wait)) return;
					timer.abort();
					if (outcome instanceof Error) reject(outcome);
					else resolve(outcome);
				},
			};
			this.waits.add(wait);
			// The Timeout has a timer of its own: it fires whatever a round is doing. Its error names the
			// job as last read, and the last error reading it.
			sleep(timeoutMinutes * 60000, timer.signal).then(
				() => {
					const { progress, id, status } = wait.job;
					const percent = progress === null || progress === undefined ? '' : `, ${progress}% done`;
					const lastRead = wait.lastError
						? ` The last check could not read it: ${wait.lastError.message}.`
						: '';
					const message = `Job ${id} did not finish within ${timeoutMinutes} minutes (status ${status}${percent})`;
					wait.end(
						new NodeOperationError(this.ctx.getNode(), message, {
							itemIndex,
							description: `The job goes on at the service and is not charged again. Raise Timeout, fetch it later with Job → Get, or let a Captioning Trigger start a workflow when it completes.${lastRead}`,
						}),
					);
				},
				() => undefined, // the wait ended otherwise
			);
		});
		if (!this.running) void this.run();
		return await done;
	}

	/** Ends every wait with this error (the batch stopped, or the execution was cancelled). */
	stop(error: Error): void {
		for (const wait of [...this.waits]) wait.end(error);
	}

	private async run(): Promise<void> {
		this.running = true;
		try {
			while (this.waits.size > 0) {
				await sleep(Math.min(...[...this.waits].map((w) => w.intervalMs)), cancelSignal(this.ctx));
				if (this.waits.size > 0) await this.round();
			}
		} catch (error) {
			// Only the execution's cancel ends the rounds (a round's own failures are the jobs').
			this.stop(error as Error);
		} finally {
			this.running = false;
		}
	}

	/** One read of every job waited for, in as few requests as the interface allows. */
	private async round(): Promise<void> {
		const jobs = new Map([...this.waits].map((w) => [w.job.id, w.job]));
		const read = await readJobs(this.ctx, [...jobs.values()]);
		for (const wait of [...this.waits]) {
			const result = read.get(wait.job.id);
			if (result instanceof Error) {
				wait.lastError = result;
				if (lastsForGood(result)) wait.end(result);
			} else if (result) {
				wait.job = result;
				wait.lastError = undefined;
				if (isFinal(result)) wait.end(result);
			}
		}
	}
}
