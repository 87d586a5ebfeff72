// An event's job, read back inside its execution until reads show the status the event reports (an
// event may come before they do), for up to `statusWaitMs`. Executions that read at the same time
// share their reads: a trigger reads at most once per `spacingMs`, and the jobs asked for meanwhile
// share the next read (readJobsSettled: pages of the job list down to the oldest of them, then one
// by one what those did not hold), so a burst costs a few reads of the key's shared limit instead of
// one per event. Final jobs a read showed are kept for `recentMs`: an event reporting that status
// needs no read of its own. Readers are per process, workflow, node and credentials.
import type { IExecuteFunctions } from 'n8n-workflow';

import { isFinal } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import { CREDENTIAL_NAME, sleep } from '../Captioning/transport';
import { readJobsSettled } from '../Captioning/transport/jobs';

export const readBackLimits = {
	/** At most one read of a trigger starts in this long: about 4 reads a second at most. */
	spacingMs: 250,
	/** How long final jobs a read showed are kept, and how many at most. */
	recentMs: 60000,
	recentJobs: 1000,
	/** The most pages of the job list one read reads (never more than its jobs). */
	maxPages: 20,
	/** How long an execution reads again while the job does not show the event's status yet. */
	statusWaitMs: 5 * 60000,
};

type Wanted = Pick<Job, 'id' | 'created_at'>;

interface Waiting {
	ctx: IExecuteFunctions;
	job: Wanted;
	resolve: (result: Job | Error) => void;
}

/** The reads of one trigger (workflow, node and credentials) in this process. */
class Reader {
	private queue: Waiting[] = [];
	private draining = false;
	private lastReadAt = 0;
	/** Final jobs recent reads showed, by id, oldest first. */
	readonly recent = new Map<string, { job: Job; at: number }>();

	/** Forgets the final jobs shown longer ago than `recentMs`, and the oldest past `recentJobs`; whether none is left. */
	forget(): boolean {
		for (const [id, shown] of this.recent) {
			const old = Date.now() - shown.at > readBackLimits.recentMs;
			if (!old && this.recent.size <= readBackLimits.recentJobs) break;
			this.recent.delete(id);
		}
		return !this.draining && this.recent.size === 0;
	}

	/** One read of the job, shared with the jobs other executions of this trigger ask for meanwhile. */
	async read(ctx: IExecuteFunctions, job: Wanted): Promise<Job | Error> {
		const read = new Promise<Job | Error>((resolve) => this.queue.push({ ctx, job, resolve }));
		if (!this.draining) void this.drain();
		return await read;
	}

	private async drain(): Promise<void> {
		this.draining = true;
		while (this.queue.length > 0) {
			await sleep(Math.max(0, this.lastReadAt + readBackLimits.spacingMs - Date.now()));
			const batch = this.queue.splice(0);
			this.lastReadAt = Date.now();
			// With the credentials of an execution still waiting for it (the batch's first).
			const read = await readJobsSettled(
				batch[0].ctx,
				batch.map((w) => w.job),
				{
					seen: (job) => {
						if (!isFinal(job)) return;
						this.recent.delete(job.id);
						this.recent.set(job.id, { job, at: Date.now() });
					},
					// A page holds a hundred jobs: the final ones it shows answer the burst's next events too.
					maxPages: Math.min(batch.length, readBackLimits.maxPages),
				},
			);
			for (const w of batch) w.resolve(read.get(w.job.id)!);
		}
		this.draining = false;
	}
}

const readers = new Map<string, Reader>();

function readerOf(ctx: IExecuteFunctions): Reader {
	for (const [key, reader] of readers) if (reader.forget()) readers.delete(key);
	const credential = ctx.getNode().credentials?.[CREDENTIAL_NAME]?.id ?? '';
	const key = `${ctx.getWorkflow().id ?? ''}:${ctx.getNode().id}:${credential}`;
	let reader = readers.get(key);
	if (!reader) readers.set(key, (reader = new Reader()));
	return reader;
}

/**
 * The job as the API returns it (or the error reading it): read again, 1 s, 2 s, 4 s… apart, while
 * it is not final, until it shows `status` or `statusWaitMs` has passed. A final job is final.
 */
export async function readUntilShown(
	ctx: IExecuteFunctions,
	job: Wanted,
	status: Job['status'],
): Promise<Job | Error> {
	// A final job with this status that a recent read showed.
	const recent = readerOf(ctx).recent.get(job.id)?.job;
	if (recent?.status === status) return recent;
	const until = Date.now() + readBackLimits.statusWaitMs;
	for (let delay = 1000; ; delay = Math.min(delay * 2, 30000)) {
		const read = await readerOf(ctx).read(ctx, job);
		if (read instanceof Error || read.status === status || isFinal(read)) return read;
		if (Date.now() + delay > until) return read;
		await sleep(delay, ctx.getExecutionCancelSignal());
	}
}
