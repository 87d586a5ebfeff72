import type { IAuthenticateGeneric, Icon, ICredentialType, INodeProperties } from 'n8n-workflow';

/**
 * API key and base URL of the captioning service. The "Test" button is served by the nodes'
 * `captioningApiTest` (testedBy): unlike a declarative test it can read the service's error body,
 * so it tells a wrong key from a revoked one, and both from an unreachable base URL.
 */
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
			description: 'A workspace API key. Read-only keys can read jobs, captions and the account; ordering and uploading need a key with full access.',
		},
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: '',
			required: true,
			placeholder: 'https://api.your-captioning-service.com/v1',
			description: 'The service\'s base address, ending in the version segment /v1. To try the nodes without an account, run the sandbox (npm run sandbox) and paste the base URL it prints.',
		},
	];

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: {
			headers: {
				Authorization: '=Bearer {{$credentials.apiKey}}',
			},
		},
	};
}
