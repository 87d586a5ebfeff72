// The Job field's list (a resource locator, as Google Drive's File): the newest jobs a page at a
// time, each named by title, status and date; a search keeps those whose title or ID holds it.
import type { IDataObject, ILoadOptionsFunctions, INodeListSearchResult } from 'n8n-workflow';

import type { Job, JobList } from '../model/types';
import { apiRequest } from '../transport';
import { PAGE_SIZE } from '../transport/jobs';

/** '2026-11-26 14:03 UTC' */
function when(date: string): string {
	return `${date.slice(0, 10)} ${date.slice(11, 16)} UTC`;
}

function matches(job: Job, search: string): boolean {
	return job.title.toLowerCase().includes(search) || job.id.toLowerCase().startsWith(search);
}

/** One page of the job list for the editor; the next page follows the last job read. */
export async function searchJobs(
	this: ILoadOptionsFunctions,
	filter?: string,
	paginationToken?: string,
): Promise<INodeListSearchResult> {
	const qs: IDataObject = { limit: PAGE_SIZE };
	if (paginationToken) qs.starting_after = paginationToken;
	// Someone waits in the editor: ahead of workflows' background reads under the key's rate limits.
	const { body } = await apiRequest<JobList>(this, 'GET', '/jobs', { qs });
	const search = filter?.trim().toLowerCase();
	const jobs = search ? body.data.filter((job) => matches(job, search)) : body.data;
	return {
		results: jobs.map((job) => ({
			name: `${job.title || 'Untitled'} · ${job.status} · ${when(job.created_at)}`,
			value: job.id,
		})),
		paginationToken: body.has_more ? body.data.at(-1)?.id : undefined,
	};
}
