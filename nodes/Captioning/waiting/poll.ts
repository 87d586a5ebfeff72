// Waiting for jobs inside the node (Wait for Completion: Poll). All jobs a node run waits for are
// checked together, one round per interval: a round reads the job list (newest first, 100 a page)
// as far back as the oldest pending job, and reads one by one only what those pages did not hold,
// so 100 pending jobs cost a couple of reads, not 100 (readJobsTogether, which On Webhook's events
// use too). Sleeps use n8n's sleep, so cancelling the execution ends the wait.
import type { IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import type { ApiContext } from '../transport';
import { apiRequest, cancelSignal, jobPages, pause, segment } from '../transport';
import type { Urgency } from '../transport/pacing';
import type { Job } from './types';

export const isFinal = (job: Job) => job.status === 'completed' || job.status === 'cancelled';

/** Reads of a round come before any item's request (priority in the node run's pacing). */
const ROUND_PRIORITY = -1;
const PAGE_SIZE = 100;

interface Pending {
	job: Job;
	itemIndex: number;
	intervalMs: number;
	deadline: number;
	timeoutMinutes: number;
	resolve: (job: Job) => void;
	reject: (error: Error) => void;
}

export interface ReadOptions {
	/** Place among the node run's places. */
	priority?: number;
	/** Place in the key's pace: `answer` when a caller waits for it (a trigger, a resume). */
	urgency?: Urgency;
	/** Hears of every job the pages held. */
	seen?: (job: Job) => void;
}

/**
 * Reads many jobs at once (Poll's rounds, On Webhook's events, the trigger's bursts): the job list,
 * newest first, as far back as the oldest of them, then one by one only what those pages did not
 * hold (many jobs ordered elsewhere meanwhile) or a single job. Each job's read or its error: a job
 * that cannot be read does not fail the others. `seen` hears of every job the pages held.
 */
export async function readJobsSettled(
	ctx: ApiContext,
	jobs: Array<Pick<Job, 'id' | 'created_at'>>,
	options: ReadOptions = {},
): Promise<Map<string, Job | Error>> {
	const { priority, urgency, seen } = options;
	const read = new Map<string, Job | Error>();
	const unseen = new Set(jobs.map((job) => job.id));
	if (unseen.size > 1) {
		const oldest = Math.min(...jobs.map((job) => Date.parse(job.created_at)));
		const maxPages = Math.ceil(unseen.size / PAGE_SIZE) + 1;
		let pages = 0;
		try {
			for await (const page of jobPages(ctx, {}, { priority, urgency })) {
				for (const job of page) {
					seen?.(job);
					if (unseen.delete(job.id)) read.set(job.id, job);
				}
				// Newest first: past the oldest of them, the list holds none of them.
				const last = page.at(-1);
				if (unseen.size === 0 || ++pages >= maxPages || !last || Date.parse(last.created_at) < oldest) break;
			}
		} catch (error) {
			// The list could not be read (after the transport's retries): nor, now, could each job.
			for (const id of unseen) read.set(id, error as Error);
			return read;
		}
	}
	await Promise.all(
		[...unseen].map(async (id) => {
			try {
				read.set(id, (await apiRequest<Job>(ctx, 'GET', `/jobs/${segment(id)}`, { priority, urgency })).body);
			} catch (error) {
				read.set(id, error as Error);
			}
		}),
	);
	return read;
}

/** readJobsSettled, failing as a whole when any job could not be read. */
export async function readJobsTogether(ctx: ApiContext, jobs: Job[], options: ReadOptions = {}): Promise<Map<string, Job>> {
	const read = await readJobsSettled(ctx, jobs, options);
	for (const result of read.values()) if (result instanceof Error) throw result;
	return read as Map<string, Job>;
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
