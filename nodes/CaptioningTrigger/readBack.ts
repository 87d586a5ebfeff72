// Events that arrive close together are read back together. When a batch of videos finishes at
// once, its events come in a burst (each perhaps twice); read one by one, every event would cost a
// read under the read limit the whole API key shares, and the last ones would wait for seconds of
// 429s before they are answered, long enough for the service to give up and deliver them again.
// Here a trigger reads at most once per `spacingMs`: the first event of a quiet moment is read at
// once, and the events that arrive while a read is under way or spaced share the next one (a page
// of the job list holds 100 jobs; readJobsSettled reads one by one only what its pages did not
// hold). The memory is this process's, as n8n runs every webhook call of a trigger in one process
// (or in each webhook process of queue mode, each with its own).
import type { IWebhookFunctions } from 'n8n-workflow';

import type { CaptioningEvent } from '../Captioning/helpers/events';
import type { Job } from '../Captioning/helpers/types';
import { readJobsSettled } from '../Captioning/helpers/wait';
import { pause } from '../Captioning/transport';

export const readBackLimits = {
	/** At most one read-back of a trigger starts in this long: about 4 reads a second at most. */
	spacingMs: 250,
};

interface Waiting {
	ctx: IWebhookFunctions;
	job: Pick<Job, 'id' | 'created_at'>;
	resolve: (result: Job | Error) => void;
}

interface Reader {
	queue: Waiting[];
	draining: boolean;
	lastReadAt: number;
}

/** Per workflow and node: the events waiting for the next read, and when the last one started. */
const readers = new Map<string, Reader>();

/** The event's job as the API returns it now (or the error reading it), read with its neighbours. */
export async function readTogether(ctx: IWebhookFunctions, event: CaptioningEvent): Promise<Job | Error> {
	const key = `${ctx.getWorkflow().id ?? ''}:${ctx.getNode().id}`;
	let reader = readers.get(key);
	if (!reader) readers.set(key, (reader = { queue: [], draining: false, lastReadAt: 0 }));
	const job = { id: event.data.id, created_at: String(event.data.created_at ?? '') };
	const read = new Promise<Job | Error>((resolve) => reader.queue.push({ ctx, job, resolve }));
	if (!reader.draining) void drain(reader);
	return await read;
}

async function drain(reader: Reader): Promise<void> {
	reader.draining = true;
	try {
		while (reader.queue.length > 0) {
			await pause(Math.max(0, reader.lastReadAt + readBackLimits.spacingMs - Date.now()));
			const batch = reader.queue.splice(0);
			reader.lastReadAt = Date.now();
			// Read with the credentials of a request still waiting for the answer (the batch's first).
			let read: Map<string, Job | Error>;
			try {
				read = await readJobsSettled(batch[0].ctx, batch.map((w) => w.job));
			} catch (error) {
				read = new Map(batch.map((w) => [w.job.id, error as Error]));
			}
			for (const w of batch) w.resolve(read.get(w.job.id) ?? new Error(`job ${w.job.id} was not read`));
		}
	} finally {
		reader.draining = false;
	}
}
