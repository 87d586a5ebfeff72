// Reading jobs: one job, the job list page after page, and many jobs at once (Poll's rounds, On
// Webhook's events, the triggers' bursts) in as few requests as the interface allows.
import type { IDataObject } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import type { Job, JobList } from '../model/types';
import type { ApiContext } from './service';
import { apiRequest } from './index';

/** Jobs a page of the list holds: the most `limit` may ask for (shared/DESIGN.md, read endpoints). */
export const PAGE_SIZE = 100;

/** A read answered 404: the job is not in this workspace (deleted, or another workspace's). */
export const notInWorkspace = (error: unknown): boolean =>
	error instanceof NodeApiError && error.httpCode === '404';

/** GET /jobs/{id}: one job as the API returns it (or its NodeApiError, 404 when not in the workspace). */
export async function readJob(
	ctx: ApiContext,
	id: string,
	options: { itemIndex?: number } = {},
): Promise<Job> {
	return (await apiRequest<Job>(ctx, 'GET', `/jobs/${encodeURIComponent(id)}`, options)).body;
}

/**
 * The job list (GET /jobs, newest first), page after page, following `starting_after` while
 * `has_more` and fewer than `max` jobs were read (a page asks only for what is left).
 * A caller stops reading by leaving the loop.
 */
export async function* jobPages(
	ctx: ApiContext,
	filters: IDataObject = {},
	{ max = Infinity, ...request }: { itemIndex?: number; max?: number } = {},
): AsyncGenerator<Job[]> {
	let startingAfter: string | undefined;
	let read = 0;
	while (read < max) {
		const qs: IDataObject = { ...filters, limit: Math.min(PAGE_SIZE, max - read) };
		if (startingAfter) qs.starting_after = startingAfter;
		const { body } = await apiRequest<JobList>(ctx, 'GET', '/jobs', { ...request, qs });
		read += body.data.length;
		yield body.data;
		if (!body.has_more || body.data.length === 0) return;
		startingAfter = body.data[body.data.length - 1].id;
	}
}

/**
 * The jobs of `jobs` that the newest pages of the job list hold, read down to the oldest of them or
 * `maxPages` pages (default: a page per 100 jobs, plus one). `seen` hears of every job the pages
 * held. A page that cannot be read (after the transport's retries) throws.
 */
export async function listedJobs(
	ctx: ApiContext,
	jobs: Array<Pick<Job, 'id' | 'created_at'>>,
	{ seen, maxPages }: { seen?: (job: Job) => void; maxPages?: number } = {},
): Promise<Map<string, Job>> {
	const listed = new Map<string, Job>();
	const unseen = new Set(jobs.map((job) => job.id));
	const oldest = Math.min(...jobs.map((job) => Date.parse(job.created_at)));
	const pagesAllowed = maxPages ?? Math.ceil(unseen.size / PAGE_SIZE) + 1;
	let pages = 0;
	for await (const page of jobPages(ctx)) {
		for (const job of page) {
			seen?.(job);
			if (unseen.delete(job.id)) listed.set(job.id, job);
		}
		// Newest first: past the oldest of them, the list holds none of them.
		const last = page.at(-1);
		if (unseen.size === 0 || ++pages >= pagesAllowed || !last) break;
		if (Date.parse(last.created_at) < oldest) break;
	}
	return listed;
}

/**
 * Reads many jobs at once (Poll's rounds, On Webhook's events): the job list as far back as the
 * oldest of them (listedJobs), then one by one only what those pages did not hold (many jobs
 * ordered elsewhere meanwhile) or a single job. Each job's read or its error: a job that cannot be
 * read does not fail the others.
 */
export async function readJobs(
	ctx: ApiContext,
	jobs: Array<Pick<Job, 'id' | 'created_at'>>,
): Promise<Map<string, Job | Error>> {
	const read = new Map<string, Job | Error>();
	if (jobs.length > 1) {
		try {
			for (const [id, job] of await listedJobs(ctx, jobs)) read.set(id, job);
		} catch (error) {
			// The list could not be read (after the transport's retries): nor, now, could each job.
			for (const job of jobs) read.set(job.id, error as Error);
			return read;
		}
	}
	await Promise.all(
		jobs
			.filter((job) => !read.has(job.id))
			.map(async ({ id }) => read.set(id, await readJob(ctx, id).catch((error: Error) => error))),
	);
	return read;
}
