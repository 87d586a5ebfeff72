// Filters the interface's job list cannot apply (it filters by status alone): by the caller's own
// metadata (e.g. drive_file_id, as Job → Create → Options → Metadata set it) and by title. n8n
// applies them to each page as it reads (Job → Get Many, the polling trigger).
import type { IDataObject, INodeProperties } from 'n8n-workflow';

import type { Job } from '../model/types';

export const metadataKeyField: INodeProperties = {
	displayName: 'Metadata Key',
	name: 'metadataKey',
	type: 'string',
	default: '',
	placeholder: 'e.g. drive_file_id',
	description: 'Only jobs whose metadata has this key, e.g. drive_file_id',
};

export const metadataValueField: INodeProperties = {
	displayName: 'Metadata Value',
	name: 'metadataValue',
	type: 'string',
	default: '',
	placeholder: 'e.g. n8n',
	description: 'Only jobs whose Metadata Key has this value; empty: any value',
};

export const metadataFilterFields: INodeProperties[] = [metadataKeyField, metadataValueField];

/** Whether the job's metadata holds the key (and, when one is given, the value). */
export function metadataMatches(job: Job, filters: IDataObject): boolean {
	const key = String(filters.metadataKey ?? '').trim();
	if (!key) return true;
	const value = job.metadata?.[key];
	const wanted = filters.metadataValue;
	return value !== undefined && (wanted === undefined || wanted === '' || value === String(wanted));
}

/** Whether the job's title contains the text (case-insensitive; empty: any job). */
export function titleMatches(job: Job, filters: IDataObject): boolean {
	const wanted = String(filters.titleContains ?? '')
		.trim()
		.toLowerCase();
	return !wanted || (job.title ?? '').toLowerCase().includes(wanted);
}

/** Whether a filter is set that n8n applies while reading (the service does not). */
export const filtersWhileReading = (filters: IDataObject) =>
	Boolean(String(filters.metadataKey ?? '').trim() || String(filters.titleContains ?? '').trim());
