// What the polling trigger remembers between polls, and how one poll finds the jobs that finished.
//
// The job list is read newest first, down past the newest job the last poll saw. A job created
// after `horizon` that no poll has seen (`known`) is new: so a job that becomes visible after a
// newer one was seen (the service's writes need not become visible in creation order) is still
// found, as long as it lies within the pages read and the window: the last `pollWindow.overlapMs`
// of creation time behind the newest job seen, at most `pollWindow.maxKnown` jobs.
// Open jobs that fit the Filters are remembered (`open`) and checked until they finish: for free
// on the pages a poll reads anyway. The rest is checked on a backoff (`checkAt`, `checkEveryMs`: a
// minute at first, doubling while no followed job finished, at most `pollWindow.maxCheckEveryMs`):
// the list read on through the window (so a job that entered the list late is found), the open
// jobs within a page or two more, and those still unread one by one; at once, too, when the pages
// show a followed job finished (a batch finishes together). Open jobs the
// Filters exclude cost nothing (a job's metadata does not change). A quiet poll reads one page,
// whatever the size of the workspace and the age of the followed jobs. The state is replaced only
// at the end of a successful poll, so an older one brought back by a restart only reads further
// back; it stays bounded.
import type { IDataObject, IPollFunctions } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { metadataMatches } from '../Captioning/listing/filters';
import { isFinal } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import { jobPages, listJobs, PAGE_SIZE, readJob } from '../Captioning/transport/jobs';

/** How many reported jobs are remembered (a net for a state that n8n saved before a restart). */
export const REMEMBERED_REPORTS = 1000;

export const pollWindow = {
	/** How far behind the newest job seen a job may become visible and still be found. */
	overlapMs: 10 * 60000,
	/** The most jobs remembered as seen (the newest); past it the horizon moves up. */
	maxKnown: 1000,
	/** The most open jobs followed (the oldest are dropped past it). */
	maxOpen: 10000,
	/** The first wait before open jobs beyond the first pages are checked again, doubled while none finished. */
	firstCheckEveryMs: 60000,
	maxCheckEveryMs: 15 * 60000,
};

export interface PollState {
	/** Jobs created after this (ms) that are not in `known` are new. */
	horizon?: number;
	/** Jobs created after `horizon` that a poll saw: id → creation time (ms). */
	known?: Record<string, number>;
	/** Queued or processing jobs that fit the Filters, by id, with their creation time (ms). */
	open?: Record<string, number>;
	/** When the open jobs beyond the pages a poll reads are checked next (ms), and the wait before that. */
	checkAt?: number;
	checkEveryMs?: number;
	/** The Filters `open` was chosen by; set by the first poll (at activation): events are reported from then on. */
	filters?: string;
	/** What the next execution says in a hint: bounds a poll reached (at most a few, newest last). */
	notices?: string[];
	/** `<job id> <status>` of the jobs reported, the latest REMEMBERED_REPORTS. */
	reported?: string[];
}

const at = (time: string) => Date.parse(time);

/** The Filters as `open` remembers them: another value means the open jobs must be chosen again. */
export const filtersKey = (filters: IDataObject) =>
	JSON.stringify([String(filters.metadataKey ?? '').trim(), filters.metadataValue ?? '']);

/** Every job of the workspace that is queued or processing now (the lists grow with those, not with history). */
async function openJobs(ctx: IPollFunctions): Promise<Job[]> {
	const queued = await listJobs(ctx, { status: 'queued' });
	return [...queued, ...(await listJobs(ctx, { status: 'processing' }))];
}

/** The window of known jobs after a poll that saw these: behind the newest by the overlap, at most maxKnown. */
function windowOf(
	horizon: number,
	known: Record<string, number>,
): Pick<PollState, 'horizon' | 'known'> & { cut: boolean } {
	const newest = Math.max(horizon, ...Object.values(known));
	let floor = Math.max(horizon, newest - pollWindow.overlapMs);
	let kept = Object.entries(known)
		.filter(([, created]) => created >= floor)
		.sort((a, b) => b[1] - a[1]);
	const cut = kept.length > pollWindow.maxKnown;
	if (cut) {
		kept = kept.slice(0, pollWindow.maxKnown);
		floor = kept.at(-1)![1];
	}
	return { horizon: floor, known: Object.fromEntries(kept), cut };
}

/**
 * Where a poll starts: the newest page of jobs (known, not reported), and the open jobs that fit
 * the Filters. The open lists are read before and after the newest page: a job queued before
 * activation that finishes between the reads is in the first (read only after the newest page, it
 * would be lost: known, finished, never open), one created between them is in the second.
 */
export async function firstState(ctx: IPollFunctions, filters: IDataObject): Promise<PollState> {
	const openBefore = await openJobs(ctx);
	const page = await listJobs(ctx, {}, PAGE_SIZE);
	const known = Object.fromEntries(page.map((job) => [job.id, at(job.created_at)]));
	const open: Record<string, number> = {};
	for (const job of [...openBefore, ...(await openJobs(ctx))])
		if (metadataMatches(job, filters)) open[job.id] = at(job.created_at);
	// A full page: older jobs exist that were not read, so none of them counts as new.
	const window = windowOf(page.length < PAGE_SIZE ? -Infinity : at(page.at(-1)!.created_at), known);
	return {
		horizon: window.horizon,
		known: window.known,
		open,
		filters: filtersKey(filters),
		reported: [],
	};
}

/** What a poll finds as it reads: jobs finished, jobs still open, the jobs it saw. */
interface Found {
	finished: Job[];
	open: Record<string, number>;
	/** Open jobs the pages have not reached yet. */
	unseen: Set<string>;
	known: Record<string, number>;
	filters: IDataObject;
	/** Whether the window and the open jobs beyond the newest pages are due for a check. */
	due: boolean;
	/** Whether a followed open job was found finished. */
	followedFinished: boolean;
	/** Whether the open jobs beyond the newest pages are checked in this poll. */
	deep: () => boolean;
}

/**
 * Reads the job list down past the newest job seen before: jobs not seen before are new, and open
 * jobs the pages reach are read for free. A poll due for a check reads on through the window of
 * known jobs (where a job may enter the list late), and one that checks the open jobs further back
 * while they lie within a page or two more.
 */
async function readPastNewest(ctx: IPollFunctions, state: PollState, found: Found): Promise<void> {
	const horizon = state.horizon ?? -Infinity;
	const newestSeen = Math.max(horizon, ...Object.values(state.known ?? {}));
	const oldestOpen = Math.min(...Object.values(found.open));
	const budget = Math.ceil(found.unseen.size / 100) + 1;
	let pagesPast = 0;
	for await (const page of jobPages(ctx)) {
		for (const job of page) {
			const created = at(job.created_at);
			const isNew = created > horizon && found.known[job.id] === undefined;
			if (created >= horizon) found.known[job.id] = created;
			if (isNew || found.unseen.has(job.id)) note(found, job);
			found.unseen.delete(job.id);
		}
		const last = page.at(-1);
		if (!last || at(last.created_at) >= newestSeen) continue;
		const below = at(last.created_at);
		if (!found.deep()) break;
		// When due, the window (at most maxKnown known jobs); below it, open jobs within a page or two.
		if (found.due && below > horizon) continue;
		if (found.unseen.size === 0 || below < oldestOpen || ++pagesPast >= budget) break;
	}
}

/** A job the poll reached: finished, or (still) open and fitting the Filters. */
function note(found: Found, job: Job): void {
	if (isFinal(job)) {
		found.finished.push(job);
		if (found.open[job.id] !== undefined) found.followedFinished = true;
		delete found.open[job.id];
	} else if (metadataMatches(job, found.filters)) {
		found.open[job.id] = at(job.created_at);
	}
}

/** Open jobs further back than the pages read, one by one. */
async function readOpenById(ctx: IPollFunctions, found: Found): Promise<void> {
	for (const id of found.unseen) {
		// Deleted, or not in this workspace any more (404): nothing more will come of it.
		const job = await readJob(ctx, id).catch((error: unknown) => {
			if (error instanceof NodeApiError && error.httpCode === '404') return undefined;
			throw error;
		});
		if (!job) delete found.open[id];
		else if (isFinal(job)) note(found, job);
	}
}

/** When the open jobs further back are checked next: soon after one finished, later while none does. */
function nextCheck(
	state: PollState,
	found: Found,
	now: number,
): Pick<PollState, 'checkAt' | 'checkEveryMs'> {
	if (!found.deep()) return { checkAt: state.checkAt, checkEveryMs: state.checkEveryMs };
	const { firstCheckEveryMs, maxCheckEveryMs } = pollWindow;
	const every = found.followedFinished
		? firstCheckEveryMs
		: Math.min(2 * (state.checkEveryMs ?? firstCheckEveryMs / 2), maxCheckEveryMs);
	return { checkAt: now + every, checkEveryMs: every };
}

/** The newest `maxOpen` open jobs (the oldest past it are no longer followed). */
function boundedOpen(open: Record<string, number>): Record<string, number> {
	const entries = Object.entries(open);
	if (entries.length <= pollWindow.maxOpen) return open;
	return Object.fromEntries(entries.sort((a, b) => b[1] - a[1]).slice(0, pollWindow.maxOpen));
}

/**
 * One poll: the jobs that finished since the state was taken (oldest completion first), and the
 * state to keep after them. Reads nothing it does not need, and changes nothing (the caller keeps
 * the new state only once the poll has succeeded).
 */
export async function finishedSince(
	ctx: IPollFunctions,
	state: PollState,
	filters: IDataObject,
): Promise<{ finished: Job[]; next: PollState }> {
	const now = Date.now();
	const due = (state.checkAt ?? 0) <= now;
	const found: Found = {
		finished: [],
		open: { ...state.open },
		unseen: new Set(Object.keys(state.open ?? {})),
		known: { ...state.known },
		filters,
		due,
		followedFinished: false,
		deep: () => due || found.followedFinished,
	};
	await readPastNewest(ctx, state, found);
	if (found.unseen.size > 0 && found.deep()) await readOpenById(ctx, found);
	// Reported in the order they finished; jobs that finished together, in the order they were created.
	const inOrder = found.finished
		.reverse()
		.sort((a, b) => at(a.completed_at ?? a.created_at) - at(b.completed_at ?? b.created_at));
	const { cut, ...window } = windowOf(state.horizon ?? -Infinity, found.known);
	const open = boundedOpen(found.open);
	const dropped = Object.keys(found.open).length - Object.keys(open).length;
	const notices = [...(state.notices ?? [])];
	if (cut)
		notices.push(
			`More than ${pollWindow.maxKnown} jobs were created within ${pollWindow.overlapMs / 60000} minutes: a job that enters the service's list late, below them, is not reported.`,
		);
	if (dropped > 0)
		notices.push(
			`Open jobs that fit the Filters no longer followed: ${dropped} (at most the newest ${pollWindow.maxOpen} are followed); their completion is not reported.`,
		);
	return {
		finished: inOrder,
		next: {
			...window,
			open,
			...nextCheck(state, found, now),
			filters: state.filters,
			notices: notices.slice(-5),
			reported: state.reported ?? [],
		},
	};
}
