import type {
	IExecuteFunctions,
	IHookFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { attachCaptionsFields, eventsField } from '../Captioning/events/fields';
import { attachSettings, jobEventItem, withCaptions } from '../Captioning/events/item';
import type { CaptioningEvent, EventType } from '../Captioning/model/events';
import { eventProblem } from '../Captioning/model/events';
import { ProcessedStore } from '../Captioning/transport/processedStore';
import { answersOf, deliveriesPause, readBackItem } from './readBack';
import { learnTokens, takesToken } from './tokens';

/** What the deduplication store records of a reported item: its job's final status. */
const newsOf = (item: INodeExecutionData) =>
	`${String(item.json.id)} ${String(item.json.event_type)}`;

export class CaptioningTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Captioning Trigger',
		name: 'captioningTrigger',
		icon: {
			light: 'file:../../icons/captioning.svg',
			dark: 'file:../../icons/captioning.dark.svg',
		},
		group: ['trigger'],
		// n8n 2.41.1 evaluates `$parameter["options"]["binaryData"]` for every delivery to a webhook
		// node of version 1, which costs an expression isolate per delivery (CONTRIBUTING, "n8n's faults").
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
					"Put this trigger's Production URL in Job → Create's Options → Webhook URL and activate this workflow (n8n must be reachable over HTTPS); for every job of the workspace, use the Captioning Polling Trigger",
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
					"Whether each run reads the event's job back and goes on only if the job backs the event up",
			},
			...attachCaptionsFields,
		],
	};

	// The interface has no webhook registration endpoint: the URL travels with each order (Job →
	// Create's Webhook URL). Activation learns the token that URL carries (tokens.ts).
	webhookMethods = {
		default: {
			checkExists: async () => false,
			async create(this: IHookFunctions) {
				await learnTokens(this);
				return true;
			},
			delete: async () => true,
		},
	};

	/**
	 * A delivery: with the token and an event of a selected type, it is taken (n8n answers once it
	 * has stored the execution), and its time noted for the runs that wait (readBack.ts); nothing
	 * else is read here. The service may deliver an event once only, so every check that needs the
	 * API is the execution's (execute()).
	 */
	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const body = this.getBodyData();
		const problem = eventProblem(body);
		const refusal = !(await takesToken(this))
			? { status: 401, error: 'The token in the URL is missing or wrong.' }
			: problem && { status: 400, error: `Not a captioning event: ${problem}.` };
		// A delivery that starts nothing is answered its status and why; n8n answers nothing more.
		if (refusal) {
			this.getResponseObject().status(refusal.status).json({ error: refusal.error });
			return { noWebhookResponse: true };
		}
		const event = body as unknown as CaptioningEvent;
		const selected = this.getNodeParameter('events', []) as EventType[];
		const reason = `${event.type} is not selected in Events`;
		if (!selected.includes(event.type))
			return { webhookResponse: { received: true, started: false, reason } };
		const said = { id: event.id, type: event.type, createdAt: event.created_at, verified: false };
		answersOf(this).deliveredAt = Date.now();
		return { workflowData: [[jobEventItem(event.data, said)]] };
	}

	/**
	 * The execution of a taken event: with Verify Events (or Attach Captions) its job is read back
	 * until it shows the event's status; an event the job does not back up goes no further. A job's
	 * news that an earlier production execution reported goes no further either (n8n's deduplication
	 * store); a Retry or a test run is the user's own and always goes on. With Attach Captions the
	 * captions are downloaded here, where a failure is the execution's and its Retry downloads again.
	 * The execution ends once the trigger's deliveries pause; with Verify Events alone it reads only
	 * then (one read answers the burst), with Attach Captions it reads and downloads meanwhile.
	 */
	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const verify = this.getNodeParameter('verify', 0, true) as boolean;
		const attach = attachSettings(this);
		const reported = this.getMode() === 'webhook' ? ProcessedStore.of(this) : undefined;
		// No read while deliveries come, unless captions download meanwhile: the run ends at the pause.
		if (!attach) await deliveriesPause(this);
		const read: INodeExecutionData[] = [];
		for (const [i, input] of this.getInputData().entries()) {
			const item = await readBackItem(this, input, verify, attach !== undefined);
			if (item) read.push({ ...item, pairedItem: { item: i } });
		}
		const download = async (items: INodeExecutionData[]) =>
			attach ? await withCaptions(this, items, attach) : items;
		// A copy of news another run took (an event delivered twice, a minute at most since the last
		// copy) asks the store after that run, and downloads its captions only if the store has the
		// news as new.
		const { taken } = answersOf(this);
		const before = read.map((item) => {
			const other = reported && taken.get(newsOf(item));
			if (other) other.at = Date.now();
			return other?.recorded;
		});
		const early = read.filter((_, k) => !before[k]);
		let recorded = () => {};
		const recording = new Promise<void>((resolve) => (recorded = resolve));
		for (const item of early) taken.set(newsOf(item), { at: Date.now(), recorded: recording });
		const downloads = download(early);
		const kept: INodeExecutionData[] = [];
		try {
			await deliveriesPause(this);
			await Promise.all(before);
			for (const item of read) if (!(await reported?.record(newsOf(item)))) kept.push(item);
		} finally {
			recorded();
		}
		const ready = new Map((await downloads).map((item, k) => [early[k], item]));
		const late = kept.filter((item) => !ready.has(item));
		(await download(late)).forEach((item, k) => ready.set(late[k], item));
		return [kept.map((item) => ready.get(item)!)];
	}
}
