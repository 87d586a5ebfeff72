// An event's job, read back inside its execution (Verify Events, Attach Captions) until reads show
// the status the event reports (an event may come before they do), for up to STATUS_WAIT_MINUTES.
// Each execution reads with its own context; only answers are shared, between the executions of
// one trigger (workflow, node and credential) in this process, so that a burst costs a few reads
// of the key's shared limit, not one per event: the final jobs a read of the job list showed, kept
// for a minute, and the read under way, which an execution that needs one waits for before it
// reads itself. A read that fails (its execution was cancelled) answers nothing: the others read
// again. An execution ends once the trigger's deliveries pause; with Verify Events alone it reads
// only then.
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { jobEventItem } from '../Captioning/events/item';
import type { EventType } from '../Captioning/model/events';
import { isFinal, orderedWith, STATUS_OF } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import { CREDENTIAL_NAME, sleep } from '../Captioning/transport';
import { listedJobs, notInWorkspace, readJob } from '../Captioning/transport/jobs';

/** How long an execution reads again while its job does not show the event's status. */
const STATUS_WAIT_MINUTES = 5;
/** How long final jobs a read showed answer later events, and the most pages one read reads. */
const KEPT_MS = 60000;
const MAX_PAGES = 20;
/** At most one read of a trigger starts in this long: the executions that come meanwhile share it. */
const SPACING_MS = 250;
/** A run that read goes on once its trigger took no delivery for QUIET_MS, or after QUIET_WAIT_MS. */
const QUIET_MS = 50;
const QUIET_WAIT_MS = 3000;

type Wanted = Pick<Job, 'id' | 'created_at'>;

/** What the reads of one trigger showed, the jobs its executions wait for, and its read under way. */
interface Answers {
	recent: Map<string, { job: Job; at: number }>;
	waiting: Map<string, Wanted>;
	underWay?: Promise<unknown>;
	/** The executions that waited for the read under way, and how many went on since it answered. */
	sharing?: { waited: number; wentOn: number };
	lastReadAt?: number;
	/** When the trigger last took a delivery (in this process). */
	deliveredAt?: number;
	/** The news its runs took, until a minute passes with no copy, and when each run's store answer is in. */
	taken: Map<string, { at: number; recorded: Promise<void> }>;
}

const answers = new Map<string, Answers>();

const quiet = (shared: Answers) => Date.now() - (shared.deliveredAt ?? 0) >= QUIET_MS;

export function answersOf(ctx: Pick<IExecuteFunctions, 'getNode' | 'getWorkflow'>): Answers {
	for (const [key, shared] of answers) {
		for (const [id, { at }] of shared.recent)
			if (Date.now() - at > KEPT_MS) shared.recent.delete(id);
		for (const [news, { at }] of shared.taken)
			if (Date.now() - at > KEPT_MS) shared.taken.delete(news);
		const idle = !shared.waiting.size && !shared.recent.size && !shared.taken.size;
		if (!shared.underWay && idle && quiet(shared)) answers.delete(key);
	}
	const credential = ctx.getNode().credentials?.[CREDENTIAL_NAME]?.id ?? '';
	const key = `${ctx.getWorkflow().id ?? ''}:${ctx.getNode().id}:${credential}`;
	if (!answers.has(key))
		answers.set(key, { recent: new Map(), waiting: new Map(), taken: new Map() });
	return answers.get(key)!;
}

/**
 * One read by this execution: the newest pages of the job list down to the oldest job the trigger's
 * executions wait for (a page a waiting job, at most MAX_PAGES; none when it waits alone), every
 * final job on them kept for the others; then its own job by its id, if the pages did not hold it.
 */
async function read(ctx: IExecuteFunctions, job: Wanted, shared: Answers): Promise<Job | Error> {
	const wanted = [...shared.waiting.values()];
	const maxPages = Math.min(wanted.length, MAX_PAGES);
	const seen = (listed: Job) =>
		isFinal(listed) && shared.recent.set(listed.id, { job: listed, at: Date.now() });
	try {
		const listed =
			wanted.length > 1 ? await listedJobs(ctx, wanted, { seen, maxPages }) : undefined;
		return listed?.get(job.id) ?? (await readJob(ctx, job.id));
	} catch (error) {
		return error as Error;
	}
}

/** The job as one read shows it: a final job another read showed, or after the read under way, or this execution's own. */
async function readOnce(ctx: IExecuteFunctions, job: Wanted, shared: Answers) {
	for (;;) {
		if (shared.recent.has(job.id)) return shared.recent.get(job.id)!.job;
		if (!shared.underWay) break;
		const sharing = (shared.sharing ??= { waited: 0, wentOn: 0 });
		sharing.waited++;
		await shared.underWay;
		// The executions a read answers go on spread over SPACING_MS, not at once: n8n stores each
		// execution's end, and a crowd of ends delays its answers to the deliveries that come meanwhile.
		await sleep((sharing.wentOn++ * SPACING_MS) / sharing.waited);
	}
	shared.sharing = undefined;
	// A read starts QUIET_MS / 2 after it is asked for at the soonest: by then every run the same
	// pause let go (each checks every QUIET_MS / 2) waits for it, and its pages answer them all.
	const reading = (async () => {
		await sleep(Math.max(QUIET_MS / 2, (shared.lastReadAt ?? 0) + SPACING_MS - Date.now()));
		shared.lastReadAt = Date.now();
		return await read(ctx, job, shared);
	})();
	const underWay = (shared.underWay = reading.catch(() => undefined));
	try {
		return await reading;
	} finally {
		if (shared.underWay === underWay) shared.underWay = undefined;
	}
}

/**
 * The job as the API returns it (or the error reading it): read again, 1 s, 2 s, 4 s… apart, while
 * it is not final, until it shows `status` or STATUS_WAIT_MINUTES have passed. A final job is final.
 */
async function readUntilShown(ctx: IExecuteFunctions, job: Wanted, status: Job['status']) {
	const shared = answersOf(ctx);
	const until = Date.now() + STATUS_WAIT_MINUTES * 60000;
	shared.waiting.set(job.id, job);
	try {
		for (let delay = 1000; ; delay = Math.min(delay * 2, 30000)) {
			const shown = await readOnce(ctx, job, shared);
			if (shown instanceof Error || shown.status === status || isFinal(shown)) return shown;
			if (Date.now() + delay > until) return shown;
			await sleep(delay, ctx.getExecutionCancelSignal());
		}
	} finally {
		shared.waiting.delete(job.id);
	}
}

/** Once the trigger's deliveries pause: n8n answers them sooner with no run ending meanwhile. */
export async function deliveriesPause(ctx: IExecuteFunctions): Promise<void> {
	const shared = answersOf(ctx);
	for (const by = Date.now() + QUIET_WAIT_MS; !quiet(shared) && Date.now() < by; )
		await sleep(QUIET_MS / 2, ctx.getExecutionCancelSignal());
}

/**
 * The event's item with its job as read (Verify Events, or Attach Captions on a completion), or
 * undefined when the job does not back the event up: not in this workspace, final with another
 * status, or (Verify Events) ordered with another URL. A job that still does not show the status
 * fails the execution, naming it.
 */
export async function readBackItem(
	ctx: IExecuteFunctions,
	input: INodeExecutionData,
	verify: boolean,
	attach: boolean,
): Promise<INodeExecutionData | undefined> {
	const posted = input.json as unknown as Job & IDataObject;
	const type = posted.event_type as EventType;
	if (!verify && !(attach && type === 'job.completed')) return input;
	const status = STATUS_OF[type];
	const job = await readUntilShown(ctx, posted, status);
	if (notInWorkspace(job)) return undefined;
	if (job instanceof Error) throw job;
	if (job.status !== status) {
		if (job.status === 'completed' || job.status === 'cancelled') return undefined;
		throw new NodeOperationError(ctx.getNode(), `Job ${job.id} does not show ${status} yet`, {
			description: `Event ${String(posted.event_id)} reports ${type}, but after ${STATUS_WAIT_MINUTES} minutes of reads the API still shows the job ${job.status}. Retry this execution once Job → Get shows it ${status}: nothing else started a run for it.`,
		});
	}
	if (verify && !orderedWith(job, `/${ctx.getNode().webhookId ?? ''}/captioning`)) return undefined;
	return jobEventItem(job, {
		id: String(posted.event_id),
		type,
		createdAt: String(posted.event_created_at),
		verified: verify,
	});
}
