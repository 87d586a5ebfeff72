// What the polling trigger remembers between polls (the cursor: the newest creation time seen and
// the ids seen at it; the open jobs), and how one poll finds the jobs that finished: the job list
// newest first down to the cursor, then the open jobs, from pages already read when they hold them.
// A quiet poll reads one page, whatever the size of the workspace. The state is replaced only at
// the end of a successful poll, so an older one brought back by a restart only reads further back.
import type { IPollFunctions, JsonObject } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { isFinal } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import { jobPages, readJob } from '../Captioning/transport/jobs';

/** How many reported jobs are remembered (a net for a cursor that n8n saved before a restart). */
export const REMEMBERED_REPORTS = 1000;

export interface PollState {
	/** Set by the first poll (at activation): events are reported from then on, not before. */
	started?: boolean;
	/** The newest creation time the last poll saw, and the ids seen at it. Null: the workspace had no job. */
	cursor?: { createdAt: string; ids: string[] } | null;
	/** Jobs seen queued or processing, by id, with their creation time: checked until they finish. */
	open?: Record<string, string>;
	/** `<job id> <status>` of the jobs reported, the latest REMEMBERED_REPORTS. */
	reported?: string[];
}

const at = (time: string) => Date.parse(time);

/** Every job of the workspace that is queued or processing now (the lists grow with those, not with history). */
async function openJobs(ctx: IPollFunctions): Promise<Job[]> {
	const jobs: Job[] = [];
	for (const status of ['queued', 'processing']) {
		for await (const page of jobPages(ctx, { status })) jobs.push(...page);
	}
	return jobs;
}

/** One job, or undefined when the service no longer has it (404). */
async function readIfThere(ctx: IPollFunctions, id: string): Promise<Job | undefined> {
	try {
		return await readJob(ctx, id);
	} catch (error) {
		if (error instanceof NodeApiError && error.httpCode === '404') return undefined;
		// Both constructors hand back an error that already is of their class, unchanged.
		if (error instanceof NodeApiError)
			throw new NodeApiError(ctx.getNode(), error as unknown as JsonObject);
		throw new NodeOperationError(ctx.getNode(), error as Error);
	}
}

/** How many of the newest jobs activation reads to find every job created at the newest instant. */
const NEWEST_PAGE = 10;

/**
 * Where a poll starts: the newest jobs now (all those created at the newest instant), and the jobs
 * open now (which may finish later). The open lists are read before and after the newest jobs: a
 * job queued before activation that finishes between the reads is in the first (read only after the
 * cursor, it would be lost: at the cursor, finished, never open), one created between them is in
 * the second.
 */
export async function firstState(ctx: IPollFunctions): Promise<PollState> {
	const openBefore = await openJobs(ctx);
	let cursor: PollState['cursor'] = null;
	for await (const page of jobPages(ctx, {}, { pageSize: () => NEWEST_PAGE })) {
		cursor ??= page.length ? { createdAt: page[0].created_at, ids: [] } : null;
		const atNewest = page.filter((job) => at(job.created_at) === at(cursor!.createdAt));
		cursor?.ids.push(...atNewest.map((job) => job.id));
		if (atNewest.length < page.length) break;
	}
	const open: Record<string, string> = {};
	for (const job of [...openBefore, ...(await openJobs(ctx))]) open[job.id] = job.created_at;
	return { started: true, cursor, open, reported: [] };
}

/** What a poll finds as it reads: jobs finished, jobs still open, the next cursor. */
interface Found {
	finished: Job[];
	open: Record<string, string>;
	/** Open jobs the pages have not reached yet. */
	unseen: Set<string>;
	next?: { createdAt: string; ids: string[] };
}

/**
 * Reads the job list down past the cursor: jobs above it (or at its instant, not seen then) are new,
 * and open jobs the pages reach are read for free. Stops once past the cursor with every open job
 * reached, or a few pages further (the rest are read another way).
 */
async function readPastCursor(ctx: IPollFunctions, state: PollState, found: Found): Promise<void> {
	const { cursor } = state;
	const cursorAt = cursor ? at(cursor.createdAt) : -Infinity;
	const seenAtCursor = new Set(cursor?.ids ?? []);
	const oldestOpen = Math.min(...Object.values(found.open).map(at));
	const budget = Math.ceil(found.unseen.size / 100) + 1;
	// Without a cursor (the workspace had no job at activation) every job listed is new.
	let pastCursor = false;
	let pagesPastCursor = 0;
	for await (const page of jobPages(ctx)) {
		for (const job of page) {
			found.next ??= { createdAt: job.created_at, ids: [] };
			if (at(job.created_at) === at(found.next.createdAt)) found.next.ids.push(job.id);
			if (at(job.created_at) < cursorAt) pastCursor = true;
			const isNew = !pastCursor && !(at(job.created_at) === cursorAt && seenAtCursor.has(job.id));
			if (isNew || found.unseen.has(job.id)) note(found, job);
			found.unseen.delete(job.id);
		}
		if (!pastCursor) continue;
		const last = page.at(-1);
		if (
			!last ||
			found.unseen.size === 0 ||
			at(last.created_at) < oldestOpen ||
			++pagesPastCursor >= budget
		)
			break;
	}
	// Nothing newer than the cursor: the ids seen at its time add up.
	if (found.next && cursor && at(found.next.createdAt) === cursorAt)
		found.next.ids = [...new Set([...cursor.ids, ...found.next.ids])];
}

/** A job the poll reached: finished, or (still) open. */
function note(found: Found, job: Job): void {
	if (isFinal(job)) {
		found.finished.push(job);
		delete found.open[job.id];
	} else {
		found.open[job.id] = job.created_at;
	}
}

/** Open jobs further back than the pages read: the open lists say which still are; the others are read one by one. */
async function readOpenFurtherBack(ctx: IPollFunctions, found: Found): Promise<void> {
	const stillOpen =
		found.unseen.size > 3 ? new Set((await openJobs(ctx)).map((j) => j.id)) : new Set<string>();
	for (const id of found.unseen) {
		if (stillOpen.has(id)) continue;
		const job = await readIfThere(ctx, id);
		// Deleted, or not in this workspace any more: nothing more will come of it.
		if (!job) delete found.open[id];
		else if (isFinal(job)) note(found, job);
	}
}

/**
 * One poll: the jobs that finished since the state was taken (oldest completion first), and the
 * state to keep after them. Reads nothing it does not need, and changes nothing (the caller keeps
 * the new state only once the poll has succeeded).
 */
export async function finishedSince(
	ctx: IPollFunctions,
	state: PollState,
): Promise<{ finished: Job[]; next: PollState }> {
	const found: Found = {
		finished: [],
		open: { ...state.open },
		unseen: new Set(Object.keys(state.open ?? {})),
	};
	await readPastCursor(ctx, state, found);
	if (found.unseen.size > 0) await readOpenFurtherBack(ctx, found);
	// Reported in the order they finished; jobs that finished together, in the order they were created.
	const inOrder = found.finished
		.reverse()
		.sort((a, b) => at(a.completed_at ?? a.created_at) - at(b.completed_at ?? b.created_at));
	return {
		finished: inOrder,
		next: {
			started: true,
			cursor: found.next ?? state.cursor ?? null,
			open: found.open,
			reported: state.reported ?? [],
		},
	};
}
