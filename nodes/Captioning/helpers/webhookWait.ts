// Wait for Completion: On Webhook. The job is ordered with this execution's resume URL and the
// execution sleeps in n8n's database (n8n's send-and-wait pattern); the service's event resumes it.
import type { IDataObject, IExecuteFunctions, IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import type { CaptioningEvent } from './events';
import { eventProblem, readBackEvent, respond } from './events';
import type { CreateJobBody } from './types';

/**
 * The URL that resumes this execution at this node (n8n's send-and-wait pattern), checked
 * before anything is ordered: the service only calls HTTPS, and one execution waits for one job.
 */
export function resumeUrlFor(ctx: IExecuteFunctions, i: number, body: CreateJobBody): string {
	if (ctx.getInputData().length !== 1) {
		throw new NodeOperationError(ctx.getNode(), `Wait for Completion: On Webhook takes one item per execution; this node received ${ctx.getInputData().length}`, {
			itemIndex: i,
			description: 'An execution can wait for one job. For batches use Wait for Completion: Poll, or send each item to its own execution (e.g. an Execute Workflow node).',
		});
	}
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

/**
 * Resumes an execution waiting in Job → Create (On Webhook) with the job of the service's event.
 * n8n checks the resume token in the URL; the event is also checked against the job as read
 * back, which must have been ordered with this execution's URL.
 */
export async function resume(this: IWebhookFunctions): Promise<IWebhookResponseData> {
	const body = this.getBodyData();
	const problem = eventProblem(body);
	if (problem) return respond(this, 400, { error: `Not a captioning event: ${problem}.` });
	const event = body as unknown as CaptioningEvent;
	const read = await readBackEvent(this, event);
	if ('error' in read) return respond(this, read.status, { error: read.error });
	const { job } = read;
	return {
		webhookResponse: { received: true, resumed: true },
		workflowData: [[{ json: { ...(job as unknown as IDataObject), event_id: event.id, event_type: event.type } }]],
	};
}

