// What the polling trigger remembers between polls, and how one poll finds the jobs that finished.
//
// A poll reads the job list (newest first) from the top down past `floor`, the newest creation time
// seen two polls before: a job at or after it that `seen` lacks is new, so a job that enters the
// list up to a poll after newer ones is still found. Open jobs that fit the Filters are followed
// until they finish. Those the top pages do not reach cost one read every other poll, in turn: the
// processing list (every processing job, while at most 100 are processing), and the page of the
// list that starts at a queued one (`starting_after` the job listed just above it), one more page
// while a page finds a followed job finished. So a quiet poll reads one page or two, and a followed
// job is reported by the first or second poll after it finishes; where a bound makes it later, the
// next execution says so in a hint. The state is replaced only after a poll succeeded: one brought
// back by a restart reads further back, and `reported` keeps it from reporting a job twice.
import type { IDataObject, IPollFunctions } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { metadataMatches } from '../Captioning/listing/filters';
import { isFinal } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import {
	jobPages,
	listJobs,
	notInWorkspace,
	PAGE_SIZE,
	readJob,
} from '../Captioning/transport/jobs';

/** How many reported jobs are remembered (a net for a state that n8n saved before a restart). */
const REMEMBERED_REPORTS = 1000;
/** The most jobs remembered as seen, and the most open jobs followed (the newest of each). */
const MAX_SEEN = 1000;
const MAX_FOLLOWED = 10000;

/** What the next execution's hint says where a poll reached a bound. */
const BOUNDS = {
	processing: `More than ${PAGE_SIZE} jobs are processing: a followed job's completion may be reported some polls late.`,
	queued:
		'The followed jobs still queued lie in more than one page of the job list, and a poll reads one such page every other poll: a job that finishes straight from the queue may be reported some polls late.',
	seen: `More than ${MAX_SEEN} jobs were created within two polls: a job that enters the service's list late, below them, is not reported.`,
	followed: `More than ${MAX_FOLLOWED} open jobs fit the Filters: the newest ${MAX_FOLLOWED} are followed, the completion of the others is not reported.`,
};

/** A followed job: its creation time (ms), the id listed just above it ('' unknown), whether it was processing. */
type Followed = [created: number, above: string, processing: boolean];

export interface PollState {
	/** The Filters the state was built for, at activation: events are reported from then on. */
	filters?: string;
	/** Jobs created at or after this (ms) that are not in `seen` are new. */
	floor?: number;
	/** Jobs created at or after `floor` that a poll read: id → creation time (ms); the newest is the next poll's floor. */
	seen?: Record<string, number>;
	/** Open jobs that fit the Filters, by id. */
	followed?: Record<string, Followed>;
	/** Polls since activation: an even one reads the processing list, an odd one a queued job's page. */
	turn?: number;
	/** Where the last queued job's page ended (ms): the next starts below it, then at the top again. */
	sweep?: number;
	/** What the next execution says in a hint: bounds a poll reached (at most a few, newest last). */
	notices?: string[];
	/** `<job id> <status>` of the jobs reported, the latest REMEMBERED_REPORTS. */
	reported?: string[];
}

/** One poll as it reads: the state it builds, the jobs to report, the followed jobs read. */
interface Poll extends Required<Pick<PollState, 'floor' | 'seen' | 'followed' | 'notices'>> {
	ctx: IPollFunctions;
	filters: IDataObject;
	wanted: (job: Job) => boolean;
	reported: Set<string>;
	due: Job[];
	checked: Set<string>;
}

const reportOf = (job: Job) => `${job.id} ${job.status}`;

const at = (time: string) => Date.parse(time);

/** When a job finished (ms), or was created if it has not. */
export const finishedAt = (job: Job) => at(job.completed_at ?? job.created_at);

/** The Filters as the state remembers them: another value means the state must be built again. */
export const filtersKey = (filters: IDataObject) =>
	JSON.stringify([String(filters.metadataKey ?? '').trim(), filters.metadataValue ?? '']);

/**
 * Activation: the open jobs that fit the Filters are followed, the newest page is seen. The open
 * lists come first, so a job that finishes while the newest page is read is still followed.
 */
export async function firstState(ctx: IPollFunctions, filters: IDataObject): Promise<PollState> {
	const followed: Record<string, Followed> = {};
	const follow = (jobs: Job[]) =>
		jobs.forEach((job, n) => {
			if (!isFinal(job) && metadataMatches(job, filters))
				followed[job.id] = [at(job.created_at), jobs[n - 1]?.id ?? '', job.status === 'processing'];
		});
	follow(await listJobs(ctx, { status: 'queued' }));
	follow(await listJobs(ctx, { status: 'processing' }));
	const page = await listJobs(ctx, {}, PAGE_SIZE);
	follow(page);
	const newest = Math.max(0, ...page.map((job) => at(job.created_at)));
	const seen = Object.fromEntries(
		page.filter((job) => at(job.created_at) === newest).map((job) => [job.id, newest]),
	);
	return { filters: filtersKey(filters), floor: newest, seen, followed, notices: [] };
}

/** A job a page held, listed just below `above`: a followed or new one is noted, finished or followed. */
function visit(poll: Poll, job: Job, above: string): void {
	const created = at(job.created_at);
	const followed = poll.followed[job.id] !== undefined;
	if (created >= poll.floor && poll.seen[job.id] === undefined) poll.seen[job.id] = created;
	else if (!followed) return;
	poll.checked.add(job.id);
	if (isFinal(job)) {
		if (poll.wanted(job) && !poll.reported.has(reportOf(job))) poll.due.push(job);
		delete poll.followed[job.id];
	} else if (followed || metadataMatches(job, poll.filters)) {
		poll.followed[job.id] = [created, above, job.status === 'processing'];
	}
}

/** The list from just below `above` ('' the top), each job visited, until `done(where a page ended, ms)`. */
async function readList(poll: Poll, above: string, done: (end: number) => boolean) {
	let end: number | undefined;
	for await (const page of jobPages(poll.ctx, above ? { starting_after: above } : {})) {
		for (const job of page) {
			visit(poll, job, above);
			above = job.id;
		}
		end = page.length ? at(page[page.length - 1].created_at) : undefined;
		if (end === undefined || done(end)) break;
	}
	return end;
}

/** Followed jobs of that status the poll has not read. */
const unread = (poll: Poll, processing: boolean) =>
	Object.keys(poll.followed).filter(
		(id) => !poll.checked.has(id) && poll.followed[id][2] === processing,
	);

/** Followed processing jobs: one the processing list lacks has finished, while it holds them all: its page is read. */
async function readProcessing(poll: Poll): Promise<void> {
	if (unread(poll, true).length === 0) return;
	const listed = await listJobs(poll.ctx, { status: 'processing' }, PAGE_SIZE + 1);
	for (const job of listed) if (poll.followed[job.id]) visit(poll, job, poll.followed[job.id][1]);
	// Past the list's first page, a followed one is read with the queued ones, a page at a time.
	for (const id of unread(poll, true)) {
		if (listed.length > PAGE_SIZE) poll.followed[id][2] = false;
		else if (!poll.checked.has(id)) await readFrom(poll, id);
	}
	if (listed.length > PAGE_SIZE) poll.notices.push(BOUNDS.processing);
}

/**
 * The page that starts at a followed job: the list from the job listed just above it (from the top
 * where that is unknown or refused with a 400), then the job by its id if the pages did not hold it
 * (404: not in the workspace any more, no longer followed). Returns where the page ended (ms).
 */
async function readFrom(poll: Poll, id: string): Promise<number> {
	const [created, above] = poll.followed[id];
	const done = (end: number) => poll.checked.has(id) || end < created;
	const end = await readList(poll, above, done).catch((error: unknown) => {
		if (!(error instanceof NodeApiError && error.httpCode === '400' && above)) throw error;
		poll.followed[id][1] = '';
		return undefined;
	});
	if (poll.checked.has(id)) return end ?? created;
	const job = await readJob(poll.ctx, id).catch((error: unknown) => {
		if (notInWorkspace(error)) return undefined;
		throw error;
	});
	poll.checked.add(id);
	if (job) visit(poll, job, poll.followed[id][1]);
	else delete poll.followed[id];
	return created;
}

/**
 * Followed queued jobs: the page of the newest below `sweep` (the newest of all past the last), and
 * the next while a page finds a job finished (a batch finishes together). Returns where it ended.
 */
async function readQueued(poll: Poll, sweep = Infinity): Promise<number> {
	for (let due = -1; due < poll.due.length; ) {
		const ids = unread(poll, false).sort((a, b) => poll.followed[b][0] - poll.followed[a][0]);
		if (ids.length === 0) return sweep;
		due = poll.due.length;
		sweep = await readFrom(poll, ids.find((id) => poll.followed[id][0] < sweep) ?? ids[0]);
	}
	if (unread(poll, false).length > 0) poll.notices.push(BOUNDS.queued);
	return sweep;
}

/**
 * One poll: the jobs to report, those `wanted` that finished since the state was taken and were not
 * reported (oldest completion first), and the state to keep after them. Changes nothing: the
 * caller keeps the new state once the poll succeeded.
 */
export async function finishedSince(
	ctx: IPollFunctions,
	state: PollState,
	filters: IDataObject,
	wanted: (job: Job) => boolean,
): Promise<{ due: Job[]; next: PollState }> {
	const poll: Poll = {
		ctx,
		filters,
		wanted,
		floor: state.floor ?? 0,
		seen: { ...state.seen },
		followed: JSON.parse(JSON.stringify(state.followed ?? {})) as Record<string, Followed>,
		notices: [...(state.notices ?? [])],
		reported: new Set(state.reported),
		due: [],
		checked: new Set(),
	};
	const turn = state.turn ?? 0;
	await readList(poll, '', (end) => end < poll.floor);
	const sweep = turn % 2 ? await readQueued(poll, state.sweep) : state.sweep;
	if (turn % 2 === 0) await readProcessing(poll);
	// The next floor: the newest seen before this poll, raised past the newest MAX_SEEN seen.
	const newest = Math.max(poll.floor, ...Object.values(state.seen ?? {}));
	const floor = Math.max(newest, Object.values(poll.seen).sort((a, b) => b - a)[MAX_SEEN] ?? 0);
	if (floor > newest) poll.notices.push(BOUNDS.seen);
	const followed = Object.entries(poll.followed).sort((a, b) => b[1][0] - a[1][0]);
	if (followed.length > MAX_FOLLOWED) poll.notices.push(BOUNDS.followed);
	// In the order they finished; jobs that finished together, in the order they were created.
	const due = poll.due.reverse().sort((a, b) => finishedAt(a) - finishedAt(b));
	return {
		due,
		next: {
			filters: state.filters,
			floor,
			seen: Object.fromEntries(Object.entries(poll.seen).filter(([, time]) => time >= floor)),
			followed: Object.fromEntries(followed.slice(0, MAX_FOLLOWED)),
			turn: turn + 1,
			sweep: Number.isFinite(sweep) ? sweep : undefined,
			notices: [...new Set(poll.notices)].slice(-5),
			reported: [...(state.reported ?? []), ...due.map(reportOf)].slice(-REMEMBERED_REPORTS),
		},
	};
}
