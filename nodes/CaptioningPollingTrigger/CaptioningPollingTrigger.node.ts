import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IPollFunctions,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { attachCaptionsFields, eventsField } from '../Captioning/events/fields';
import { attachSettings, jobEventItem, withCaptions } from '../Captioning/events/item';
import { metadataFilterFields, metadataMatches } from '../Captioning/listing/filters';
import type { EventType } from '../Captioning/model/events';
import { EVENT_OF_STATUS, STATUS_OF } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import { refuse } from '../Captioning/transport/errors';
import { jobPages } from '../Captioning/transport/jobs';
import type { PollState } from './cursor';
import { filtersKey, finishedAt, finishedSince, firstState } from './cursor';

export class CaptioningPollingTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Captioning Polling Trigger',
		name: 'captioningPollingTrigger',
		icon: {
			light: 'file:../../icons/captioning.svg',
			dark: 'file:../../icons/captioning.dark.svg',
		},
		group: ['trigger'],
		version: 1,
		subtitle: '={{$parameter["events"].join(", ")}}',
		description: 'Polls the job list and starts the workflow when a job completes or is cancelled',
		defaults: { name: 'Captioning Polling Trigger' },
		polling: true,
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'captioningApi', required: true }],
		properties: [
			{
				displayName: 'Reports every job of the workspace, whoever ordered it; needs no public URL',
				name: 'notice',
				type: 'notice',
				default: '',
			},
			eventsField,
			{
				displayName: 'Filters',
				name: 'filters',
				type: 'collection',
				placeholder: 'Add Filter',
				default: {},
				options: metadataFilterFields,
			},
			...attachCaptionsFields,
		],
	};

	/**
	 * One poll: the jobs that finished since the last one, as read (no download: a poll only reads the
	 * job list, so it ends quickly). n8n stores an execution with them and runs execute() in it. n8n
	 * starts a poll at every Poll Time without waiting for the last one, and a poll held up (under
	 * load, by an expression isolate's start or the key's rate limit) runs beside the next: both
	 * would start from the same static data and report the same jobs. So a poll that finds one of
	 * its node under way in this process reads nothing; the one under way or the next reports them.
	 */
	async poll(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
		const key = `${this.getWorkflow().id ?? ''}:${this.getNode().id ?? this.getNode().name}`;
		if (pollsUnderWay.has(key)) return null;
		pollsUnderWay.add(key);
		try {
			const state = this.getWorkflowStaticData('node') as PollState;
			const filters = this.getNodeParameter('filters', {}) as IDataObject;
			if (state.filters !== filtersKey(filters) || state.horizon === undefined) {
				// Activation (or new Filters): from now on (no flood of history), following the open jobs that fit.
				Object.assign(state, await firstState(this, filters));
				return null;
			}
			const wanted = wantedJobs(this.getNodeParameter('events', []) as EventType[], filters);
			const { due, next } = await finishedSince(this, state, filters, wanted);
			for (const notice of next.notices ?? [])
				if (!state.notices?.includes(notice))
					this.logger.warn(`Captioning Polling Trigger: ${notice}`);
			// The state moves on only with the execution: n8n saves static data when a poll returns items.
			Object.assign(state, next);
			if (!due.length) return null;
			// The bounds polls reached go with the execution, in an item of their own, shown as hints.
			const items = due.map(eventItem);
			if (state.notices?.length) items.push({ json: { [NOTICES]: state.notices } });
			state.notices = [];
			return [items];
		} finally {
			pollsUnderWay.delete(key);
		}
	}

	/**
	 * The execution of a poll's jobs (n8n runs a trigger's execute() with what poll() returned): with
	 * Attach Captions, the captions are downloaded here, where a failure is the execution's own and
	 * its Retry downloads again. In the editor (Fetch Test Event, where n8n runs this instead of
	 * poll()), the latest finished job that fits.
	 */
	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const input = this.getInputData();
		const notices = input.flatMap((item) => (item.json[NOTICES] as string[] | undefined) ?? []);
		// n8n 1.x and 2.x show hints above the output (nothing where n8n has none).
		this.addExecutionHints?.(...notices.map(hintOf));
		let items = input.filter((item) => item.json.object === 'job');
		if (items.length === 0 && this.getMode() === 'manual')
			items = [eventItem(await latestFinished(this))];
		items = items.map((item, i) => ({ ...item, pairedItem: { item: i } }));
		const attach = attachSettings(this);
		return [attach ? await withCaptions(this, items, attach) : items];
	}
}

/** Polls under way in this process, by workflow and node (see poll()). */
const pollsUnderWay = new Set<string>();

/** The field of the item that carries the bounds polls reached to the execution (shown there as hints). */
const NOTICES = 'poll_notices';
const hintOf = (message: string) => ({ message, type: 'warning', location: 'outputPane' }) as const;

/** Whether a finished job starts the workflow: its event is selected, its metadata fits the filters. */
function wantedJobs(events: EventType[], filters: IDataObject): (job: Job) => boolean {
	return (job) =>
		events.some((type) => STATUS_OF[type] === job.status) && metadataMatches(job, filters);
}

const eventItem = (job: Job) =>
	jobEventItem(job, {
		id: null,
		type: EVENT_OF_STATUS[job.status]!,
		createdAt: job.completed_at,
		verified: true,
	});

/** Fetch Test Event: the latest finished job that fits, so the workflow can be built now. */
async function latestFinished(ctx: IExecuteFunctions): Promise<Job> {
	const events = ctx.getNodeParameter('events', 0, []) as EventType[];
	const wanted = wantedJobs(events, ctx.getNodeParameter('filters', 0, {}) as IDataObject);
	const latest: Job[] = [];
	for (const type of events) {
		const page = await jobPages(ctx, { status: STATUS_OF[type] }).next();
		const found = ((page.value || []) as Job[]).find(wanted);
		if (found) latest.push(found);
	}
	latest.sort((a, b) => finishedAt(b) - finishedAt(a));
	if (!latest.length)
		refuse(
			ctx,
			undefined,
			'No finished job of this workspace fits Events and Filters yet',
			'Order captions (or wait for a job to finish), or widen Events and Filters, then fetch a test event again.',
		);
	return latest[0];
}
