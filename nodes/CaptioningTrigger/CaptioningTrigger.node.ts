import type {
	IExecuteFunctions,
	IDataObject,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { attachCaptionsFields, eventsField } from '../Captioning/events/fields';
import { attachSettings, jobEventItem, withCaptions } from '../Captioning/events/item';
import { answerRefusal, backsUp, comeBack, respond } from '../Captioning/events/verify';
import type { CaptioningEvent, EventType } from '../Captioning/model/events';
import { eventProblem } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import { sleep } from '../Captioning/transport';
import { serviceOf } from '../Captioning/transport/service';
import { claimEvent, eventsStarted, tokenMatches } from './handledEvents';
import { readBackLimits, readTogether } from './readBack';

export class CaptioningTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Captioning Trigger',
		name: 'captioningTrigger',
		icon: {
			light: 'file:../../icons/captioning.svg',
			dark: 'file:../../icons/captioning.dark.svg',
		},
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
					"The service calls this trigger when a job that was ordered with its URL completes or is cancelled. In Captioning → Job → Create, set Options → Webhook URL to this trigger's Production URL (Webhook URLs, above), and activate this workflow. With a Webhook Secret Token in the credentials (the same credentials in both workflows), Job → Create adds it to this URL and this trigger refuses deliveries without it. The service only calls https:// URLs, so n8n must be reachable over HTTPS; the Test URL only works while this trigger is listening for a test event. Each job starts the workflow once: with Verify Events on, an event for a job ordered with another URL (another workflow's, or the dashboard's) or for a job already reported is refused. For every job of the workspace, or an n8n without public HTTPS, use the Captioning Polling Trigger.",
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
				description:
					"Whether to read each event's job back with these credentials and start only if the job is in this workspace, its status matches the event, and it was ordered with this trigger's URL. The service does not sign events, so without this anyone who knows the URL could start the workflow with made-up data (marked verified: false). Attach Captions reads the job from the API either way and downloads only the links the service lists, never links from a posted body.",
			},
			...attachCaptionsFields,
		],
	};

	// The interface has no webhook registration endpoint: the URL travels with each order
	// (Job → Create's Webhook URL), so there is nothing to create or delete at the service. What this
	// process remembers of the handled events outlives a deactivation (n8n removes and adds the
	// trigger on every publish of an edit) and ends after the redelivery window without deliveries.
	webhookMethods = {
		default: {
			checkExists: async () => false,
			create: async () => true,
			delete: async () => true,
		},
	};

	/**
	 * A delivery: checked, and for a new event that backs up, handed to n8n to start the workflow.
	 * n8n answers it (2.x once the execution is stored): an answered event always has an execution.
	 */
	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const { webhookToken } = await serviceOf(this);
		if (webhookToken && !tokenMatches((this.getQueryData() as IDataObject).token, webhookToken)) {
			return respond(this, 401, { error: 'The token in the URL is missing or wrong.' });
		}
		const proven = webhookToken !== undefined;
		const body = this.getBodyData();
		const problem = eventProblem(body);
		if (problem) return refuse(this, proven, 400, `Not a captioning event: ${problem}.`);
		const event = body as unknown as CaptioningEvent;
		const events = this.getNodeParameter('events', []) as EventType[];
		if (!events.includes(event.type))
			return notStarted(proven ? `${event.type} is not selected in Events` : undefined);
		return await handleEvent(this, event, proven);
	}

	/**
	 * The execution of an accepted event (n8n runs a trigger's execute() with what webhook() emitted):
	 * the event counts as handled, and with Attach Captions the captions are downloaded here, where a
	 * failure is the execution's and its Retry downloads again.
	 */
	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const input = this.getInputData();
		const ranBefore = eventsStarted(
			this,
			input.map((item) => item.json),
		);
		// An event that an earlier execution in this process already ran (n8n started a stored
		// execution at its restart beside a redelivery) continues once.
		const items = input
			.map((item, i) => ({ ...item, pairedItem: { item: i } }))
			.filter((item) => !ranBefore.has(item.json.event_id as string));
		const attach = attachSettings(this);
		return [attach ? await withCaptions(this, items, attach) : items];
	}
}

/**
 * Every refusal of a delivery that did not prove itself with the Webhook Secret Token: one answer
 * (503, come back), so that a stranger learns nothing of the workspace's jobs (which exist, their
 * state, the URL they were ordered with). A 503 rather than a 403: an event of the service that
 * came before its job shows the status must not be refused for good.
 */
const NOT_NOW = 'Not accepted now; deliver the event again later.';

/** A refusal as a caller with the token hears it (a 503 asks to come back); a stranger hears NOT_NOW. */
const refuse = (ctx: IWebhookFunctions, proven: boolean, status: number, error: string) =>
	proven ? answerRefusal(ctx, { status, error }) : comeBack(ctx, NOT_NOW);

/** An event taken without starting the workflow; the reason only for a caller with the token. */
const notStarted = (reason?: string): IWebhookResponseData => ({
	webhookResponse: { received: true, started: false, ...(reason ? { reason } : {}) },
});

/** A new event is tried; a handled one is a duplicate; one whose try n8n has not answered comes back later. */
async function handleEvent(
	ctx: IWebhookFunctions,
	event: CaptioningEvent,
	proven: boolean,
): Promise<IWebhookResponseData> {
	const seen = claimEvent(ctx, event);
	if (seen.kind === 'handled') {
		// To a stranger, a new event id for a job already reported is refused like any other: the
		// answer must not tell which jobs exist.
		if (!proven) return seen.sameEvent ? notStarted() : comeBack(ctx, NOT_NOW);
		return notStarted(
			seen.sameEvent
				? `event ${event.id} was already received`
				: `job ${event.data.id} was already reported as ${event.type}${seen.earlier ? ` (event ${seen.earlier})` : ''}; each job starts this workflow once`,
		);
	}
	if (seen.kind === 'underWay')
		return refuse(
			ctx,
			proven,
			503,
			`Event ${event.id} is being handled (an earlier delivery of it is with n8n); deliver it again later.`,
		);
	// Should it throw, n8n answers 500, which ends the try: a redelivery is handled anew.
	return await startWith(ctx, event, proven);
}

const late = () => new Error("not in time: the API key's reads are busy");

/**
 * A new event, claimed: read back (with the events that arrive with it) and checked as Verify
 * Events says. Accepted, it goes to n8n to start the workflow (n8n answers, and its answer settles
 * the claim); refused, this answer ends the claim, so that a redelivery is handled anew.
 */
async function startWith(
	ctx: IWebhookFunctions,
	event: CaptioningEvent,
	proven: boolean,
): Promise<IWebhookResponseData> {
	const verify = ctx.getNodeParameter('verify', true) as boolean;
	const attach =
		event.type === 'job.completed' && (ctx.getNodeParameter('attachCaptions', false) as boolean);
	let job: Job = event.data;
	// With Verify off, Attach Captions still reads the job: caption links come from the service,
	// never from a posted body, so a forged event cannot make n8n fetch addresses of its choosing
	// (or send the key to them). Verify also checks the job was ordered with this trigger's URL.
	if (verify || attach) {
		// The deadline's timer ends with the delivery's answer, whichever comes first.
		const answered = new AbortController();
		const read = await Promise.race([
			readTogether(ctx, event, proven),
			sleep(readBackLimits.answerWithinMs, answered.signal).then(late, late),
		]).finally(() => answered.abort());
		// Verify off: the status must still match (links of a job not yet completed are no captions).
		const checked = backsUp(ctx, event, read, !verify);
		if ('error' in checked) return refuse(ctx, proven, checked.status, checked.error);
		job = checked.job;
	}
	const item = jobEventItem(job, {
		id: event.id,
		type: event.type,
		createdAt: event.created_at,
		verified: verify,
	});
	// No answer of ours: n8n answers once it has stored the execution (responseMode onReceived).
	return { workflowData: [[item]] };
}
