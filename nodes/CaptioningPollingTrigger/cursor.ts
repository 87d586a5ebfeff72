// What the polling trigger remembers between polls, and how one poll finds the jobs that finished.
//
// The service's list may show a job up to LAG_MS after its creation. So a poll reads the list
// (newest first) from the top down past `since`: LAG_MS before `horizon`, the service's time at
// the last poll as far as known (the newest creation time seen, moved on by n8n's clock since). A
// job created at or after `since` that `seen` lacks is new. Open jobs that fit the Filters are
// followed until they finish; those below `since` cost one more page a poll, in turn: the page
// that starts at one (`starting_after` the job listed just above it), and the next while a page
// finds a followed job finished. So a quiet poll reads at most two pages, plus one per 100 jobs
// created within the window, and a followed job is reported by the first or second poll after it
// finishes; where they lie in more than one page, the next execution says in a hint that it may
// come later. The state is replaced only after a poll succeeded: one brought back by a restart
// reads further back, and `reported` keeps it from reporting a job twice.
import type { IDataObject, IPollFunctions } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { metadataMatches } from '../Captioning/listing/filters';
import { isFinal } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import { jobPages, notInWorkspace, readJob } from '../Captioning/transport/jobs';

/** How long after its creation the service's list may first show a job (ms). */
export const LAG_MS = 5 * 60000;
/** How many reported jobs are remembered (a net for a state that n8n saved before a restart). */
const REMEMBERED_REPORTS = 1000;
/** The most open jobs followed (the newest). */
const MAX_FOLLOWED = 10000;

/** What the next execution's hint says where a poll reached a bound. */
const BOUNDS = {
	pages:
		"The followed jobs lie in more than one page of the job list, and a poll reads one such page: a job's completion may be reported some polls late.",
	followed: `More than ${MAX_FOLLOWED} open jobs fit the Filters: the newest ${MAX_FOLLOWED} are followed, the completion of the others is not reported.`,
};

/** A followed job: its creation time (ms) and the id listed just above it ('' unknown). */
type Followed = [created: number, above: string];

export interface PollState {
	/** The Filters the state was built for, at activation: events are reported from then on. */
	filters?: string;
	/** The service's time at the last poll, as far as known (ms): the next poll reads LAG_MS before it. */
	horizon?: number;
	/** n8n's time at the last poll (ms). */
	polledAt?: number;
	/** Jobs created at most LAG_MS before `horizon` that a poll read: id → creation time (ms). */
	seen?: Record<string, number>;
	/** Open jobs that fit the Filters, by id. */
	followed?: Record<string, Followed>;
	/** Where the last page of followed jobs ended (ms): the next starts below it, then at the top again. */
	sweep?: number;
	/** What the next execution says in a hint: bounds a poll reached (at most a few, newest last). */
	notices?: string[];
	/** `<job id> <status>` of the jobs reported, the latest REMEMBERED_REPORTS. */
	reported?: string[];
}

/** One poll as it reads: the state it builds, the jobs to report, the followed jobs read. */
interface Poll extends Required<Pick<PollState, 'seen' | 'followed' | 'notices'>> {
	ctx: IPollFunctions;
	filters: IDataObject;
	wanted: (job: Job) => boolean;
	/** Jobs created at or after this (ms) are new unless `seen` has them. */
	since: number;
	reported: Set<string>;
	due: Job[];
	read: Set<string>;
}

const reportOf = (job: Job) => `${job.id} ${job.status}`;

/** When a job finished (ms), or was created if it has not. */
export const finishedAt = (job: Job) => Date.parse(job.completed_at ?? job.created_at);

/** The Filters as the state remembers them: another value means the state must be built again. */
export const filtersKey = (filters: IDataObject) =>
	JSON.stringify([String(filters.metadataKey ?? '').trim(), filters.metadataValue ?? '']);

/** The jobs of `seen` the next poll reads again: those created at most LAG_MS before `horizon`. */
const within = (seen: Record<string, number>, horizon: number) =>
	Object.fromEntries(Object.entries(seen).filter(([, time]) => time >= horizon - LAG_MS));

/**
 * Activation: the open jobs that fit the Filters are followed, the list is seen down past LAG_MS
 * before its newest job. The open lists come first, so a job that finishes while the newest
 * pages are read is still followed.
 */
export async function firstState(ctx: IPollFunctions, filters: IDataObject): Promise<PollState> {
	const followed: Record<string, Followed> = {};
	const seen: Record<string, number> = {};
	// Follows a page's open jobs that fit; returns the id of its last job (`above` for none).
	const follow = (jobs: Job[], above: string) => {
		for (const job of jobs) {
			if (!isFinal(job) && metadataMatches(job, filters))
				followed[job.id] = [Date.parse(job.created_at), above];
			above = job.id;
		}
		return above;
	};
	for (const status of ['queued', 'processing']) {
		let above = '';
		for await (const page of jobPages(ctx, { status })) above = follow(page, above);
	}
	let horizon = 0;
	let above = '';
	for await (const page of jobPages(ctx)) {
		above = follow(page, above);
		page.forEach((job) => (seen[job.id] = Date.parse(job.created_at)));
		horizon = page.reduce((time, job) => Math.max(time, seen[job.id]), horizon);
		if (!above || seen[above] < horizon - LAG_MS) break;
	}
	const state = { filters: filtersKey(filters), horizon, polledAt: Date.now() };
	return { ...state, seen: within(seen, horizon), followed, notices: [] };
}

/** A job a page held, listed just below `above`: a followed or new one is noted, finished or followed. */
function visit(poll: Poll, job: Job, above: string): void {
	const created = Date.parse(job.created_at);
	const followed = poll.followed[job.id] !== undefined;
	if (created >= poll.since && poll.seen[job.id] === undefined) poll.seen[job.id] = created;
	else if (!followed) return;
	poll.read.add(job.id);
	if (isFinal(job)) {
		if (poll.wanted(job) && !poll.reported.has(reportOf(job))) poll.due.push(job);
		delete poll.followed[job.id];
	} else if (followed || metadataMatches(job, poll.filters)) {
		poll.followed[job.id] = [created, above];
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
		end = page.length ? Date.parse(page[page.length - 1].created_at) : undefined;
		if (end === undefined || done(end)) break;
	}
	return end;
}

/** Followed jobs the poll has not read. */
const unread = (poll: Poll) => Object.keys(poll.followed).filter((id) => !poll.read.has(id));

/**
 * The page that starts at a followed job: the list from the job listed just above it (from the top
 * where that is unknown or refused with a 400), then the job by its id if the pages did not hold it
 * (404: not in the workspace any more, no longer followed). Returns where the page ended (ms).
 */
async function readFrom(poll: Poll, id: string): Promise<number> {
	const [created, above] = poll.followed[id];
	const done = (end: number) => poll.read.has(id) || end < created;
	const end = await readList(poll, above, done).catch((error: unknown) => {
		if (!(error instanceof NodeApiError && error.httpCode === '400' && above)) throw error;
		poll.followed[id][1] = '';
		return undefined;
	});
	if (poll.read.has(id)) return end ?? created;
	const job = await readJob(poll.ctx, id).catch((error: unknown) => {
		if (notInWorkspace(error)) return undefined;
		throw error;
	});
	poll.read.add(id);
	if (job) visit(poll, job, poll.followed[id][1]);
	else delete poll.followed[id];
	return created;
}

/**
 * Followed jobs the newest pages did not hold: the page of the newest below `sweep` (the newest of
 * all past the last), and the next while a page finds a job finished (a batch finishes together).
 * Returns where it ended.
 */
async function readFollowed(poll: Poll, sweep = Infinity): Promise<number> {
	for (let due = -1; due < poll.due.length; ) {
		const ids = unread(poll).sort((a, b) => poll.followed[b][0] - poll.followed[a][0]);
		if (ids.length === 0) return sweep;
		due = poll.due.length;
		sweep = await readFrom(poll, ids.find((id) => poll.followed[id][0] < sweep) ?? ids[0]);
	}
	if (unread(poll).length > 0) poll.notices.push(BOUNDS.pages);
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
		since: (state.horizon ?? 0) - LAG_MS,
		seen: { ...state.seen },
		followed: JSON.parse(JSON.stringify(state.followed ?? {})) as Record<string, Followed>,
		notices: [...(state.notices ?? [])],
		reported: new Set(state.reported),
		due: [],
		read: new Set(),
	};
	await readList(poll, '', (end) => end < poll.since);
	const sweep = await readFollowed(poll, state.sweep);
	const polledAt = Date.now();
	const moved = (state.horizon ?? 0) + polledAt - (state.polledAt ?? polledAt);
	const horizon = Object.values(poll.seen).reduce((a, b) => Math.max(a, b), moved);
	const followed = Object.entries(poll.followed).sort((a, b) => b[1][0] - a[1][0]);
	if (followed.length > MAX_FOLLOWED) poll.notices.push(BOUNDS.followed);
	// In the order they finished; jobs that finished together, in the order they were created.
	const due = poll.due.reverse().sort((a, b) => finishedAt(a) - finishedAt(b));
	return {
		due,
		next: {
			filters: state.filters,
			horizon,
			polledAt,
			seen: within(poll.seen, horizon),
			followed: Object.fromEntries(followed.slice(0, MAX_FOLLOWED)),
			sweep: Number.isFinite(sweep) ? sweep : undefined,
			notices: [...new Set(poll.notices)].slice(-5),
			reported: [...(state.reported ?? []), ...due.map(reportOf)].slice(-REMEMBERED_REPORTS),
		},
	};
}
