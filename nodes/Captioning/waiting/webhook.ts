// Wait for Completion: On Webhook. Every job of the run is ordered with this execution's resume URL
// and the execution sleeps in n8n's database (n8n's send-and-wait pattern): nothing polls, nothing
// is held, restarts and execution time limits do not touch it. It resumes once, when the service's
// events show every job of the batch completed or cancelled.
// What n8n keeps of a waiting execution is the node's input. So the node leaves the jobs as ordered
// there: the resume webhook reads the batch from it (a waiting webhook can keep no state of its
// own; the service is the record of how far the jobs are), and a resume by Timeout, which passes
// that input on unchanged, hands on the jobs rather than the trigger's item.
import type { IDataObject, IExecuteFunctions, INodeExecutionData, IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { backsUp, respond } from '../events/verify';
import type { CaptioningEvent } from '../model/events';
import { EVENT_OF_STATUS, eventProblem, isFinal } from '../model/events';
import type { CreateJobBody, Job } from '../model/types';
import { readJobsTogether } from '../transport/jobs';

/**
 * The URL that resumes this execution at this node (n8n's send-and-wait pattern), checked
 * before anything is ordered: the service only calls HTTPS.
 */
export function resumeUrlFor(ctx: IExecuteFunctions, i: number, body: CreateJobBody): string {
	if (body.webhook_url) {
		throw new NodeOperationError(ctx.getNode(), 'Options → Webhook URL cannot be combined with Wait for Completion: On Webhook', {
			itemIndex: i,
			description: 'On Webhook gives the service this execution\'s own resume URL. Remove Options → Webhook URL, or wait with Poll (or a Captioning Trigger).',
		});
	}
	// As n8n's Wait node: $execution.resumeUrl (which carries the execution's resume token where n8n
	// has one), then this node's id, the path of the restart webhook below.
	const resume = new URL(String(ctx.evaluateExpression('{{ $execution.resumeUrl }}', i)));
	resume.pathname = `${resume.pathname.replace(/\/$/, '')}/${ctx.getNode().id}`;
	const url = resume.toString();
	if (!url.startsWith('https://')) {
		throw new NodeOperationError(ctx.getNode(), `n8n's webhook address ${new URL(url).origin} is not HTTPS, and the service only calls https:// URLs`, {
			itemIndex: i,
			description: 'Serve n8n over HTTPS and set the WEBHOOK_URL environment variable to its public https:// address, or set Wait for Completion to Poll. Nothing was ordered.',
		});
	}
	return url;
}

/** How often On Webhook checks the jobs where it waits in place (a sub-workflow its parent waits for). */
export const inPlaceWait = { pollS: 15 };

/**
 * Whether this run is a sub-workflow whose parent waits for it (n8n's Execute Sub-workflow with
 * "wait for completion", or an AI tool's workflow): there On Webhook waits in place. n8n 1.x resumes
 * such a parent with its own input instead of the sub-workflow's items once the sub-workflow has
 * slept on a webhook (measured in 1.122.5; 2.x hands them back), and nothing a node can read tells
 * the two apart. n8n's own rule: a parent that did not say it waits (shouldResume unset) is resumed.
 */
export function parentWaitsForThisRun(ctx: IExecuteFunctions): boolean {
	if (ctx.getMode() !== 'integrated') return false;
	// n8n-core's execution context keeps the run's data in a public field not on IExecuteFunctions.
	const data = (ctx as unknown as { runExecutionData?: { parentExecution?: { shouldResume?: boolean } } }).runExecutionData;
	return data?.parentExecution?.shouldResume !== false;
}

/**
 * Puts the execution to sleep until the events (or the Timeout), leaving the run's outputs (the
 * jobs as ordered, error items too) where n8n keeps the node's input.
 */
export async function sleepUntilEvents(ctx: IExecuteFunctions, outputs: INodeExecutionData[], until: Date): Promise<void> {
	ctx.getExecuteData().data.main[0] = outputs.map((item) => ({ json: item.json, pairedItem: item.pairedItem }));
	await ctx.putExecutionToWait(until);
}

const isJob = (json: IDataObject) => json.object === 'job' && typeof json.id === 'string';

/**
 * Resumes an execution waiting in Job → Create (On Webhook). n8n checks the resume token in the
 * URL; the event's job must be one of this execution's, in the workspace, with the status the
 * event says, and ordered with this URL. The batch is read back together (a page of the job list
 * for up to 100 jobs); until every job is final the event is answered and the execution sleeps on.
 */
export async function resume(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	const body = this.getBodyData();
	const problem = eventProblem(body);
	if (problem) return respond(this, 400, { error: `Not a captioning event: ${problem}.` });
	const event = body as unknown as CaptioningEvent;
	const waiting = (this.evaluateExpression('{{ $input.all() }}') as INodeExecutionData[] | undefined) ?? [];
	const batch = waiting.filter((item) => isJob(item.json)).map((item) => item.json as unknown as Job);
	if (!batch.some((job) => job.id === event.data.id)) {
		return respond(this, 403, { error: `Event refused: job ${event.data.id} is not one this execution waits for.` });
	}
	let jobs: Map<string, Job>;
	try {
		jobs = await readJobsTogether(this, batch, { urgency: 'answer' });
	} catch (error) {
		return respond(this, 500, { error: `The jobs could not be read: ${(error as Error).message}` });
	}
	const job = jobs.get(event.data.id)!;
	const checked = backsUp(this, event, { job });
	if ('error' in checked) return respond(this, checked.status, { error: checked.error });
	const open = [...jobs.values()].filter((j) => !isFinal(j));
	if (open.length > 0) return { webhookResponse: { received: true, resumed: false, waitingFor: open.length } };
	const output = waiting.map((item): INodeExecutionData => {
		if (!isJob(item.json)) return item;
		const read = jobs.get(item.json.id as string)!;
		return {
			json: { ...(read as unknown as IDataObject), idempotent_replayed: item.json.idempotent_replayed, event_type: EVENT_OF_STATUS[read.status], event_id: read.id === event.data.id ? event.id : null },
			pairedItem: item.pairedItem,
		};
	});
	// Answered before n8n resumes: when the last events arrive at once, each sees the batch complete,
	// n8n resumes the execution once and would answer the others 500 though they were handled.
	respond(this, 200, { received: true, resumed: true });
	return { noWebhookResponse: true, workflowData: [output] };
}
