import type {
	IDataObject,
	IHookFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { attachCaptionsFields, eventsField, jobEventItem } from '../Captioning/helpers/triggers';
import type { Job } from '../Captioning/helpers/types';
import type { CaptioningEvent, EventType } from '../Captioning/helpers/events';
import { eventProblem, readBackEvent, readEventJob, respond, verificationProblem } from '../Captioning/helpers/events';
import { claimEvent, forgottenJob, releaseEvent, REMEMBERED_EVENTS, settleEvent, tokenMatches } from './events';

export class CaptioningTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Captioning Trigger',
		name: 'captioningTrigger',
		icon: { light: 'file:../../icons/captioning.svg', dark: 'file:../../icons/captioning.dark.svg' },
		group: ['trigger'],
		version: 1,
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
		const claim = claimEvent(this, event);
		if (claim === 'redelivery') {
			return { webhookResponse: { received: true, started: false, reason: `event ${event.id} was already received` } };
		}
		if (claim === 'replay') {
			return respond(this, 409, { error: `Event refused: job ${event.data.id} was already reported as ${event.type} (under another event id); each job starts this workflow once.` });
		}

		let job: Job = event.data;
		const verify = this.getNodeParameter('verify', true) as boolean;
		const attach = event.type === 'job.completed' && (this.getNodeParameter('attachCaptions', false) as boolean);
		if (!verify && attach) {
			// Caption links come from the service, never from a posted body: a forged event must not
			// make n8n fetch addresses of the forger's choosing (or send the key to them).
			const read = await readEventJob(this, event);
			const mismatch = 'job' in read ? verificationProblem(event, read.job) : undefined;
			if ('error' in read || mismatch) {
				releaseEvent(this, event);
				return 'error' in read ? respond(this, read.status, { error: read.error }) : respond(this, 409, { error: `Event refused: ${mismatch}.` });
			}
			job = read.job;
		}
		if (verify) {
			const read = await readBackEvent(this, event);
			if ('error' in read) {
				// Forgotten again, so that a genuine redelivery is not taken for a duplicate.
				releaseEvent(this, event);
				return respond(this, read.status, { error: read.error });
			}
			job = read.job;
			if (forgottenJob(this, job.completed_at)) {
				releaseEvent(this, event);
				return respond(this, 409, {
					error: `Event refused: job ${job.id} finished before the ${REMEMBERED_EVENTS} latest events this trigger remembers, so it may have started this workflow already.`,
				});
			}
		}
		settleEvent(this, event, verify ? job.completed_at : null);
		let item: INodeExecutionData;
		try {
			item = await jobEventItem(this, job, { id: event.id, type: event.type, createdAt: event.created_at, verified: verify });
		} catch (error) {
			releaseEvent(this, event);
			return respond(this, 500, { error: `The captions could not be downloaded: ${(error as Error).message}` });
		}
		return { webhookResponse: { received: true, started: true }, workflowData: [[item]] };
	}
}
