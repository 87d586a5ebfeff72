// Builds the CreateJob body (interface 2.1, 2.2) from the node's fields, refusing bad input with
// a NodeOperationError that names the field, the rule and the fix, before any request is sent.
// Bounds the interface makes configurable per workspace (title, glossary, metadata, media length)
// are left to the service, whose message reaches the user intact.
import type { IDataObject, IExecuteFunctions } from 'n8n-workflow';

import type { CreateJobBody, Redactions } from '../model/types';
import { UUID_PATTERN } from '../model/types';
import { refuse } from '../transport/errors';
import { withoutToken } from '../transport/secrets';

const MAX_JSON_BODY = 64 * 1024;
const UUID = new RegExp(UUID_PATTERN);
const MULTI_LINE = /[\r\n\u2028\u2029]/;

export type JobSource = 'binary' | 'url' | 'upload' | 's3';

function checkWebhookUrl(ctx: IExecuteFunctions, i: number, value: string): string {
	const url = value.trim();
	if (!/^https:\/\//.test(url))
		refuse(
			ctx,
			i,
			`Webhook URL "${withoutToken(url)}" does not start with https://`,
			'The service delivers events only to public HTTPS URLs. Use the Production URL of a Captioning Trigger on an n8n reachable over HTTPS, or leave Webhook URL empty.',
		);
	if (url.length > 2048)
		refuse(
			ctx,
			i,
			`Webhook URL is ${url.length} characters long`,
			'The service accepts webhook URLs of at most 2048 characters. Use a shorter URL.',
		);
	if (!URL.canParse(url))
		refuse(
			ctx,
			i,
			`Webhook URL "${withoutToken(url)}" is not a valid URL`,
			'Enter a full https:// URL, e.g. the Production URL of a Captioning Trigger.',
		);
	return url;
}

function stringList(value: unknown): string[] {
	if (Array.isArray(value)) return value.map((v) => String(v));
	if (typeof value === 'string' && value !== '') return [value];
	return [];
}

/** Redaction terms as the service takes them: each a nonblank single line, at most 200. */
function redactionTerms(ctx: IExecuteFunctions, i: number, value: unknown): string[] {
	const terms = stringList(value);
	terms.forEach((term, n) => {
		if (term.trim() === '')
			refuse(
				ctx,
				i,
				`Redaction term ${n + 1} is blank`,
				'Each redaction term must be a nonblank single line. Remove the empty term or fill it in.',
			);
		if (MULTI_LINE.test(term))
			refuse(
				ctx,
				i,
				`Redaction term ${n + 1} spans several lines`,
				'Each redaction term must be a single line: add one term per line break as separate terms.',
			);
	});
	if (terms.length > 200)
		refuse(
			ctx,
			i,
			`Redactions has ${terms.length} terms`,
			'The service accepts at most 200 redaction terms. Remove some, or redact by category (PII, Names, Organizations).',
		);
	return terms;
}

/** Custom Replacement: required with Replacement Custom String (one line, 1-120 characters), refused without it. */
function customReplacement(ctx: IExecuteFunctions, i: number, r: IDataObject): string | undefined {
	const custom = r.customReplacement as string | undefined;
	if (r.replacement !== 'custom_string') {
		if (custom !== undefined && custom !== '')
			refuse(
				ctx,
				i,
				'Custom Replacement is set but Replacement is not Custom String',
				'Set Replacement to Custom String to use it, or remove Custom Replacement.',
			);
		return undefined;
	}
	if (custom === undefined || custom.trim() === '')
		refuse(
			ctx,
			i,
			'Custom Replacement is missing',
			'With Replacement set to Custom String, add Custom Replacement: the text (1-120 characters, one line) that replaces each redaction.',
		);
	if (MULTI_LINE.test(custom))
		refuse(
			ctx,
			i,
			'Custom Replacement spans several lines',
			'Custom Replacement must be a single line of 1-120 characters.',
		);
	if (custom.length > 120)
		refuse(
			ctx,
			i,
			`Custom Replacement is ${custom.length} characters long`,
			'Custom Replacement must be 1-120 characters. Shorten it.',
		);
	return custom;
}

function buildRedactions(ctx: IExecuteFunctions, i: number): Redactions | undefined {
	const r = ctx.getNodeParameter('redactions', i, {}) as IDataObject;
	const out: Redactions = {};
	for (const key of ['pii', 'names', 'organizations'] as const)
		if (r[key] !== undefined) out[key] = Boolean(r[key]);
	if (r.terms !== undefined) out.terms = redactionTerms(ctx, i, r.terms);
	if (r.replacement !== undefined) out.replacement = r.replacement as Redactions['replacement'];
	const custom = customReplacement(ctx, i, r);
	if (custom !== undefined) out.custom_replacement = custom;
	return Object.keys(out).length ? out : undefined;
}

/** The CreateJob body without its source field: the caller adds media_url or upload_id. */
export function buildJobOptions(ctx: IExecuteFunctions, i: number): CreateJobBody {
	const body: CreateJobBody = {};
	const title = (ctx.getNodeParameter('title', i, '') as string).trim();
	if (title) body.title = title;
	const options = ctx.getNodeParameter('options', i, {}) as IDataObject;
	if (options.style !== undefined) body.style = options.style as CreateJobBody['style'];
	if (options.model !== undefined) body.model = options.model as CreateJobBody['model'];
	if (options.speakerLabels !== undefined) body.speaker_labels = Boolean(options.speakerLabels);
	if (options.speakerLabelStyle !== undefined)
		body.speaker_label_style = options.speakerLabelStyle as CreateJobBody['speaker_label_style'];
	if (options.atmospherics !== undefined) body.atmospherics = Boolean(options.atmospherics);
	if (options.profanity !== undefined)
		body.profanity = options.profanity as CreateJobBody['profanity'];
	if (options.glossary !== undefined)
		body.glossary = stringList(options.glossary).filter((t) => t.trim() !== '');
	if (typeof options.webhookUrl === 'string' && options.webhookUrl.trim() !== '')
		body.webhook_url = checkWebhookUrl(ctx, i, options.webhookUrl);
	const pairs =
		((options.metadata as IDataObject | undefined)?.pair as IDataObject[] | undefined) ?? [];
	if (pairs.length) {
		body.metadata = {};
		pairs.forEach((pair, n) => {
			const key = String(pair.key ?? '');
			if (key === '')
				refuse(
					ctx,
					i,
					`Metadata pair ${n + 1} has no key`,
					'Give each metadata pair a key (1-40 characters), or remove the pair.',
				);
			body.metadata![key] = String(pair.value ?? '');
		});
	}
	const redactions = buildRedactions(ctx, i);
	if (redactions) body.redactions = redactions;
	return body;
}

/** Adds the source from the node's fields (a URL or an upload id; a binary source is uploaded, an S3 Object signed, by the caller). */
export function sourceFields(ctx: IExecuteFunctions, i: number, source: JobSource): CreateJobBody {
	if (source === 'url') {
		const url = (ctx.getNodeParameter('mediaUrl', i, '') as string).trim();
		if (!url)
			refuse(
				ctx,
				i,
				'Media URL is empty',
				'Enter the public http(s) URL of a video or audio file (or a video-sharing link), or choose another Source.',
			);
		if (!URL.canParse(url) || !['http:', 'https:'].includes(new URL(url).protocol))
			refuse(
				ctx,
				i,
				`Media URL "${url}" is not an http(s) URL`,
				'The service downloads the media itself, so it needs a public http:// or https:// URL. For a file in n8n, set Source to Binary File.',
			);
		return { media_url: url };
	}
	if (source === 'upload') {
		const id = (ctx.getNodeParameter('uploadId', i, '') as string).trim();
		if (!UUID.test(id))
			refuse(
				ctx,
				i,
				id ? `Upload ID "${id}" is not an upload id` : 'Upload ID is empty',
				'Use the ID output by Upload → Create (a UUID), or choose another Source.',
			);
		return { upload_id: id };
	}
	return {};
}

/** Refuses a body the service would answer with 413, before it is sent. */
export function checkBodySize(ctx: IExecuteFunctions, i: number, body: CreateJobBody): void {
	const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');
	const size = bytes(body);
	if (size <= MAX_JSON_BODY) return;
	const parts = (['glossary', 'metadata', 'redactions'] as const)
		.filter((part) => body[part] !== undefined)
		.map((part) => `${part} ${bytes(body[part])} bytes`)
		.join(', ');
	refuse(
		ctx,
		i,
		`The order is ${size} bytes of JSON, over the service's 64 KiB limit`,
		`Shorten the largest parts (${parts}) so the whole order stays under 65536 bytes.`,
	);
}
