// Reading jobs: one job, the job list page after page, and many jobs at once (Poll's rounds, On
// Webhook's events, the triggers' bursts) in as few requests as the interface allows.
import type { IDataObject } from 'n8n-workflow';

import type { Job, JobList } from '../model/types';
import type { ApiContext, RetryPolicy } from './index';
import { apiRequest, segment } from './index';
import type { Priority } from './rateLimits';

/** Jobs a page of the list holds: the most `limit` may ask for (shared/DESIGN.md, read endpoints). */
export const PAGE_SIZE = 100;

/** Requests a read may still make (a trigger's reads for strangers): each request takes one. */
export type ReadBudget = { left: number };

/** Takes one request from the budget, if one is left (always, without a budget). */
const spend = (budget?: ReadBudget) => !budget || (budget.left > 0 && budget.left-- > 0);

/** GET /jobs/{id}: one job as the API returns it (or its NodeApiError, 404 when not in the workspace). */
export async function readJob(
	ctx: ApiContext,
	id: string,
	options: {
		itemIndex?: number;
		position?: number;
		priority?: Priority;
		retry?: Partial<RetryPolicy>;
	} = {},
): Promise<Job> {
	return (await apiRequest<Job>(ctx, 'GET', `/jobs/${segment(id)}`, options)).body;
}

/**
 * The job list (GET /jobs, newest first), page after page, following `starting_after` while
 * `has_more` and the budget lasts. `pageSize` may shrink a page (e.g. to what a limit still wants).
 * A caller stops reading by leaving the loop.
 */
export async function* jobPages(
	ctx: ApiContext,
	filters: IDataObject = {},
	options: {
		itemIndex?: number;
		position?: number;
		priority?: Priority;
		retry?: Partial<RetryPolicy>;
		pageSize?: (read: number) => number;
		budget?: ReadBudget;
	} = {},
): AsyncGenerator<Job[]> {
	let startingAfter: string | undefined;
	let read = 0;
	while (spend(options.budget)) {
		const qs: IDataObject = { ...filters, limit: options.pageSize?.(read) ?? PAGE_SIZE };
		if (startingAfter) qs.starting_after = startingAfter;
		const { body } = await apiRequest<JobList>(ctx, 'GET', '/jobs', {
			qs,
			itemIndex: options.itemIndex,
			position: options.position,
			priority: options.priority,
			retry: options.retry,
		});
		read += body.data.length;
		yield body.data;
		if (!body.has_more || body.data.length === 0) return;
		startingAfter = body.data[body.data.length - 1].id;
	}
}

/** GET /jobs, following `starting_after` while `has_more`, up to `limit` jobs (all when undefined). */
export async function listJobs(
	ctx: ApiContext,
	filters: IDataObject,
	limit: number | undefined,
	itemIndex?: number,
): Promise<Job[]> {
	const jobs: Job[] = [];
	const pageSize = (read: number) =>
		limit === undefined ? PAGE_SIZE : Math.min(PAGE_SIZE, limit - read);
	for await (const page of jobPages(ctx, filters, { itemIndex, pageSize })) {
		jobs.push(...page);
		if (limit !== undefined && jobs.length >= limit) break;
	}
	return limit === undefined ? jobs : jobs.slice(0, limit);
}

export interface ReadOptions {
	/** Place among the node run's places. */
	position?: number;
	/** Its priority under the key's rate limits: `high` when a caller waits for it (a trigger, a resume). */
	priority?: Priority;
	/** Hears of every job the pages held. */
	seen?: (job: Job) => void;
	retry?: Partial<RetryPolicy>;
	/** How many pages of the list at most before reading the rest one by one (default: a page per 100 jobs, plus one). */
	maxPages?: number;
	/** Requests this read may still make: at 0, the jobs not read are left out of the answer. */
	budget?: ReadBudget;
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
	const { position, priority, seen, retry, budget } = options;
	const read = new Map<string, Job | Error>();
	const unseen = new Set(jobs.map((job) => job.id));
	if (unseen.size > 1) {
		const oldest = Math.min(...jobs.map((job) => Date.parse(job.created_at)));
		const maxPages = options.maxPages ?? Math.ceil(unseen.size / PAGE_SIZE) + 1;
		let pages = 0;
		try {
			for await (const page of jobPages(ctx, {}, { position, priority, retry, budget })) {
				for (const job of page) {
					seen?.(job);
					if (unseen.delete(job.id)) read.set(job.id, job);
				}
				// Newest first: past the oldest of them, the list holds none of them.
				const last = page.at(-1);
				if (
					unseen.size === 0 ||
					++pages >= maxPages ||
					!last ||
					Date.parse(last.created_at) < oldest
				)
					break;
			}
		} catch (error) {
			// The list could not be read (after the transport's retries): nor, now, could each job.
			for (const id of unseen) read.set(id, error as Error);
			return read;
		}
	}
	await Promise.all(
		[...unseen]
			.filter(() => spend(budget))
			.map(async (id) => {
				try {
					read.set(id, await readJob(ctx, id, { position, priority, retry }));
				} catch (error) {
					read.set(id, error as Error);
				}
			}),
	);
	return read;
}

/** readJobsSettled, failing as a whole when any job could not be read. */
export async function readJobsTogether(
	ctx: ApiContext,
	jobs: Job[],
	options: ReadOptions = {},
): Promise<Map<string, Job>> {
	const read = await readJobsSettled(ctx, jobs, options);
	for (const result of read.values()) if (result instanceof Error) throw result;
	return read as Map<string, Job>;
}
