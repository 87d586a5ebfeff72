// The trigger's own checks of a delivery: its token, and whether its job's event was handled before.
import type { IWebhookFunctions } from 'n8n-workflow';
import { createHash, timingSafeEqual } from 'node:crypto';

import type { CaptioningEvent } from '../Captioning/model/events';

/** How many handled events the node remembers: enough for any redelivery window, small in static data. */
export const REMEMBERED_EVENTS = 500;

/** Compares the token in constant time (over digests, so the length leaks nothing either). */
export function tokenMatches(given: unknown, expected: string): boolean {
	const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
	return typeof given === 'string' && timingSafeEqual(digest(given), digest(expected));
}

/**
 * A handled event as remembered: `<job id> <event type> <event id> <job completed, ms or ->`.
 * The job and its final status say whether an event is the same news again, under any event id;
 * the event id tells the service's own redelivery (acknowledged) from a replay under a new id
 * (refused); the completion time lets a job forgotten from the bounded memory still be refused.
 */
interface Entry {
	job: string;
	type: string;
	id: string;
	completedMs: number;
}

const parse = (line: string): Entry => {
	const [job, type, id, at] = line.split(' ').map(decodeURIComponent);
	return { job, type, id, completedMs: Number(at) || 0 };
};
const format = (e: Entry) => [e.job, e.type, e.id].map(encodeURIComponent).concat(e.completedMs ? String(e.completedMs) : '-').join(' ');
const entryOf = (event: CaptioningEvent): Entry => ({ job: event.data.id, type: event.type, id: event.id, completedMs: 0 });

/**
 * Entries this process has claimed, per workflow and node. n8n hands each webhook request its own
 * copy of the static data and saves it only after the execution, so two deliveries of one event
 * that arrive together would both pass a check of static data alone. Checking and claiming here
 * happen in one synchronous step.
 */
const claimedInProcess = new Map<string, { handledEvents: string[]; forgottenBefore?: number }>();

const memoryKey = (ctx: IWebhookFunctions) => `${ctx.getWorkflow().id ?? ''}:${ctx.getNode().id}`;

/** The two memories: this process's, and the node's static data (kept across restarts). */
function memories(ctx: IWebhookFunctions): Array<{ handledEvents: string[]; forgottenBefore?: number }> {
	const key = memoryKey(ctx);
	let inProcess = claimedInProcess.get(key);
	if (!inProcess) claimedInProcess.set(key, (inProcess = { handledEvents: [] }));
	const data = ctx.getWorkflowStaticData('node') as { handledEvents?: string[]; forgottenBefore?: number };
	if (!Array.isArray(data.handledEvents)) data.handledEvents = [];
	return [inProcess, data as { handledEvents: string[] }];
}

export type Claim = 'new' | 'redelivery' | 'replay';

/**
 * Claims the event's job and status for this trigger. 'redelivery': this very event id was
 * handled (the service sent it again); 'replay': the job's event was handled under another id.
 */
export function claimEvent(ctx: IWebhookFunctions, event: CaptioningEvent): Claim {
	const all = memories(ctx);
	// Compared encoded, field by field: a burst checks hundreds of lines per event.
	const [job, type, id] = format(entryOf(event)).split(' ');
	if (all.some((m) => m.handledEvents.some((line) => line.split(' ', 3)[2] === id))) return 'redelivery';
	if (all.some((m) => m.handledEvents.some((line) => line.startsWith(`${job} ${type} `)))) return 'replay';
	for (const m of all) m.handledEvents.push(format(entryOf(event)));
	return 'new';
}

/** Where the event's line is in a memory, or -1. */
const lineOf = (lines: string[], event: CaptioningEvent) => {
	const id = encodeURIComponent(event.id);
	return lines.findIndex((line) => line.split(' ', 3)[2] === id);
};

/**
 * Whether a job, as read back, completed no later than a job whose entry was dropped to keep the
 * memory bounded: its event may have been handled and forgotten since, so it is not taken again.
 */
export function forgottenJob(ctx: IWebhookFunctions, completedAt: string | null): boolean {
	const at = completedAt ? Date.parse(completedAt) : NaN;
	return !Number.isNaN(at) && memories(ctx).some((m) => at <= (m.forgottenBefore ?? 0));
}

/** Records the job's completion time in its claimed entry, and keeps each memory bounded. */
export function settleEvent(ctx: IWebhookFunctions, event: CaptioningEvent, completedAt: string | null): void {
	const completedMs = completedAt ? Date.parse(completedAt) || 0 : 0;
	for (const m of memories(ctx)) {
		const i = lineOf(m.handledEvents, event);
		if (i >= 0) m.handledEvents[i] = format({ ...entryOf(event), completedMs });
		while (m.handledEvents.length > REMEMBERED_EVENTS) {
			const dropped = parse(m.handledEvents.shift()!);
			m.forgottenBefore = Math.max(m.forgottenBefore ?? 0, dropped.completedMs);
		}
	}
}

/** Gives the claim back, so that a redelivery of an event that failed here is not dropped. */
export function releaseEvent(ctx: IWebhookFunctions, event: CaptioningEvent): void {
	for (const m of memories(ctx)) {
		const i = lineOf(m.handledEvents, event);
		if (i >= 0) m.handledEvents.splice(i, 1);
	}
}

/**
 * Events being handled in this process, per workflow, node and event id. A delivery of an event
 * whose first try is still under way (the service gave up waiting and delivered it again) waits
 * for that try: answered "already received" once it started the workflow, handled anew if it failed,
 * so the event is not lost when the try the service no longer listens to fails.
 */
const underWay = new Map<string, Promise<void>>();

const tryKey = (ctx: IWebhookFunctions, event: CaptioningEvent) => `${memoryKey(ctx)}:${event.id}`;

/** The try of this event under way in this process, if any: it settles when that try has ended. */
export function tryUnderWay(ctx: IWebhookFunctions, event: CaptioningEvent): Promise<void> | undefined {
	return underWay.get(tryKey(ctx, event));
}

/**
 * Handles a claimed event as its try under way, so that a redelivery meanwhile can wait for it. A
 * try that throws (n8n answers 500) gives its claim back, as a refusal does: the service's
 * redelivery is then handled, not answered "already received" and lost.
 */
export async function asTry<T>(ctx: IWebhookFunctions, event: CaptioningEvent, handle: () => Promise<T>): Promise<T> {
	const key = tryKey(ctx, event);
	let ended!: () => void;
	underWay.set(key, new Promise<void>((resolve) => (ended = resolve)));
	let handled = false;
	try {
		const result = await handle();
		handled = true;
		return result;
	} finally {
		if (!handled) releaseEvent(ctx, event);
		underWay.delete(key);
		ended();
	}
}
