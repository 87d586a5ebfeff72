// Events that arrive close together are read back together: a trigger reads at most once per
// `spacingMs`, and the events that arrive meanwhile share the next read (readJobsSettled: pages of
// the job list down to the oldest of their jobs, at most one page per event, then one by one what
// they did not hold), so a burst costs a few reads of the key's shared read limit instead of one
// per event. Jobs a read showed final are kept for `recentMs`: an
// event claiming that status needs no read of its own; any other event is read anew.
// Readers are per process, workflow, node and credentials; idle ones are dropped.
// A delivery that did not prove itself with the Webhook Secret Token is a stranger's: its reads go
// last under the key's rate limits, and a trigger spends at most `strangerReads` a window on them;
// past that, a stranger's event whose job no recent read showed is not read (the trigger asks the
// sender to come back), so forged events cannot take the reads the workflows need.
import type { IWebhookFunctions } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import type { CaptioningEvent } from '../Captioning/model/events';
import { isFinal, verificationProblem } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import { CREDENTIAL_NAME, sleep } from '../Captioning/transport';
import type { ReadBudget } from '../Captioning/transport/jobs';
import { readJobsSettled } from '../Captioning/transport/jobs';

export const readBackLimits = {
	/** At most one read-back of a trigger starts in this long: about 4 reads a second at most. */
	spacingMs: 250,
	/** A delivery is answered within this (the service gives up after 10 s): 503 when the read has not come. */
	answerWithinMs: 8000,
	/** How long final jobs a read showed are kept, and how many at most. */
	recentMs: 60000,
	recentJobs: 1000,
	/** The most pages of the job list one read-back reads (never more than its events). */
	maxPages: 20,
	/** The most reads a trigger makes for strangers' events in `strangerWindowMs` (bench: forgedFloodBatchVsAlone). */
	strangerReads: 20,
	strangerWindowMs: 60000,
};

interface Waiting {
	ctx: IWebhookFunctions;
	event: CaptioningEvent;
	/** Delivered with the Webhook Secret Token. */
	proven: boolean;
	resolve: (result: Job | Error) => void;
}

interface Reader {
	queue: Waiting[];
	draining: boolean;
	lastReadAt: number;
	/** What recent reads showed, by job id, oldest first: final jobs, and ids in no job of the workspace (404). */
	recent: Map<string, { read: Job | Error; at: number }>;
	/** The reads left for strangers' events in the window that began `since`. */
	strangers: { left: number; since: number };
}

/** Per workflow, node and credentials. */
const readers = new Map<string, Reader>();

/** Drops what is past `recentMs` or over `recentJobs` (the map is in the order things were read). */
function trim(reader: Reader, now: number): void {
	for (const [id, kept] of reader.recent) {
		if (reader.recent.size <= readBackLimits.recentJobs && now - kept.at <= readBackLimits.recentMs)
			break;
		reader.recent.delete(id);
	}
}

function readerOf(ctx: IWebhookFunctions): Reader {
	const now = Date.now();
	for (const [key, r] of readers) {
		trim(r, now);
		const idle = !r.draining && r.queue.length === 0 && r.recent.size === 0;
		if (idle && now - r.strangers.since >= readBackLimits.strangerWindowMs) readers.delete(key);
	}
	// By the credential's id, not its secret: decrypting it means a database read, which under a burst
	// waits behind every execution n8n is saving.
	const credential = ctx.getNode().credentials?.[CREDENTIAL_NAME]?.id ?? '';
	const key = `${ctx.getWorkflow().id ?? ''}:${ctx.getNode().id}:${credential}`;
	let reader = readers.get(key);
	if (!reader) {
		reader = {
			queue: [],
			draining: false,
			lastReadAt: 0,
			recent: new Map(),
			strangers: { left: 0, since: 0 },
		};
		readers.set(key, reader);
	}
	return reader;
}

/** What a recent read showed that answers the event: its job not in the workspace, or final with the event's status. */
function recentFor(reader: Reader, event: CaptioningEvent): Job | Error | undefined {
	const kept = reader.recent.get(event.data.id);
	if (!kept || Date.now() - kept.at > readBackLimits.recentMs) return undefined;
	const { read } = kept;
	return read instanceof Error || !verificationProblem(event, read) ? read : undefined;
}

/** Keeps a final job, or a 404, for the events that come next. */
function keep(reader: Reader, id: string, read: Job | Error): void {
	const is404 = read instanceof NodeApiError && read.httpCode === '404';
	if (read instanceof Error ? !is404 : !isFinal(read)) return;
	reader.recent.delete(id);
	reader.recent.set(id, { read, at: Date.now() });
	trim(reader, Date.now());
}

/** The reads left for strangers' events now (a new window's, once the last one ended). */
function strangersBudget(reader: Reader): ReadBudget {
	const now = Date.now();
	if (now - reader.strangers.since >= readBackLimits.strangerWindowMs)
		reader.strangers = { left: readBackLimits.strangerReads, since: now };
	return reader.strangers;
}

const notRead = (id: string) => new Error(`job ${id} was not read`);

/**
 * The event's job as the API returns it (or the error reading it), read with its neighbours; for a
 * stranger (not `proven`) once the reads for strangers are spent, an error without a read.
 */
export async function readTogether(
	ctx: IWebhookFunctions,
	event: CaptioningEvent,
	proven: boolean,
): Promise<Job | Error> {
	const reader = readerOf(ctx);
	const kept = recentFor(reader, event);
	if (kept) return kept;
	if (!proven && strangersBudget(reader).left <= 0) return notRead(event.data.id);
	const read = new Promise<Job | Error>((resolve) =>
		reader.queue.push({ ctx, event, proven, resolve }),
	);
	if (!reader.draining) void drain(reader);
	return await read;
}

/** Reads a batch's jobs together and answers each of its events. */
async function readBatch(reader: Reader, batch: Waiting[], proven: boolean): Promise<void> {
	const budget = proven ? undefined : strangersBudget(reader);
	let read: Map<string, Job | Error>;
	try {
		const jobs = batch.map((w) => ({
			id: w.event.data.id,
			created_at: String(w.event.data.created_at ?? ''),
		}));
		// Read with the credentials of a request still waiting for the answer (the batch's first).
		read = await readJobsSettled(batch[0].ctx, jobs, {
			priority: proven ? 'high' : 'low',
			seen: (job) => keep(reader, job.id, job),
			retry: { maxTurnWaitMs: readBackLimits.answerWithinMs },
			// A page holds a hundred jobs: the final ones it shows answer the burst's next events too.
			maxPages: Math.min(batch.length, readBackLimits.maxPages),
			budget,
		});
	} catch (error) {
		read = new Map(batch.map((w) => [w.event.data.id, error as Error]));
	}
	for (const [id, job] of read) keep(reader, id, job);
	for (const w of batch) w.resolve(read.get(w.event.data.id) ?? notRead(w.event.data.id));
}

async function drain(reader: Reader): Promise<void> {
	reader.draining = true;
	try {
		while (reader.queue.length > 0) {
			await sleep(Math.max(0, reader.lastReadAt + readBackLimits.spacingMs - Date.now()));
			const waiting = reader.queue.splice(0);
			reader.lastReadAt = Date.now();
			// Proven events first, at the head of the key's reads; strangers' last, within their budget.
			for (const proven of [true, false]) {
				const batch = waiting.filter((w) => w.proven === proven);
				if (batch.length > 0) await readBatch(reader, batch, proven);
			}
			// Events that came meanwhile, whose jobs this read already showed final: answered now.
			reader.queue = reader.queue.filter((w) => {
				const job = recentFor(reader, w.event);
				if (job) w.resolve(job);
				return !job;
			});
		}
	} finally {
		reader.draining = false;
	}
}
