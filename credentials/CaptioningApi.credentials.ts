import type {
	ICredentialDataDecryptedObject,
	Icon,
	ICredentialTestRequest,
	ICredentialType,
	IHttpRequestOptions,
	INodeProperties,
} from 'n8n-workflow';

import { baseUrlOf, inClear, underBaseUrl } from '../nodes/Captioning/transport/service';

/** What the credential test says for each error code the service answers its request with. */
const TEST_REFUSALS: Record<string, string> = {
	invalid_api_key: 'The API key is wrong (401): copy it again from the captioning dashboard',
	api_key_revoked: 'The API key has been revoked (401): create a new key in the dashboard',
	missing_api_key: 'No API key was sent (401): enter the API key',
	not_found: "The Base URL does not serve /account (404): check it is the service's, ending in /v1",
	insufficient_permissions: 'This key may not read the account (403)',
};

/** API key and base URL of the captioning service; "Test" reads the account. */
export class CaptioningApi implements ICredentialType {
	name = 'captioningApi';

	displayName = 'Captioning API';

	icon: Icon = { light: 'file:../icons/captioning.svg', dark: 'file:../icons/captioning.dark.svg' };

	documentationUrl = 'https://github.com/n8n-nodes-captioning/n8n-nodes-captioning#credentials';

	properties: INodeProperties[] = [
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			description: 'A workspace API key (ordering and uploading need full access)',
		},
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: '',
			required: true,
			placeholder: 'https://api.your-captioning-service.com/v1',
			description: "The captioning API's address, ending in /v1 (the API key goes nowhere else)",
		},
		{
			displayName: 'Webhook Secret Token',
			name: 'webhookToken',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: "For jobs ordered outside n8n: added as ?token= to the Trigger's Production URL",
		},
	];

	/**
	 * In n8n's HTTP Request node: Authentication "Predefined Credential Type", Captioning API, and a
	 * URL under the Base URL (e.g. {Base URL}/account), for an endpoint the node does not wrap. n8n
	 * hides this entry from the nodes panel because the package's own nodes use the credential.
	 */
	httpRequestNode = {
		name: 'Captioning',
		docsUrl: 'https://github.com/n8n-nodes-captioning/n8n-nodes-captioning#credentials',
		apiBaseUrlPlaceholder: 'https://api.your-captioning-service.com/v1/account',
	};

	/**
	 * Adds `Authorization: Bearer <key>`, only to a URL under the Base URL (same origin, a path inside
	 * it), and follows no redirect: in n8n's HTTP Request node a user may type any URL, and the key
	 * must not leave the service. A function rather than the generic `'=Bearer {{$credentials.apiKey}}'`: n8n resolves
	 * a generic definition with the workflow's expression engine at every request, which an
	 * overlapping poll can lose in n8n 2.x (CONTRIBUTING, "n8n's faults"); a function needs none.
	 */
	async authenticate(
		credentials: ICredentialDataDecryptedObject,
		requestOptions: IHttpRequestOptions,
	): Promise<IHttpRequestOptions> {
		const baseUrl = baseUrlOf(credentials);
		const clear = inClear(baseUrl);
		if (clear) throw new Error(`${clear} Nothing was sent.`);
		// n8n's own requests carry `url` (and `baseURL` for the credential test); the HTTP Request node's carry `uri`.
		const { uri, url = '', baseURL } = requestOptions as IHttpRequestOptions & { uri?: string };
		const target =
			uri ?? (baseURL ? `${baseURL.replace(/\/+$/, '')}/${url.replace(/^\/+/, '')}` : url);
		if (!underBaseUrl(target, baseUrl)) {
			// The address as an error may show it: no user info, query or fragment (a signature, a token).
			const parsed = URL.canParse(target) ? new URL(target) : undefined;
			const address = parsed ? `${parsed.origin}${parsed.pathname}` : "this request's URL";
			throw new Error(
				`The Captioning API credential sends its API key only to addresses under its Base URL (${baseUrl || 'not set'}), and ${address} is not one: nothing was sent. Use a URL that starts with the Base URL followed by a slash (e.g. ${baseUrl}/account), or no credential for other hosts.`,
			);
		}
		// No redirect is followed with the key: n8n copies Authorization onto a redirect to another origin
		// (1.x, and the HTTP Request node before 4.4). maxRedirects is what the HTTP Request node honours,
		// disableFollowRedirect what n8n's request helpers honour on 1.x.
		return {
			...requestOptions,
			headers: {
				...requestOptions.headers,
				Authorization: `Bearer ${String(credentials.apiKey ?? '')}`,
			},
			maxRedirects: 0,
			disableFollowRedirect: true,
		};
	}

	/**
	 * Reads the account. Error statuses are let through (ignoreHttpStatusErrors) so that the rules
	 * can read the service's error code: a wrong key, a revoked key, a read-only key and a wrong path
	 * each get their own message, and any other answer without an account fails too. An
	 * unreachable host fails before any rule, with n8n's connection error (e.g. ECONNREFUSED).
	 */
	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{$credentials.baseUrl}}',
			url: '/account',
			method: 'GET',
			ignoreHttpStatusErrors: true,
			// A host that takes the connection and never answers ends the Test, not the wait of it.
			timeout: 15000,
		},
		rules: [
			...Object.entries(TEST_REFUSALS).map(([value, message]) => ({
				type: 'responseSuccessBody' as const,
				properties: { key: 'error.code', value, message },
			})),
			{
				type: 'responseSuccessBody',
				properties: {
					key: 'object',
					value: undefined,
					message:
						'The Base URL did not answer with the account: check the Base URL (ending in /v1) and the API key',
				},
			},
		],
	};
}
