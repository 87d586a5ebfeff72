// The service's objects (interface part 2) as the nodes read them.

import type { IExecuteFunctions } from 'n8n-workflow';

/** A file's bytes as n8n hands them out: a stream from the binary store, or a buffer. */
export type FileBody =
	| Buffer
	| Awaited<ReturnType<IExecuteFunctions['helpers']['getBinaryStream']>>;

/**
 * The caption formats (interface part 1), the one list of them: the panel's options, the files'
 * types and what each gives the item's JSON come from here (test/package/formats.test.ts holds the
 * sandbox's renderers and the docs to it). `text`: its text goes into caption_text; `segments`:
 * its segments into caption_segments; `file`: a file only (no text for the JSON).
 */
export const CAPTION_FORMATS = {
	srt: { label: 'SRT (Subtitles)', mimeType: 'application/x-subrip', json: 'text' },
	vtt: { label: 'VTT (Web Subtitles)', mimeType: 'text/vtt', json: 'text' },
	txt: { label: 'TXT (Plain Transcript)', mimeType: 'text/plain', json: 'text' },
	docx: {
		label: 'DOCX (Word Transcript)',
		mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
		json: 'file',
	},
	json: { label: 'JSON (Segments With Speakers)', mimeType: 'application/json', json: 'segments' },
} as const;
export type CaptionFormat = keyof typeof CAPTION_FORMATS;

/** The formats by their short names, as a sentence lists them: `SRT, VTT, TXT, DOCX or JSON`. */
export function formatNames(last: ', ' | ' or ' = ', '): string {
	const names = Object.values(CAPTION_FORMATS).map((f) => f.label.split(' ')[0]);
	return `${names.slice(0, -1).join(', ')}${last}${names[names.length - 1]}`;
}

/** An id as the service writes it (a job's, an upload's): a UUID. */
export const UUID_PATTERN =
	'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

export const MAX_UPLOAD_BYTES = 5242880000;

export interface Redactions {
	pii?: boolean;
	names?: boolean;
	organizations?: boolean;
	terms?: string[];
	replacement?: 'redacted' | 'category_label' | 'silent' | 'custom_string';
	custom_replacement?: string;
}

export interface CreateJobBody {
	media_url?: string;
	upload_id?: string;
	title?: string;
	style?: 'clean' | 'verbatim';
	model?: 'captioner-base';
	speaker_labels?: boolean;
	speaker_label_style?: 'gt_name' | 'brackets' | 'colon' | 'dashes';
	atmospherics?: boolean;
	profanity?: 'as_spoken' | 'mask' | 'label' | 'omit';
	redactions?: Redactions;
	glossary?: string[];
	webhook_url?: string;
	metadata?: Record<string, string>;
}

export interface Job {
	id: string;
	object: 'job';
	status: 'queued' | 'processing' | 'completed' | 'cancelled';
	progress: number | null;
	title: string;
	options: Record<string, unknown>;
	cancellation: { reason: string; message: string } | null;
	captions: Record<CaptionFormat, string> | null;
	metadata: Record<string, string>;
	created_at: string;
	completed_at: string | null;
}

export type Upload = { id: string; object: 'upload'; upload_url: string };

export type JobList = { object: 'list'; data: Job[]; has_more: boolean };

/** The service's error body (part 2.6), plus what the transport knows about the response. */
export interface ServiceError {
	httpCode: string;
	code: string;
	message: string;
	param: string;
	requestId: string;
}
