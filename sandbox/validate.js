'use strict';
// CreateJob validation (interface parts 2.1, 2.2, 4.1, 8): returns null or {status, code, message, param}.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const IDEMPOTENCY_KEY = /^[!-~]{1,255}$/;

const CREATE_JOB_FIELDS = new Set([
	'media_url',
	'upload_id',
	'title',
	'style',
	'model',
	'speaker_labels',
	'speaker_label_style',
	'atmospherics',
	'profanity',
	'redactions',
	'glossary',
	'webhook_url',
	'metadata',
]);
const REDACTION_FIELDS = new Set([
	'pii',
	'names',
	'organizations',
	'terms',
	'replacement',
	'custom_replacement',
]);
const ENUMS = {
	style: ['clean', 'verbatim'],
	model: ['captioner-base'],
	speaker_label_style: ['gt_name', 'brackets', 'colon', 'dashes'],
	profanity: ['as_spoken', 'mask', 'label', 'omit'],
	'redactions.replacement': ['redacted', 'category_label', 'silent', 'custom_string'],
};

const isSingleLine = (s) => !/[\r\n\u2028\u2029]/.test(s);
const isBlank = (s) => s.trim().length === 0;

function invalid(param, message, code = 'invalid_parameter') {
	return { status: 400, code, message, param };
}

function checkEnum(param, value) {
	if (typeof value !== 'string' || !ENUMS[param].includes(value)) {
		return invalid(param, `${param} must be one of: ${ENUMS[param].join(', ')}.`);
	}
	return null;
}

function checkBoolean(param, value) {
	return typeof value === 'boolean' ? null : invalid(param, `${param} must be a boolean.`);
}

function checkHttpUrl(param, value, protocols) {
	let url;
	try {
		url = new URL(value);
	} catch {
		return invalid(param, `${param} must be an absolute URL.`);
	}
	if (!protocols.includes(url.protocol)) {
		return invalid(
			param,
			`${param} must use ${protocols.map((p) => p.replace(':', '')).join(' or ')}.`,
		);
	}
	return null;
}

function validateRedactions(r) {
	if (typeof r !== 'object' || r === null || Array.isArray(r)) {
		return invalid('redactions', 'redactions must be an object.');
	}
	for (const key of Object.keys(r)) {
		if (!REDACTION_FIELDS.has(key))
			return invalid(`redactions.${key}`, `Unknown field redactions.${key}.`, 'unknown_parameter');
	}
	for (const key of ['pii', 'names', 'organizations']) {
		if (key in r) {
			const e = checkBoolean(`redactions.${key}`, r[key]);
			if (e) return e;
		}
	}
	if ('terms' in r) {
		if (!Array.isArray(r.terms))
			return invalid('redactions.terms', 'redactions.terms must be an array of strings.');
		if (r.terms.length > 200)
			return invalid('redactions.terms', 'redactions.terms may hold at most 200 items.');
		for (let i = 0; i < r.terms.length; i++) {
			const t = r.terms[i];
			if (typeof t !== 'string' || isBlank(t) || !isSingleLine(t)) {
				return invalid(
					`redactions.terms[${i}]`,
					'Each redaction term must be a nonblank single line.',
				);
			}
		}
	}
	if ('replacement' in r) {
		const e = checkEnum('redactions.replacement', r.replacement);
		if (e) return e;
	}
	if (r.replacement === 'custom_string') {
		const c = r.custom_replacement;
		if (c === undefined) {
			return invalid(
				'redactions.custom_replacement',
				'redactions.custom_replacement is required when replacement is custom_string.',
			);
		}
		if (typeof c !== 'string' || isBlank(c) || !isSingleLine(c) || c.length > 120) {
			return invalid(
				'redactions.custom_replacement',
				'redactions.custom_replacement must be nonblank single-line text of 1-120 characters.',
			);
		}
	} else if ('custom_replacement' in r) {
		return invalid(
			'redactions.custom_replacement',
			'redactions.custom_replacement is only allowed when replacement is custom_string.',
		);
	}
	return null;
}

/** @param limits workspace limits: titleMax, glossaryMax, glossaryTermMax, metadataKeysMax, metadataKeyMax, metadataValueMax */
function validateCreateJob(body, limits) {
	if (typeof body !== 'object' || body === null || Array.isArray(body)) {
		return invalid('', 'The request body must be a JSON object (CreateJob).', 'invalid_request');
	}
	for (const key of Object.keys(body)) {
		if (!CREATE_JOB_FIELDS.has(key))
			return invalid(key, `Unknown field ${key}.`, 'unknown_parameter');
	}
	const hasUrl = body.media_url !== undefined;
	const hasUpload = body.upload_id !== undefined;
	if (hasUrl === hasUpload) {
		return invalid(
			hasUrl ? 'upload_id' : 'media_url',
			'Provide exactly one source: media_url or upload_id.',
			'invalid_request',
		);
	}
	if (hasUrl) {
		if (typeof body.media_url !== 'string' || body.media_url.length < 1) {
			return invalid('media_url', 'media_url must be a non-empty string.');
		}
		const e = checkHttpUrl('media_url', body.media_url, ['http:', 'https:']);
		if (e) return e;
	}
	if (hasUpload && (typeof body.upload_id !== 'string' || !UUID.test(body.upload_id))) {
		return invalid('upload_id', 'upload_id must be the uuid of an upload.');
	}
	if ('title' in body) {
		const t = body.title;
		if (typeof t !== 'string' || t.length < 1 || t.length > limits.titleMax) {
			return invalid('title', `title must be 1-${limits.titleMax} characters.`);
		}
	}
	for (const key of ['style', 'model', 'speaker_label_style', 'profanity']) {
		if (key in body) {
			const e = checkEnum(key, body[key]);
			if (e) return e;
		}
	}
	for (const key of ['speaker_labels', 'atmospherics']) {
		if (key in body) {
			const e = checkBoolean(key, body[key]);
			if (e) return e;
		}
	}
	if ('redactions' in body) {
		const e = validateRedactions(body.redactions);
		if (e) return e;
	}
	if ('glossary' in body) {
		const g = body.glossary;
		if (!Array.isArray(g)) return invalid('glossary', 'glossary must be an array of strings.');
		if (g.length > limits.glossaryMax)
			return invalid('glossary', `glossary may hold at most ${limits.glossaryMax} terms.`);
		for (let i = 0; i < g.length; i++) {
			if (typeof g[i] !== 'string' || g[i].length < 1 || g[i].length > limits.glossaryTermMax) {
				return invalid(
					`glossary[${i}]`,
					`Each glossary term must be 1-${limits.glossaryTermMax} characters.`,
				);
			}
		}
	}
	if ('webhook_url' in body) {
		const w = body.webhook_url;
		if (typeof w !== 'string' || !/^https:\/\//.test(w)) {
			return invalid(
				'webhook_url',
				'webhook_url must be a public HTTPS URL (start with https://).',
			);
		}
		if (w.length > 2048)
			return invalid('webhook_url', 'webhook_url must be at most 2048 characters.');
		const e = checkHttpUrl('webhook_url', w, ['https:']);
		if (e) return e;
	}
	if ('metadata' in body) {
		const m = body.metadata;
		if (typeof m !== 'object' || m === null || Array.isArray(m)) {
			return invalid('metadata', 'metadata must be an object of string values.');
		}
		const keys = Object.keys(m);
		if (keys.length > limits.metadataKeysMax) {
			return invalid('metadata', `metadata may hold at most ${limits.metadataKeysMax} keys.`);
		}
		for (const k of keys) {
			if (k.length < 1 || k.length > limits.metadataKeyMax) {
				return invalid(
					`metadata.${k}`,
					`metadata keys must be 1-${limits.metadataKeyMax} characters.`,
				);
			}
			if (typeof m[k] !== 'string' || m[k].length > limits.metadataValueMax) {
				return invalid(
					`metadata.${k}`,
					`metadata values must be strings of at most ${limits.metadataValueMax} characters.`,
				);
			}
		}
	}
	return null;
}

function validateIdempotencyKey(key) {
	if (key === undefined) return null;
	if (!IDEMPOTENCY_KEY.test(key)) {
		return invalid(
			'Idempotency-Key',
			'Idempotency-Key must be 1-255 printable ASCII characters without spaces.',
		);
	}
	return null;
}

function validateCreateUpload(body) {
	if (typeof body !== 'object' || body === null || Array.isArray(body)) {
		return invalid('', 'The request body must be a JSON object.', 'invalid_request');
	}
	for (const key of Object.keys(body)) {
		if (!['filename', 'content_type', 'size_bytes'].includes(key)) {
			return invalid(key, `Unknown field ${key}.`, 'unknown_parameter');
		}
	}
	for (const key of ['filename', 'content_type']) {
		if (key in body && (typeof body[key] !== 'string' || body[key].length < 1)) {
			return invalid(key, `${key} must be a non-empty string.`);
		}
	}
	if ('size_bytes' in body) {
		const s = body.size_bytes;
		if (!Number.isSafeInteger(s) || s < 0)
			return invalid('size_bytes', 'size_bytes must be a non-negative integer.');
		if (s > 5242880000) {
			return invalid(
				'size_bytes',
				'size_bytes exceeds the upload limit of 5242880000 bytes.',
				'file_too_large',
			);
		}
	}
	return null;
}

module.exports = { validateCreateJob, validateCreateUpload, validateIdempotencyKey, UUID };
