import type {
	IDataObject,
	IHookFunctions,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { attachCaptionsFields, eventsField } from '../Captioning/events/fields';
import type { AttachSettings } from '../Captioning/events/item';
import { attachSettings, jobEventItem } from '../Captioning/events/item';
import { backsUp, eventRead, respond } from '../Captioning/events/verify';
import type { CaptioningEvent, EventType } from '../Captioning/model/events';
import { eventProblem } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import { afterAnswers, arrived } from './answers';
import { asTry, claimEvent, forgottenJob, releaseEvent, REMEMBERED_EVENTS, settleEvent, tokenMatches, tryUnderWay } from './claims';
import { readTogether } from './readBack';

export class CaptioningTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Captioning Trigger',
		name: 'captioningTrigger',
		icon: { light: 'file:../../icons/captioning.svg', dark: 'file:../../icons/captioning.dark.svg' },
		group: ['trigger'],
		// Version 2 from the start: n8n 2.41.1 evaluates the old Webhook node's
		// `$parameter["options"]["binaryData"]` for every delivery to a webhook node of version 1, which
		// costs an expression isolate per delivery (CONTRIBUTING, "n8n's faults").
		version: 2,
		subtitle: '={{$parameter["events"].join(", ")}}',
		description: 'Starts the workflow when a caption job completes or is cancelled',
		defaults: { name: 'Captioning Trigger' },
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'captioningApi', required: true }],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
				responseData: 'noData',
				path: 'captioning',
			},
		],
		properties: [
			{
				displayName:
					'The service calls this trigger when a job that was ordered with its URL completes or is cancelled. In Captioning → Job → Create, set Options → Webhook URL to this trigger\'s Production URL (Webhook URLs, above), and activate this workflow. The service only calls https:// URLs, so n8n must be reachable over HTTPS; the Test URL only works while this trigger is listening for a test event. Each job starts the workflow once: with Verify Events on, an event for a job ordered with another URL (another workflow\'s, or the dashboard\'s) or for a job already reported is refused. For every job of the workspace, or an n8n without public HTTPS, use the Captioning Polling Trigger.',
				name: 'notice',
				type: 'notice',
				default: '',
			},
			eventsField,
			{
				displayName: 'Verify Events With the API',
				name: 'verify',
				type: 'boolean',
				default: true,
				description: 'Whether to read each event\'s job back with these credentials and start only if the job is in this workspace, its status matches the event, and it was ordered with this trigger\'s URL. The service does not sign events, so without this anyone who knows the URL could start the workflow with made-up data (marked verified: false). Attach Captions reads the job from the API either way and downloads only the links the service lists, never links from a posted body.',
			},
			{
				displayName: 'Secret Token',
				name: 'token',
				type: 'string',
				typeOptions: { password: true },
				default: '',
				description: 'If set, deliveries must carry it as ?token=… in the URL (add it to the Webhook URL you give the service); others are refused with 401',
			},
			...attachCaptionsFields,
		],
	};

	// The interface has no webhook registration endpoint: the URL travels with each order
	// (Job → Create's Webhook URL), so there is nothing to create or delete at the service.
	webhookMethods = {
		default: {
			async checkExists(this: IHookFunctions): Promise<boolean> {
				return false;
			},
			async create(this: IHookFunctions): Promise<boolean> {
				return true;
			},
			async delete(this: IHookFunctions): Promise<boolean> {
				return true;
			},
		},
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const answered = arrived();
		try {
			return await handleDelivery.call(this, answered);
		} finally {
			answered();
		}
	}
}

/** A delivery of an event, answered as it deserves; `answered` is told once it has been. */
async function handleDelivery(this: IWebhookFunctions, answered: () => void): Promise<IWebhookResponseData> {
	const token = this.getNodeParameter('token', '') as string;
	if (token && !tokenMatches((this.getQueryData() as IDataObject).token, token)) {
		return respond(this, 401, { error: 'The token in the URL is missing or wrong.' });
	}
	const body = this.getBodyData();
	const problem = eventProblem(body);
	if (problem) return respond(this, 400, { error: `Not a captioning event: ${problem}.` });
	const event = body as unknown as CaptioningEvent;

	const events = this.getNodeParameter('events', []) as EventType[];
	if (!events.includes(event.type)) {
		return { webhookResponse: { received: true, started: false, reason: `${event.type} is not selected in Events` } };
	}
	// Attach Captions as set, checked before the event is claimed: a setting that cannot work is
	// answered 500, so the service delivers the event again once it is fixed.
	let attach: AttachSettings;
	try {
		attach = attachSettings(this);
	} catch (error) {
		return respond(this, 500, { error: (error as Error).message });
	}
	for (;;) {
		const claim = claimEvent(this, event);
		if (claim === 'new') {
			const job = await asTry(this, event, async () => await acceptEvent(this, event));
			answered();
			if (!job) return { noWebhookResponse: true };
			// Answered: now the captions (paced with every other read of the key, retried), once no other
			// delivery waits for its answer. A download that finally fails still starts the workflow, with
			// captions_error: the service will not send this event again, and a redelivery of it stays a
			// duplicate. Without captions to download the workflow starts at once: n8n 2.x holds an
			// expression isolate for each delivery until its webhook() returns (answers.ts).
			if (attach && event.type === 'job.completed') await afterAnswers();
			const verified = this.getNodeParameter('verify', true) as boolean;
			const item = await jobEventItem(this, job, { id: event.id, type: event.type, createdAt: event.created_at, verified }, { attach, settle: true });
			return { noWebhookResponse: true, workflowData: [[item]] };
		}
		if (claim === 'replay') {
			return respond(this, 409, { error: `Event refused: job ${event.data.id} was already reported as ${event.type} (under another event id); each job starts this workflow once.` });
		}
		// This very event was received before: if its first try is still under way, its outcome
		// decides (accepted: this is a duplicate; refused or failed: its claim was given back, take it here).
		const first = tryUnderWay(this, event);
		if (!first) return { webhookResponse: { received: true, started: false, reason: `event ${event.id} was already received` } };
		await first;
	}
}

/**
 * A new event, claimed: read back (with the events that arrive with it) and checked as Verify
 * Events says, then answered. Returns the job to start the workflow with once accepted (answered
 * 200), or undefined once refused (answered, and the claim given back so that the service's
 * redelivery is handled anew). Answered before the captions are downloaded and before n8n creates
 * the execution (2.x waits for that to answer): under a burst those are most of the answer time,
 * and the claim already makes a redelivery a duplicate.
 */
async function acceptEvent(ctx: IWebhookFunctions, event: CaptioningEvent): Promise<Job | undefined> {
	const verify = ctx.getNodeParameter('verify', true) as boolean;
	const attach = event.type === 'job.completed' && (ctx.getNodeParameter('attachCaptions', false) as boolean);
	let job: Job = event.data;
	// With Verify off, Attach Captions still reads the job: caption links come from the service,
	// never from a posted body, so a forged event cannot make n8n fetch addresses of its choosing
	// (or send the key to them). Verify also checks the job was ordered with this trigger's URL.
	if (verify || attach) {
		const read = eventRead(await readTogether(ctx, event));
		// Verify off: the status must still match (links of a job not yet completed are no captions).
		const checked = backsUp(ctx, event, read, !verify);
		if ('error' in checked) {
			releaseEvent(ctx, event);
			respond(ctx, checked.status, { error: checked.error });
			return undefined;
		}
		job = checked.job;
		if (verify && forgottenJob(ctx, job.completed_at)) {
			releaseEvent(ctx, event);
			respond(ctx, 409, {
				error: `Event refused: job ${job.id} finished before the ${REMEMBERED_EVENTS} latest events this trigger remembers, so it may have started this workflow already.`,
			});
			return undefined;
		}
	}
	settleEvent(ctx, event, verify ? job.completed_at : null);
	respond(ctx, 200, { received: true, started: true });
	return job;
}
