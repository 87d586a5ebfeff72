// Wait for Completion: On Webhook (its resume: waiting/resume.ts). Every job of the run is ordered
// with this execution's resume URL and the execution sleeps in n8n's database (n8n's send-and-wait
// pattern): nothing polls, nothing is held, restarts and execution time limits do not touch it.
// What it waits for is the run's items as ordered: they take the place of the node's input in the
// waiting execution, so a resume reads each job by its id whatever the workspace's history, and a
// Timeout hands on the jobs as last known (n8n passes a node's input on when its wait time runs
// out, as for its own Wait node). It resumes once every job shows completed or cancelled. A job
// another execution ordered (its events go to that one) is checked in place, as Poll does.
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { isFinal } from '../model/events';
import { refuse } from '../transport/errors';
import type { CreateJobBody, Job } from '../model/types';

/**
 * The URL that resumes this execution at this node (n8n's send-and-wait pattern), checked
 * before anything is ordered: the service only calls HTTPS.
 */
export function resumeUrlFor(ctx: IExecuteFunctions, i: number, body: CreateJobBody): string {
	if (body.webhook_url)
		refuse(
			ctx,
			i,
			'Options → Webhook URL cannot be combined with Wait for Completion: On Webhook',
			"On Webhook gives the service this execution's own resume URL. Remove Options → Webhook URL, or wait with Poll (or a Captioning Trigger).",
		);
	// As n8n's Wait node: $execution.resumeUrl (which carries the execution's resume token where n8n
	// has one), then this node's id, the path of the restart webhook below.
	const resume = new URL(String(ctx.evaluateExpression('{{ $execution.resumeUrl }}', i)));
	resume.pathname = `${resume.pathname.replace(/\/$/, '')}/${ctx.getNode().id}`;
	if (resume.protocol !== 'https:')
		refuse(
			ctx,
			i,
			`n8n's webhook address ${resume.origin} is not HTTPS, and the service only calls https:// URLs`,
			'Serve n8n over HTTPS and set the WEBHOOK_URL environment variable to its public https:// address, or set Wait for Completion to Poll. Nothing was ordered.',
		);
	return resume.toString();
}

/** How often On Webhook checks the jobs where it waits in place. */
export const IN_PLACE_POLL_S = 15;

const isJob = (json: IDataObject) => json.object === 'job' && typeof json.id === 'string';

/**
 * On Webhook, once every item of the run is ordered: nothing to wait for when every job is final
 * (a repeat of orders that finished). Otherwise the execution sleeps until the events, as long as
 * `timeoutMinutes` (the longest Timeout), with the run's items in place of its input.
 */
export async function waitForJobs(
	ctx: IExecuteFunctions,
	outputs: INodeExecutionData[],
	timeoutMinutes: number,
): Promise<void> {
	if (!outputs.some((item) => isJob(item.json) && !isFinal(item.json as unknown as Job))) return;
	ctx.getExecuteData().data.main = [outputs];
	await ctx.putExecutionToWait(new Date(Date.now() + timeoutMinutes * 60000));
}
