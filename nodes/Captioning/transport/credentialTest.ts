// The credentials' "Test" button (wired through the nodes' `testedBy`): reads the account and says
// which of wrong key, revoked key, read-only key, wrong path or unreachable host it met.
import type {
	ICredentialDataDecryptedObject,
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	INodeCredentialTestResult,
} from 'n8n-workflow';

import type { Account } from '../helpers/types';
import { networkCode } from './errors';

interface LegacyFullResponse {
	statusCode: number;
	body: unknown;
}

export async function captioningApiTest(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted<ICredentialDataDecryptedObject>,
): Promise<INodeCredentialTestResult> {
	const data = credential.data ?? {};
	const baseUrl = String(data.baseUrl ?? '').trim().replace(/\/+$/, '');
	if (!/^https?:\/\/[^/]+(\/.*)?\/v1$/.test(baseUrl)) {
		return { status: 'Error', message: 'Base URL must be an http(s) URL ending in /v1, e.g. https://api.example.com/v1' };
	}
	let response: LegacyFullResponse;
	try {
		response = (await this.helpers.request({
			method: 'GET',
			uri: `${baseUrl}/account`,
			// The test context has no httpRequestWithAuthentication; this is the configured origin only.
			headers: { Authorization: `Bearer ${String(data.apiKey ?? '')}` },
			json: true,
			simple: false,
			resolveWithFullResponse: true,
			followRedirect: false,
			timeout: 15000,
		})) as LegacyFullResponse;
	} catch (error) {
		return { status: 'Error', message: `Could not reach ${new URL(baseUrl).origin} (${networkCode(error)}): check the Base URL` };
	}
	const body = response.body as Partial<Account> & { error?: { code?: string; message?: string } };
	const service = body?.error?.message ? ` The service says: ${body.error.message}` : '';
	switch (true) {
		case response.statusCode === 200 && body?.object === 'account':
			return {
				status: 'OK',
				message: `Connected to workspace "${body.workspace?.name}" with a ${body.key?.access === 'read_only' ? 'read-only' : 'full-access'} key`,
			};
		case response.statusCode === 401:
			return { status: 'Error', message: `The API key was refused (401).${service || ' Check the key.'}` };
		case response.statusCode === 403:
			return { status: 'Error', message: `This key may not read the account (403).${service}` };
		case response.statusCode === 404:
			return { status: 'Error', message: `${baseUrl}/account was not found (404): check that the Base URL is the service's and ends in /v1` };
		default:
			return { status: 'Error', message: `Unexpected answer from ${baseUrl}/account (HTTP ${response.statusCode}).${service}` };
	}
}
