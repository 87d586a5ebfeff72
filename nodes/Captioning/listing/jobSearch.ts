// The Job field's list (a resource locator, as Google Drive's File): the newest jobs a page at a
// time, each named by title, status and date; a search keeps those whose title or ID holds it.
import type { IDataObject, ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';

import type { JobList } from '../model/types';
import { apiRequest } from '../transport';
import { PAGE_SIZE } from '../transport/jobs';

/** One page of the job list for the editor; the next page follows the last job read. */
export async function searchJobs(
	this: ILoadOptionsFunctions,
	filter?: string,
	paginationToken?: string,
): Promise<INodeListSearchResult> {
	const qs: IDataObject = { limit: PAGE_SIZE };
	if (paginationToken) qs.starting_after = paginationToken;
	const { body } = await apiRequest<JobList>(this, 'GET', '/jobs', { qs });
	const search = filter?.trim().toLowerCase();
	const jobs = body.data.filter(
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
		paginationToken: body.has_more ? body.data.at(-1)?.id : undefined,
	};
}
