import type { IDataObject, INodeExecutionData, INodeType, INodeTypeDescription, IPollFunctions } from 'n8n-workflow';
import { NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';

import { attachCaptionsFields, eventsField } from '../Captioning/events/fields';
import { attachSettings, jobEventItem } from '../Captioning/events/item';
import { metadataFilterFields, metadataMatches } from '../Captioning/listing/filters';
import type { EventType } from '../Captioning/model/events';
import { EVENT_OF_STATUS } from '../Captioning/model/events';
import type { Job } from '../Captioning/model/types';
import { jobPages } from '../Captioning/transport/jobs';
import { DEFAULT_CONCURRENCY, RunSlots, useRunSlots } from '../Captioning/transport/runSlots';
import type { PollState } from './cursor';
import { finishedSince, firstState, leaveForNext, REMEMBERED_REPORTS } from './cursor';
import { reportBudgetMs, takeTurn } from './schedule';

export class CaptioningPollingTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Captioning Polling Trigger',
		name: 'captioningPollingTrigger',
		icon: { light: 'file:../../icons/captioning.svg', dark: 'file:../../icons/captioning.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{$parameter["events"].join(", ")}}',
		description: 'Starts the workflow when any caption job of the workspace completes or is cancelled, checking the service on a schedule',
		defaults: { name: 'Captioning Polling Trigger' },
		polling: true,
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'captioningApi', required: true }],
		properties: [
			{
				displayName:
					'Checks the service on the schedule below and starts the workflow for every job of the workspace that completed or was cancelled since the last check, whoever ordered it (the dashboard, another tool, another workflow): each job once, from the moment this workflow is activated. It works anywhere, also where n8n is not reachable from the internet; events arrive up to one interval late. For instant events on jobs ordered with its URL, and an n8n reachable over HTTPS, use the Captioning Trigger instead.',
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

	async poll(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
		// Every parameter is read before the first request: in n8n 2.41.1 an overlapping poll may free
		// the expression isolate while this one runs (see schedule.ts), and a parameter set by an
		// expression needs it. (The credentials authenticate without one.)
		const events = this.getNodeParameter('events', []) as EventType[];
		const filters = this.getNodeParameter('filters', {}) as IDataObject;
		const attach = attachSettings(this);
		const pollTimes = this.getNodeParameter('pollTimes', {}) as IDataObject;
		const wanted = (job: Job) => {
			const type = EVENT_OF_STATUS[job.status];
			return type !== undefined && events.includes(type) && metadataMatches(job, filters);
		};
		const item = async (job: Job) => await jobEventItem(this, job, { id: null, type: EVENT_OF_STATUS[job.status]!, createdAt: job.completed_at, verified: true }, { attach });

		if (this.getMode() === 'manual') {
			// Fetch Test Event: the latest finished job that fits, so the workflow can be built now.
			const latest: Job[] = [];
			for (const type of events) {
				for await (const page of jobPages(this, { status: type === 'job.completed' ? 'completed' : 'cancelled' })) {
					const found = page.find(wanted);
					if (found) latest.push(found);
					break;
				}
			}
			latest.sort((a, b) => Date.parse(b.completed_at ?? b.created_at) - Date.parse(a.completed_at ?? a.created_at));
			if (!latest.length) {
				throw new NodeOperationError(this.getNode(), 'No finished job of this workspace fits Events and Filters yet', {
					description: 'Order captions (or wait for a job to finish), or widen Events and Filters, then fetch a test event again.',
				});
			}
			return [[await item(latest[0])]];
		}

		const staticData = this.getWorkflowStaticData('node') as PollState;
		if (!staticData.started) {
			// Activation: start from now (no flood of history), remembering the jobs still open.
			Object.assign(staticData, await firstState(this));
			return null;
		}
		// One poll at a time: one still under way wraps up and this one goes on from there.
		const turn = await takeTurn(staticData);
		if (!turn) return null;
		try {
			const started = Date.now();
			const until = started + reportBudgetMs(staticData, pollTimes);
			// Caption downloads: a few at a time, in the key's pace with every other run's requests.
			useRunSlots(this, new RunSlots(DEFAULT_CONCURRENCY));
			const { finished, next } = await finishedSince(this, staticData);
			const reported = [...(next.reported ?? [])];
			const due = finished.filter((job) => wanted(job) && !reported.includes(`${job.id} ${job.status}`));
			const items: Array<INodeExecutionData | undefined> = [];
			let failure: Error | undefined;
			let cursor = 0;
			const report = async () => {
				// Until shortly before the next poll is due (or a newer poll waits): what is left then
				// goes to the next poll. Each poll reports one job per place at least, so every poll gets on.
				while (cursor < due.length && (cursor < DEFAULT_CONCURRENCY || (Date.now() < until && !turn.wrappingUp))) {
					const n = cursor++;
					const job = due[n];
					try {
						items[n] = await item(job);
						reported.push(`${job.id} ${job.status}`);
					} catch (error) {
						// Its captions could not be downloaded: the job stays open, so the next poll tries again.
						failure ??= error as Error;
						next.open = { ...next.open, [job.id]: job.created_at };
					}
				}
			};
			await Promise.all(Array.from({ length: DEFAULT_CONCURRENCY }, report));
			// What is left goes to the next poll as read (it is final), and stays open should n8n restart.
			const left = due.slice(cursor);
			for (const job of left) next.open = { ...next.open, [job.id]: job.created_at };
			leaveForNext(staticData, left);
			Object.assign(staticData, next, { reported: reported.slice(-REMEMBERED_REPORTS) });
			const emitted = items.filter((i): i is INodeExecutionData => i !== undefined);
			if (!emitted.length && failure) {
				throw new NodeOperationError(this.getNode(), failure, { description: 'The job will be reported at the next poll that can download its captions.' });
			}
			return emitted.length ? [emitted] : null;
		} finally {
			turn.end();
		}
	}
}
