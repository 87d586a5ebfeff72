// The Job field's list (a resource locator, as Google Drive's File): the newest jobs a page at a
// time, each named by title, status and date; a search keeps those whose title or ID holds it.
import type { ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';

import type { Job } from '../model/types';
import { jobPages, PAGE_SIZE } from '../transport/jobs';

/** One page of the job list for the editor; the next page follows the last job read. */
export async function searchJobs(
	this: ILoadOptionsFunctions,
	filter?: string,
	paginationToken?: string,
): Promise<INodeListSearchResult> {
	const filters = paginationToken ? { starting_after: paginationToken } : {};
	const page: Job[] = (await jobPages(this, filters, { max: PAGE_SIZE }).next()).value || [];
	const search = filter?.trim().toLowerCase();
	const jobs = page.filter(
		(job) =>
			!search ||
			job.title.toLowerCase().includes(search) ||
			job.id.toLowerCase().startsWith(search),
	);
	return {
		results: jobs.map((job) => ({
			// The date as '2026-11-26 14:03 UTC'.
			name: `${job.title || 'Untitled'} · ${job.status} · ${job.created_at.slice(0, 10)} ${job.created_at.slice(11, 16)} UTC`,
			value: job.id,
		})),
		paginationToken: page.length === PAGE_SIZE ? page.at(-1)?.id : undefined,
	};
}
