import type {
	ICredentialDataDecryptedObject,
	Icon,
	ICredentialTestRequest,
	ICredentialType,
	IHttpRequestOptions,
	INodeProperties,
} from 'n8n-workflow';

import { signedHeaders } from '../nodes/Captioning/s3/signing';
import { bucketUrl, s3AccessOf, serviceUrl } from '../nodes/Captioning/s3/addresses';

/** The credential test's listing: under a prefix no one uses, so it reads no object's name. */
const TEST_LISTING = '?list-type=2&max-keys=1&prefix=n8n-credential-test';

/** What the credential test says for each status S3 refuses its request with. */
const TEST_REFUSALS: Record<number, string> = {
	301: 'The bucket is in another region (301): set Region to the region of Bucket to Test',
	400: "S3 refused the request (400): check Region (the bucket's region; auto for Cloudflare R2) and Custom Endpoint",
	403: 'S3 refused the key (403): copy Access Key ID and Secret Access Key again. The key must also be allowed to list Bucket to Test (s3:ListBucket), or, with Bucket to Test empty, to list buckets (s3:ListAllMyBuckets).',
	404: 'No such bucket (404): check Bucket to Test, and Custom Endpoint for an S3-compatible store',
};

/**
 * Read access to S3 (or an S3-compatible store) for Job → Create's S3 Object source: the node
 * checks the object with one signed HEAD and gives the service a time-limited signed GET URL, so
 * no media byte passes through n8n. Our own, because community nodes may not reuse n8n's AWS
 * credential.
 */
export class CaptioningS3Api implements ICredentialType {
	name = 'captioningS3Api';

	displayName = 'Captioning S3 Media API';

	icon: Icon = { light: 'file:../icons/captioning.svg', dark: 'file:../icons/captioning.dark.svg' };

	documentationUrl = 'https://github.com/n8n-nodes-captioning/n8n-nodes-captioning#videos-in-s3';

	properties: INodeProperties[] = [
		{
			displayName: 'Access Key ID',
			name: 'accessKeyId',
			type: 'string',
			default: '',
			required: true,
			placeholder: 'e.g. AKIAIOSFODNN7EXAMPLE',
			description: 'Of an IAM user or role that may read the media (s3:GetObject)',
		},
		{
			displayName: 'Secret Access Key',
			name: 'secretAccessKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			description: 'Never sent: it signs the object check and the link the service fetches',
		},
		{
			displayName: 'Session Token',
			name: 'sessionToken',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description: 'Only for temporary credentials (AWS STS); links expire with them',
		},
		{
			displayName: 'Region',
			name: 'region',
			type: 'string',
			default: 'us-east-1',
			required: true,
			placeholder: 'e.g. eu-central-1',
			description: 'The region of the buckets, e.g. eu-central-1 (Cloudflare R2: auto)',
		},
		{
			displayName: 'Custom Endpoint',
			name: 'endpoint',
			type: 'string',
			default: '',
			placeholder: 'e.g. https://<account-id>.r2.cloudflarestorage.com',
			description: 'Empty for AWS; else the S3 address of your store (MinIO, R2, Wasabi, B2)',
		},
		{
			displayName: 'Force Path Style',
			name: 'forcePathStyle',
			type: 'boolean',
			default: false,
			description: 'Whether to use endpoint/bucket/key addresses (MinIO and Ceph usually need it)',
		},
		{
			displayName: 'Bucket to Test',
			name: 'testBucket',
			type: 'string',
			default: '',
			placeholder: 'e.g. my-videos',
			description: 'Optional: a bucket the Test lists one object of, checking the Region too',
		},
	];

	/**
	 * Signs a bodiless GET or HEAD with AWS Signature Version 4 and follows no redirect. A request
	 * without an address is the credential test's: it goes to Bucket to Test (a one-key listing), or
	 * lists the buckets when that is empty, at the address the node would use (virtual-hosted or
	 * path style). The secret itself is never sent.
	 */
	async authenticate(
		credentials: ICredentialDataDecryptedObject,
		requestOptions: IHttpRequestOptions,
	): Promise<IHttpRequestOptions> {
		const access = s3AccessOf(credentials);
		if (typeof access === 'string') throw new Error(access);
		const method = (requestOptions.method ?? 'GET').toUpperCase();
		if (method !== 'GET' && method !== 'HEAD')
			throw new Error(`The S3 Media credential signs GET and HEAD requests only, not ${method}`);
		const bucket = String(credentials.testBucket ?? '').trim();
		const url = /^https?:\/\//i.test(requestOptions.url)
			? requestOptions.url
			: bucket
				? `${bucketUrl(access, bucket)}${TEST_LISTING}`
				: serviceUrl(access);
		return {
			...requestOptions,
			url,
			baseURL: undefined,
			headers: { ...requestOptions.headers, ...signedHeaders(access, method, url, new Date()) },
			maxRedirects: 0,
			disableFollowRedirect: true,
		};
	}

	/** Lists one object of Bucket to Test, or the buckets; each refusal names its fix. */
	test: ICredentialTestRequest = {
		request: { method: 'GET', url: '' },
		rules: Object.entries(TEST_REFUSALS).map(([value, message]) => ({
			type: 'responseCode' as const,
			properties: { value: Number(value), message },
		})),
	};
}
