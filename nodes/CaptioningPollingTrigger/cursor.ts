// What the polling trigger remembers between polls, and how one poll finds the jobs that finished.
//
// The interface lists jobs newest first (by creation), with a status filter. A poll reads the list
// down to the newest job the previous poll saw (the cursor): jobs above it are new, and are reported
// when already finished or remembered as open when queued or processing. Open jobs are checked
// until they finish: for free when the pages already read hold them, else from the queued and
// processing lists or one by one. So a poll reads one page when nothing happened and more only as
// more happened, whatever the size of the workspace.
//
// n8n saves a polling node's static data when the poll returns items (and at activation), not
// after a poll that returns nothing. So the state is only replaced at the end of a successful poll,
// and everything a restart may bring back is safe: an older cursor only means reading further back,
// and the jobs reported since then (the last thing saved) are remembered.
import type { IPollFunctions, JsonObject } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { isFinal } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import { jobPages, readJob } from '../Captioning/transport/jobs';

/**
 * Finished jobs a poll found but left to the next (past its budget), as read: in this process's
 * memory, by the node's static data object (n8n hands every poll of an active workflow the same
 * one). They stay among the open jobs of the state too, so that after a restart they are read again.
 */
const leftOver = new WeakMap<object, Job[]>();

/** Keeps jobs found finished for the next poll. */
export function leaveForNext(state: PollState, jobs: Job[]): void {
	leftOver.set(state, jobs);
}

function takeLeftOver(state: PollState): Job[] {
	const jobs = leftOver.get(state) ?? [];
	leftOver.delete(state);
	return jobs;
}

/** How many reported jobs are remembered (a net for a cursor that n8n saved before a restart). */
export const REMEMBERED_REPORTS = 1000;

export interface PollState {
	/** Set by the first poll (at activation): events are reported from then on, not before. */
	started?: boolean;
	/** The newest job the last poll saw; jobs listed above it are new. Null: the workspace had none. */
	cursor?: { id: string; createdAt: string } | null;
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
		if (error instanceof NodeApiError) throw new NodeApiError(ctx.getNode(), error as unknown as JsonObject);
		throw new NodeOperationError(ctx.getNode(), error as Error);
	}
}

/**
 * Where a poll starts: the newest job now, and the jobs open now (which may finish later). The open
 * lists are read before and after the newest job: a job queued before activation that finishes
 * between the reads is in the first (read only after the cursor, it would be lost: at the cursor,
 * finished, never open), one created between them is in the second.
 */
export async function firstState(ctx: IPollFunctions): Promise<PollState> {
	const openBefore = await openJobs(ctx);
	let newest: Job | undefined;
	for await (const page of jobPages(ctx, {}, { pageSize: () => 1 })) {
		newest = page[0];
		break;
	}
	const open: Record<string, string> = {};
	for (const job of [...openBefore, ...(await openJobs(ctx))]) open[job.id] = job.created_at;
	return { started: true, cursor: newest ? { id: newest.id, createdAt: newest.created_at } : null, open, reported: [] };
}

/**
 * One poll: the jobs that finished since the state was taken (oldest completion first), and the
 * state to keep after them. Reads nothing it does not need, and changes nothing (the caller keeps
 * the new state only once the poll has succeeded).
 */
export async function finishedSince(ctx: IPollFunctions, state: PollState): Promise<{ finished: Job[]; next: PollState }> {
	const open = { ...state.open };
	const finished: Job[] = [];
	// Jobs an earlier poll found finished and left for this one (oldest first): final, so not read again.
	const leftOver = takeLeftOver(state).filter((job) => job.id in open);
	for (const job of leftOver) delete open[job.id];
	const unseen = new Set(Object.keys(open));
	const oldestOpen = Math.min(...Object.values(open).map(at));
	const cursor = state.cursor;
	// Pages past the cursor, read only to reach open jobs: a bound, after which they are read another way.
	const budget = Math.ceil(unseen.size / 100) + 1;
	let newest: Job | undefined;
	// Without a cursor (the workspace had no job at activation) every job listed is new.
	let pastCursor = false;
	let pagesPastCursor = 0;
	for await (const page of jobPages(ctx)) {
		for (const job of page) {
			newest ??= job;
			if (!pastCursor && cursor && (job.id === cursor.id || at(job.created_at) < at(cursor.createdAt))) pastCursor = true;
			if (!pastCursor || unseen.has(job.id)) {
				// A job created since the last poll, or an open job the pages reached.
				if (isFinal(job)) {
					finished.push(job);
					delete open[job.id];
				} else {
					open[job.id] = job.created_at;
				}
			}
			unseen.delete(job.id);
		}
		if (pastCursor) {
			const last = page.at(-1);
			if (unseen.size === 0 || !last || at(last.created_at) < oldestOpen || ++pagesPastCursor >= budget) break;
		}
	}

	if (unseen.size > 0) {
		// Open jobs further back: the open lists say which still are; the others are read one by one.
		const stillOpen = unseen.size > 3 ? new Set((await openJobs(ctx)).map((j) => j.id)) : new Set<string>();
		for (const id of unseen) {
			if (stillOpen.has(id)) continue;
			const job = await readIfThere(ctx, id);
			if (!job) {
				// Deleted, or not in this workspace any more: nothing more will come of it.
				delete open[id];
			} else if (isFinal(job)) {
				finished.push(job);
				delete open[id];
			}
		}
	}

	// Reported in the order they finished; jobs that finished together, in the order they were created.
	const inOrder = [...leftOver, ...finished.reverse()].sort((a, b) => at(a.completed_at ?? a.created_at) - at(b.completed_at ?? b.created_at));
	const next: PollState = {
		started: true,
		cursor: newest ? { id: newest.id, createdAt: newest.created_at } : (cursor ?? null),
		open,
		reported: state.reported ?? [],
	};
	return { finished: inOrder, next };
}
