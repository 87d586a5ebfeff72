// Fields and output shapes shared by the Job operations.
import type { INodeProperties } from 'n8n-workflow';

import { UUID_PATTERN } from '../../model/types';

export const jobIdField: INodeProperties = {
	displayName: 'Job',
	name: 'jobId',
	type: 'resourceLocator',
	default: { mode: 'list', value: '' },
	required: true,
	description: 'A job from the list of the newest, or its ID, e.g. the ID output by Job → Create',
	modes: [
		{
			displayName: 'From List',
			name: 'list',
			type: 'list',
			placeholder: 'Select a job...',
			typeOptions: { searchListMethod: 'searchJobs', searchable: true },
		},
		{
			displayName: 'By ID',
			name: 'id',
			type: 'string',
			placeholder: 'e.g. 4f6c1e2a-9b7d-4c3e-8a1f-2d5e6b7c8a90',
			validation: [
				{
					type: 'regex',
					properties: {
						regex: UUID_PATTERN,
						errorMessage: 'A job ID is a UUID, e.g. 4f6c1e2a-9b7d-4c3e-8a1f-2d5e6b7c8a90',
					},
				},
			],
		},
	],
};
