// Wait for Completion: Poll. Every job a node run waits for is checked in one round per interval
// (readJobsSettled: a page of the job list holds 100 jobs). Each item's wait ends on its own: when
// its job is completed or cancelled, when its Timeout passes (whatever a round is doing then), or
// when the job cannot be read for good (404, a refused key). A round that fails for some jobs, or
// for all of them (an outage), leaves those waits to the next round.
import type { IExecuteFunctions } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { isFinal } from '../model/events';
import type { Job } from '../model/types';
import { cancelSignal, sleep } from '../transport';
import { readJobsSettled } from '../transport/jobs';

/** The longest n8n's timers wait (a setTimeout: 2^31-1 ms, 24.8 days): Timeout and Poll Interval stay within. */
const TIMER_MS = 2 ** 31 - 1;
export const MAX_TIMEOUT_MINUTES = Math.floor(TIMER_MS / 60000);
export const MAX_INTERVAL_SECONDS = Math.floor(TIMER_MS / 1000);

interface ItemWait {
	itemIndex: number;
	intervalMs: number;
	deadline: number;
	timeoutMinutes: number;
	resolve: (job: Job) => void;
	reject: (error: Error) => void;
	/** Ends the Timeout's timer. */
	stopTimer: AbortController;
}

/** A job and the waits of the items that ordered it (equal orders of a run share one job). */
interface Watched {
	job: Job;
	waits: ItemWait[];
	/** The last error reading it, named if its waits end by Timeout. */
	lastError?: Error;
}

/** Read errors that a later round would meet again: the job is gone, or the key may not read it. */
const lastsForGood = (error: Error) =>
	error instanceof NodeApiError && ['401', '403', '404'].includes(String(error.httpCode));

export class JobWaiter {
	private readonly watched = new Map<string, Watched>();
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
			let watched = this.watched.get(job.id);
			if (!watched) this.watched.set(job.id, (watched = { job, waits: [] }));
			const wait: ItemWait = {
				itemIndex,
				intervalMs: intervalSeconds * 1000,
				deadline: Date.now() + timeoutMinutes * 60000,
				timeoutMinutes,
				resolve,
				reject,
				stopTimer: new AbortController(),
			};
			watched.waits.push(wait);
			this.startTimer(job.id, wait);
		});
		if (!this.running) void this.run();
		return await done;
	}

	/** Ends every wait with this error (the batch stopped, or the execution was cancelled). */
	stop(error: Error): void {
		for (const id of [...this.watched.keys()]) this.end(id, (wait) => wait.reject(error));
	}

	/** Ends the waits of one job (all of them, or one) and forgets the job once none is left. */
	private end(id: string, settle: (wait: ItemWait) => void, only?: ItemWait): void {
		const watched = this.watched.get(id);
		if (!watched) return;
		for (const wait of watched.waits.filter((w) => !only || w === only)) {
			wait.stopTimer.abort();
			settle(wait);
		}
		watched.waits = only ? watched.waits.filter((w) => w !== only) : [];
		if (watched.waits.length === 0) this.watched.delete(id);
	}

	/** The wait's Timeout, kept by a timer of its own: it fires whatever a round is doing. */
	private startTimer(id: string, wait: ItemWait): void {
		sleep(Math.max(0, wait.deadline - Date.now()), wait.stopTimer.signal).then(
			() => this.end(id, (w) => w.reject(this.timeoutError(id, w)), wait),
			() => undefined, // stopped: the wait ended otherwise
		);
	}

	private timeoutError(id: string, wait: ItemWait): NodeOperationError {
		const watched = this.watched.get(id);
		const job = watched?.job;
		const progress =
			job?.progress === null || job?.progress === undefined ? '' : `, ${job.progress}% done`;
		const lastRead = watched?.lastError
			? ` The last check could not read it: ${watched.lastError.message}.`
			: '';
		return new NodeOperationError(
			this.ctx.getNode(),
			`Job ${id} did not finish within ${wait.timeoutMinutes} minutes (status ${job?.status ?? 'unknown'}${progress})`,
			{
				itemIndex: wait.itemIndex,
				description: `The job goes on at the service and is not charged again. Raise Timeout, fetch it later with Job → Get, or let a Captioning Trigger start a workflow when it completes.${lastRead}`,
			},
		);
	}

	private async run(): Promise<void> {
		this.running = true;
		try {
			while (this.watched.size > 0) {
				const waits = [...this.watched.values()].flatMap((w) => w.waits);
				await sleep(Math.min(...waits.map((w) => w.intervalMs)), cancelSignal(this.ctx));
				if (this.watched.size > 0) await this.round();
			}
		} catch (error) {
			// Only the execution's cancel ends the rounds (a round's own failures are the jobs').
			this.stop(error as Error);
		} finally {
			this.running = false;
		}
	}

	/** One read of every watched job, in as few requests as the interface allows. */
	private async round(): Promise<void> {
		const jobs = [...this.watched.values()].map((w) => w.job);
		const read = await readJobsSettled(this.ctx, jobs);
		for (const [id, result] of read) {
			const watched = this.watched.get(id);
			if (!watched) continue;
			if (result instanceof Error) {
				watched.lastError = result;
				if (lastsForGood(result)) this.end(id, (w) => w.reject(result));
				continue;
			}
			watched.job = result;
			watched.lastError = undefined;
			if (isFinal(result)) this.end(id, (w) => w.resolve(result));
		}
	}
}
