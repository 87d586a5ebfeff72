// Wait for Completion: On Webhook. Every job of the run is ordered with this execution's resume URL
// and the execution sleeps in n8n's database (n8n's send-and-wait pattern): nothing polls, nothing
// is held, restarts and execution time limits do not touch it. It resumes once, when the service's
// events show every job of the batch completed or cancelled; an event while some are open costs a
// read of the open jobs' list, not a read of the batch.
// What n8n keeps of a waiting execution is the node's input. So the node leaves the jobs as ordered
// there: the resume webhook reads the batch from it (a waiting webhook can keep no state of its
// own; the service is the record of how far the jobs are), and a resume by Timeout, which passes
// that input on unchanged, hands on the jobs rather than the trigger's item.
import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { answerRefusal, backsUp, comeBack, respond } from '../events/verify';
import type { CaptioningEvent } from '../model/events';
import { EVENT_OF_STATUS, eventProblem, isFinal } from '../model/events';
import type { CreateJobBody, Job } from '../model/types';
import { jobPages, readJobsSettled } from '../transport/jobs';
import { waitWithItems } from '../transport/n8nPrivate';
import type { JobWaiter } from './poll';

/**
 * The URL that resumes this execution at this node (n8n's send-and-wait pattern), checked
 * before anything is ordered: the service only calls HTTPS.
 */
export function resumeUrlFor(ctx: IExecuteFunctions, i: number, body: CreateJobBody): string {
	if (body.webhook_url) {
		throw new NodeOperationError(
			ctx.getNode(),
			'Options → Webhook URL cannot be combined with Wait for Completion: On Webhook',
			{
				itemIndex: i,
				description:
					"On Webhook gives the service this execution's own resume URL. Remove Options → Webhook URL, or wait with Poll (or a Captioning Trigger).",
			},
		);
	}
	// As n8n's Wait node: $execution.resumeUrl (which carries the execution's resume token where n8n
	// has one), then this node's id, the path of the restart webhook below.
	const resume = new URL(String(ctx.evaluateExpression('{{ $execution.resumeUrl }}', i)));
	resume.pathname = `${resume.pathname.replace(/\/$/, '')}/${ctx.getNode().id}`;
	const url = resume.toString();
	if (!url.startsWith('https://')) {
		throw new NodeOperationError(
			ctx.getNode(),
			`n8n's webhook address ${new URL(url).origin} is not HTTPS, and the service only calls https:// URLs`,
			{
				itemIndex: i,
				description:
					'Serve n8n over HTTPS and set the WEBHOOK_URL environment variable to its public https:// address, or set Wait for Completion to Poll. Nothing was ordered.',
			},
		);
	}
	return url;
}

/** How often On Webhook checks the jobs where it waits in place (a sub-workflow its parent waits for). */
export const inPlaceWait = { pollS: 15 };

/**
 * On Webhook, once every item of the run is ordered: nothing to wait for when every job is final
 * (a repeat of orders that finished); checked here every `inPlaceWait.pollS` seconds when an open
 * job was ordered by another execution (its events go to that execution's URL: a re-run, a
 * schedule or a Retry repeating an order), until its Timeout; otherwise the execution sleeps until
 * the events. Returns whether it waited here.
 */
export async function waitForJobs(
	ctx: IExecuteFunctions,
	outputs: INodeExecutionData[],
	options: { timeoutMinutes: number; orderedElsewhere: Set<string>; waiter: JobWaiter },
): Promise<boolean> {
	const open = outputs.filter((item) => isJob(item.json) && !isFinal(item.json as unknown as Job));
	if (open.length === 0) return false;
	if (!open.some((item) => options.orderedElsewhere.has(item.json.id as string))) {
		await waitWithItems(ctx, outputs, new Date(Date.now() + options.timeoutMinutes * 60000));
		return false;
	}
	await Promise.all(
		open.map(async (item) => {
			const itemIndex = (item.pairedItem as { item: number }).item;
			try {
				const job = await options.waiter.wait(
					item.json as unknown as Job,
					itemIndex,
					inPlaceWait.pollS,
					options.timeoutMinutes,
				);
				item.json = {
					...item.json,
					...(job as unknown as IDataObject),
					event_type: EVENT_OF_STATUS[job.status],
					event_id: null,
				};
			} catch {
				// As a resume by Timeout: the job as last known, to check later with Job → Get.
			}
		}),
	);
	return true;
}

const isJob = (json: IDataObject) => json.object === 'job' && typeof json.id === 'string';

/**
 * A job of the batch that is queued or processing now, if any. The processing list's first page
 * usually holds one (a read an event); only when it does not are the lists read whole: queued before
 * processing, as a status only moves forward (a job that leaves the queued list after it was read
 * is in the processing list read after it, or final).
 */
async function openJobOf(ctx: IWebhookFunctions, ids: Set<string>): Promise<Job | undefined> {
	const lists = [
		{ status: 'processing', pages: 1 },
		{ status: 'queued', pages: Infinity },
		{ status: 'processing', pages: Infinity },
	];
	for (const { status, pages } of lists) {
		let read = 0;
		for await (const page of jobPages(ctx, { status }, { priority: 'high' })) {
			const open = page.find((job) => ids.has(job.id));
			if (open) return open;
			if (++read >= pages) break;
		}
	}
	return undefined;
}

/**
 * Resumes an execution waiting in Job → Create (On Webhook). n8n checks the resume token in the
 * URL; the event's job must be one of this execution's. While a job of the batch is open the event
 * is answered and the execution sleeps on (a read or two an event, whatever the batch's size);
 * once none is, the batch is read back together, the event's job must back it up (in the
 * workspace, with the status the event says, ordered with this URL), and the execution resumes.
 */
export async function resume(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	const body = this.getBodyData();
	const problem = eventProblem(body);
	if (problem) return respond(this, 400, { error: `Not a captioning event: ${problem}.` });
	const event = body as unknown as CaptioningEvent;
	const waiting =
		(this.evaluateExpression('{{ $input.all() }}') as INodeExecutionData[] | undefined) ?? [];
	const batch = waiting
		.filter((item) => isJob(item.json))
		.map((item) => item.json as unknown as Job);
	if (!batch.some((job) => job.id === event.data.id)) {
		return respond(this, 403, {
			error: `Event refused: job ${event.data.id} is not one this execution waits for.`,
		});
	}
	let jobs: Map<string, Job | Error>;
	try {
		const open = await openJobOf(this, new Set(batch.map((job) => job.id)));
		if (open?.id === event.data.id) {
			// Its own job is not final yet as the API shows it: the service is asked to deliver it again.
			return comeBack(
				this,
				`Not yet: the event says ${event.type} but the job's status is ${open.status}; deliver the event again later.`,
			);
		}
		if (open) return { webhookResponse: { received: true, resumed: false } };
		jobs = await readJobsSettled(this, batch, { priority: 'high' });
	} catch (error) {
		return comeBack(
			this,
			`The jobs could not be read (${(error as Error).message}); deliver the event again later.`,
		);
	}
	const failed = [...jobs.values()].find((j): j is Error => j instanceof Error);
	if (failed)
		return comeBack(
			this,
			`The jobs could not be read (${failed.message}); deliver the event again later.`,
		);
	const read = jobs as Map<string, Job>;
	const checked = backsUp(this, event, { job: read.get(event.data.id)! });
	if ('error' in checked) return answerRefusal(this, checked);
	if ([...read.values()].some((j) => !isFinal(j)))
		return { webhookResponse: { received: true, resumed: false } };
	const output = waiting.map((item): INodeExecutionData => {
		if (!isJob(item.json)) return item;
		const job = read.get(item.json.id as string)!;
		return {
			json: {
				...(job as unknown as IDataObject),
				idempotent_replayed: item.json.idempotent_replayed,
				event_type: EVENT_OF_STATUS[job.status],
				event_id: job.id === event.data.id ? event.id : null,
			},
			pairedItem: item.pairedItem,
		};
	});
	// Answered before n8n resumes: when the last events arrive at once, each sees the batch complete,
	// n8n resumes the execution once and would answer the others 500 though they were handled.
	respond(this, 200, { received: true, resumed: true });
	return { noWebhookResponse: true, workflowData: [output] };
}
