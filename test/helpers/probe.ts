// A test-only node that calls the transport with its parameters, so the transport runs inside
// n8n's real execution context (real request helpers, real credential authentication).
import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	JsonObject,
} from 'n8n-workflow';
import { NodeApiError, UserError } from 'n8n-workflow';
import { createReadStream } from 'node:fs';

import { apiRequest, sendWithRetries } from '../../nodes/Captioning/transport';
import { jobPages } from '../../nodes/Captioning/transport/jobs';
import { downloadFile, uploadFile } from '../../nodes/Captioning/transport/files';

/**
 * Failures as n8n's request helpers throw them, read in n8n's source: `reset-1x` is n8n 1.122.5's
 * httpRequestWithAuthentication after a connection reset (a NodeApiError that kept only the code,
 * as httpCode, and no cause); `refused-2x` is n8n 2.41.1's refusal by its SSRF protection (a UserError), wrapped
 * the same way.
 */
function failureOf(ctx: IExecuteFunctions, shape: string): Error {
	if (shape === 'reset-1x') {
		const error = new NodeApiError(ctx.getNode(), {
			message: 'read ECONNRESET',
			code: 'ECONNRESET',
		} as unknown as JsonObject);
		return Object.assign(error, { cause: undefined });
	}
	if (shape === 'own-error') {
		// n8n's own error, with no network code (e.g. what a credential's authenticate threw).
		return new NodeApiError(ctx.getNode(), {
			message: 'Cannot read the proxy settings',
		} as unknown as JsonObject);
	}
	// As n8n 2.41.1's SsrfBlockedIpError: a UserError of n8n-workflow's.
	const ssrf = new UserError(
		'The request was blocked because it resolves to a restricted IP address',
	);
	return new NodeApiError(ctx.getNode(), ssrf as unknown as JsonObject);
}

export const probe: INodeType = {
	description: {
		displayName: 'Transport Probe',
		name: 'transportProbe',
		group: ['transform'],
		version: 1,
		description: 'Calls the transport (tests only)',
		defaults: { name: 'Probe' },
		inputs: ['main'],
		outputs: ['main'],
		credentials: [{ name: 'captioningApi', required: true }],
		properties: [],
	} as unknown as INodeTypeDescription,
	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const p = this.getInputData()[0].json;
		switch (p.op) {
			case 'api': {
				const r = await apiRequest(this, p.method as 'GET', p.path as string, {
					body: p.body as IDataObject | undefined,
					qs: p.qs as IDataObject | undefined,
					idempotencyKey: p.idempotencyKey as string | undefined,
				});
				return [
					[{ json: { statusCode: r.statusCode, headers: r.headers, body: r.body as IDataObject } }],
				];
			}
			case 'list': {
				const ids: string[] = [];
				const filters = (p.filters as IDataObject) ?? {};
				for await (const page of jobPages(this, filters, { max: p.limit as number | undefined }))
					ids.push(...page.map((job) => job.id));
				return [[{ json: { ids } }]];
			}
			case 'upload': {
				const file = p.file as string;
				const upload = await uploadFile(
					this,
					{
						fileName: 'clip.bin',
						mimeType: 'application/octet-stream',
						size: p.size as number,
						open: async () => (file ? createReadStream(file) : Buffer.from(p.data as string)),
					},
					0,
				);
				return [[{ json: { id: upload.id } }]];
			}
			case 'thrown': {
				// A failure as n8n's request helpers hand it over, thrown by every attempt: `shape` says which.
				let attempts = 0;
				await sendWithRetries(
					this,
					{ retryable: true, target: 'the captioning service' },
					async () => {
						attempts += 1;
						throw failureOf(this, p.shape as string);
					},
				).catch((error: Error) => {
					throw Object.assign(error, { attempts });
				});
				return [[{ json: {} }]];
			}
			case 'download': {
				const d = await downloadFile(this, p.url as string, 'The captions', 0);
				return [[{ json: { contentType: d.contentType, text: d.data.toString('utf8') } }]];
			}
		}
		throw new Error(`unknown op ${String(p.op)}`);
	},
};
