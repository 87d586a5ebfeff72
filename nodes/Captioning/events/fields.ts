// The fields both triggers show: the events that start the workflow, and Attach Captions.
import type { INodeProperties } from 'n8n-workflow';

import { binaryPropertyNameField, captionsAsField, formatsField } from '../captions';

export const eventsField: INodeProperties = {
	displayName: 'Events',
	name: 'events',
	type: 'multiOptions',
	required: true,
	options: [
		{
			name: 'Job Cancelled',
			value: 'job.cancelled',
			description: 'The job was cancelled (unsupported language or media, deleted…) and refunded',
		},
		{ name: 'Job Completed', value: 'job.completed', description: 'The captions are ready' },
	],
	default: ['job.completed', 'job.cancelled'],
	description: 'The events that start the workflow; others are acknowledged and ignored',
};

export const attachCaptionsFields: INodeProperties[] = [
	{
		displayName: 'Attach Captions',
		name: 'attachCaptions',
		type: 'boolean',
		default: false,
		description: "Whether to download a completed job's captions, e.g. for a storage node",
	},
	...[formatsField, captionsAsField, binaryPropertyNameField].map((field) => ({
		...field,
		displayOptions: { show: { ...field.displayOptions?.show, attachCaptions: [true] } },
	})),
];
