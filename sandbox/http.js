'use strict';
// HTTP on both origins: the service's error, JSON answers, and reading a JSON body within the limit.

const MAX_JSON_BODY = 64 * 1024;

/** An error answer of the interface (part 2.6): status, code, message, param, extra headers. */
class ApiError extends Error {
	constructor(status, code, message, param = '', headers = {}) {
		super(message);
		Object.assign(this, { status, code, param, headers });
	}
}

function send(res, status, body, headers = {}) {
	const payload = body === undefined ? '' : JSON.stringify(body);
	res.writeHead(status, {
		'content-type': 'application/json',
		'content-length': Buffer.byteLength(payload),
		'cache-control': 'no-store',
		...headers,
	});
	res.end(payload);
}

function sendError(res, err, headers = {}) {
	send(
		res,
		err.status,
		{ error: { code: err.code, message: err.message, param: err.param ?? '' } },
		{ ...headers, ...err.headers },
	);
}

async function readJson(req, { optional }) {
	const declared = req.headers['content-length'];
	if (declared !== undefined && Number(declared) > MAX_JSON_BODY) {
		req.resume();
		throw new ApiError(413, 'body_too_large', `The JSON body exceeds ${MAX_JSON_BODY} bytes.`);
	}
	const chunks = [];
	let size = 0;
	for await (const chunk of req) {
		size += chunk.length;
		if (size > MAX_JSON_BODY) {
			req.resume();
			throw new ApiError(413, 'body_too_large', `The JSON body exceeds ${MAX_JSON_BODY} bytes.`);
		}
		chunks.push(chunk);
	}
	if (size === 0) {
		if (optional) return {};
		throw new ApiError(400, 'invalid_request', 'The request body is empty.');
	}
	const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
	if (type !== 'application/json') {
		throw new ApiError(
			415,
			'unsupported_content_type',
			'Send the body as application/json.',
			'Content-Type',
		);
	}
	try {
		return JSON.parse(Buffer.concat(chunks).toString('utf8'));
	} catch {
		throw new ApiError(400, 'invalid_json', 'The request body is not valid JSON.');
	}
}

module.exports = { ApiError, send, sendError, readJson };
