// Waiting for jobs inside the node (Wait for Completion: Poll). All jobs a node run waits for are
// checked together, one round per interval: a round reads the job list (newest first, 100 a page)
// as far back as the oldest pending job, and reads one by one only what those pages did not hold,
// so 100 pending jobs cost a couple of reads, not 100 (readJobsTogether, which On Webhook's events
// use too). Sleeps use n8n's sleep, so cancelling the execution ends the wait.
import type { IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { isFinal } from '../model/events';
import type { Job } from '../model/types';
import { cancelSignal, pause } from '../transport';
import { readJobsTogether } from '../transport/jobs';

/** Reads of a round come before any item's request (priority in the node run's pacing). */
const ROUND_PRIORITY = -1;

interface Pending {
	job: Job;
	itemIndex: number;
	intervalMs: number;
	deadline: number;
	timeoutMinutes: number;
	resolve: (job: Job) => void;
	reject: (error: Error) => void;
}

export class JobWaiter {
	private readonly pending = new Map<string, Pending>();
	private running = false;
	/** Rounds and reads so far (what a test or the bench can count). */
	rounds = 0;

	constructor(private readonly ctx: IExecuteFunctions) {}

	/** Resolves with the job once completed or cancelled; rejects when its Timeout passes. */
	async wait(job: Job, itemIndex: number, intervalSeconds: number, timeoutMinutes: number): Promise<Job> {
		if (isFinal(job)) return job;
		const done = new Promise<Job>((resolve, reject) => {
			this.pending.set(job.id, {
				job,
				itemIndex,
				intervalMs: intervalSeconds * 1000,
				deadline: Date.now() + timeoutMinutes * 60000,
				timeoutMinutes,
				resolve,
				reject,
			});
		});
		if (!this.running) void this.run();
		return await done;
	}

	/** Ends every wait with this error (the batch stopped, or the execution was cancelled). */
	stop(error: Error): void {
		for (const entry of this.pending.values()) entry.reject(error);
		this.pending.clear();
	}

	private async run(): Promise<void> {
		this.running = true;
		try {
			while (this.pending.size > 0) {
				const entries = [...this.pending.values()];
				const interval = Math.min(...entries.map((e) => e.intervalMs));
				const untilDeadline = Math.min(...entries.map((e) => e.deadline)) - Date.now();
				await pause(Math.max(0, Math.min(interval, untilDeadline)), cancelSignal(this.ctx));
				if (this.pending.size === 0) break;
				await this.round();
				this.expire();
			}
		} catch (error) {
			this.stop(error as Error);
		} finally {
			this.running = false;
		}
	}

	/** One read of every pending job, in as few requests as the interface allows. */
	private async round(): Promise<void> {
		this.rounds += 1;
		const read = await readJobsTogether(this.ctx, [...this.pending.values()].map((e) => e.job), { priority: ROUND_PRIORITY });
		for (const job of read.values()) this.update(job);
	}

	private update(job: Job): void {
		const entry = this.pending.get(job.id);
		if (!entry) return;
		entry.job = job;
		if (isFinal(job)) {
			this.pending.delete(job.id);
			entry.resolve(job);
		}
	}

	/** Jobs past their Timeout fail their own item; the others go on waiting. */
	private expire(): void {
		const now = Date.now();
		for (const [id, entry] of this.pending) {
			if (now < entry.deadline) continue;
			this.pending.delete(id);
			const { job } = entry;
			const progress = job.progress === null ? '' : `, ${job.progress}% done`;
			entry.reject(
				new NodeOperationError(this.ctx.getNode(), `Job ${job.id} did not finish within ${entry.timeoutMinutes} minutes (status ${job.status}${progress})`, {
					itemIndex: entry.itemIndex,
					description: 'The job goes on at the service and is not charged again. Raise Timeout, fetch it later with Job → Get, or let a Captioning Trigger start a workflow when it completes.',
				}),
			);
		}
	}
}
