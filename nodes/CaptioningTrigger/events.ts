// The trigger's own checks of a delivery: its token, and whether it was seen before.
import type { IWebhookFunctions } from 'n8n-workflow';
import { createHash, timingSafeEqual } from 'node:crypto';

/** How many event ids the node remembers: enough for any redelivery window, small in static data. */
export const REMEMBERED_EVENTS = 500;

/** Compares the token in constant time (over digests, so the length leaks nothing either). */
export function tokenMatches(given: unknown, expected: string): boolean {
	const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
	return typeof given === 'string' && timingSafeEqual(digest(given), digest(expected));
}

/**
 * Event ids this process has claimed, per workflow and node. n8n hands each webhook request its
 * own copy of the static data and saves it only after the execution, so two deliveries of one
 * event that arrive together would both pass a check of static data alone. Checking and claiming
 * here happen in one synchronous step.
 */
const claimedInProcess = new Map<string, string[]>();

function remember(ids: string[], id: string): void {
	ids.push(id);
	if (ids.length > REMEMBERED_EVENTS) ids.splice(0, ids.length - REMEMBERED_EVENTS);
}

function forget(ids: string[], id: string): void {
	const at = ids.lastIndexOf(id);
	if (at >= 0) ids.splice(at, 1);
}

/** The two memories of emitted ids: this process's, and the node's static data (kept across restarts). */
function memories(ctx: IWebhookFunctions): [string[], string[]] {
	const key = `${ctx.getWorkflow().id ?? ''}:${ctx.getNode().id}`;
	let inProcess = claimedInProcess.get(key);
	if (!inProcess) claimedInProcess.set(key, (inProcess = []));
	const data = ctx.getWorkflowStaticData('node');
	if (!Array.isArray(data.eventIds)) data.eventIds = [];
	return [inProcess, data.eventIds as string[]];
}

/** Marks an id as taken; false when it already was (a duplicate delivery). */
export function claimEvent(ctx: IWebhookFunctions, id: string): boolean {
	const [inProcess, persisted] = memories(ctx);
	if (inProcess.includes(id) || persisted.includes(id)) return false;
	remember(inProcess, id);
	remember(persisted, id);
	return true;
}

/** Gives an id back, so that a redelivery of an event that failed here is not dropped. */
export function releaseEvent(ctx: IWebhookFunctions, id: string): void {
	for (const ids of memories(ctx)) forget(ids, id);
}

