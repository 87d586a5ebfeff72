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

interface Reader {
	queue: Waiting[];
	draining: boolean;
	lastReadAt: number;
	/** Final jobs recent reads showed, by id, oldest first. */
	recent: Map<string, { job: Job; at: number }>;
}

const readers = new Map<string, Reader>();

function readerOf(ctx: IExecuteFunctions): Reader {
	const now = Date.now();
	for (const [key, r] of readers) {
		for (const [id, shown] of r.recent) {
			if (r.recent.size <= readBackLimits.recentJobs && now - shown.at <= readBackLimits.recentMs)
				break;
			r.recent.delete(id);
		}
		if (!r.draining && r.queue.length === 0 && r.recent.size === 0) readers.delete(key);
	}
	const credential = ctx.getNode().credentials?.[CREDENTIAL_NAME]?.id ?? '';
	const key = `${ctx.getWorkflow().id ?? ''}:${ctx.getNode().id}:${credential}`;
	let reader = readers.get(key);
	if (!reader) {
		reader = { queue: [], draining: false, lastReadAt: 0, recent: new Map() };
		readers.set(key, reader);
	}
	return reader;
}

/** A final job with this status that a recent read showed. */
function recentWith(reader: Reader, id: string, status: Job['status']): Job | undefined {
	const shown = reader.recent.get(id);
	return shown && shown.job.status === status && Date.now() - shown.at <= readBackLimits.recentMs
		? shown.job
		: undefined;
}

function remember(reader: Reader, job: Job): void {
	if (!isFinal(job)) return;
	reader.recent.delete(job.id);
	reader.recent.set(job.id, { job, at: Date.now() });
}

/** One read of the job, shared with the jobs other executions of this trigger ask for meanwhile. */
async function readTogether(ctx: IExecuteFunctions, job: Wanted): Promise<Job | Error> {
	const reader = readerOf(ctx);
	const read = new Promise<Job | Error>((resolve) => reader.queue.push({ ctx, job, resolve }));
	if (!reader.draining) void drain(reader);
	return await read;
}

async function drain(reader: Reader): Promise<void> {
	reader.draining = true;
	try {
		while (reader.queue.length > 0) {
			await sleep(Math.max(0, reader.lastReadAt + readBackLimits.spacingMs - Date.now()));
			const batch = reader.queue.splice(0);
			reader.lastReadAt = Date.now();
			let read: Map<string, Job | Error>;
			try {
				// With the credentials of an execution still waiting for it (the batch's first).
				read = await readJobsSettled(
					batch[0].ctx,
					batch.map((w) => w.job),
					{
						seen: (job) => remember(reader, job),
						// A page holds a hundred jobs: the final ones it shows answer the burst's next events too.
						maxPages: Math.min(batch.length, readBackLimits.maxPages),
					},
				);
			} catch (error) {
				read = new Map(batch.map((w) => [w.job.id, error as Error]));
			}
			for (const w of batch)
				w.resolve(read.get(w.job.id) ?? new Error(`job ${w.job.id} was not read`));
		}
	} finally {
		reader.draining = false;
	}
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
	const reader = readerOf(ctx);
	const recent = recentWith(reader, job.id, status);
	if (recent) return recent;
	const until = Date.now() + readBackLimits.statusWaitMs;
	for (let delay = 1000; ; delay = Math.min(delay * 2, 30000)) {
		const read = await readTogether(ctx, job);
		if (read instanceof Error || read.status === status || isFinal(read)) return read;
		if (Date.now() + delay > until) return read;
		await sleep(delay, ctx.getExecutionCancelSignal());
	}
}
