import type { Icon, ICredentialType, INodeProperties } from 'n8n-workflow';

/**
 * Read access to S3 (or an S3-compatible store) for Job → Create's S3 Object source: the node
 * checks the object with one signed HEAD and gives the service a time-limited signed GET URL, so
 * no media byte passes through n8n. Our own, because community nodes may not reuse n8n's AWS
 * credential. Tested by the Captioning node (`testedBy`): S3 answers in XML, which a declarative
 * test cannot read, and each of its error codes has its own fix.
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
			description:
				'Of an IAM user or role that may read the media objects (s3:GetObject is enough)',
		},
		{
			displayName: 'Secret Access Key',
			name: 'secretAccessKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			required: true,
			description:
				'Never sent anywhere: it signs the object check and the time-limited link the service fetches the media with',
		},
		{
			displayName: 'Session Token',
			name: 'sessionToken',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description:
				'Only for temporary credentials (AWS STS). A link signed with them stops working when they expire, whatever its own expiry.',
		},
		{
			displayName: 'Region',
			name: 'region',
			type: 'string',
			default: 'us-east-1',
			required: true,
			placeholder: 'e.g. eu-central-1',
			description:
				'The region of the buckets, e.g. eu-central-1. Cloudflare R2: auto. Other S3-compatible stores: the region their documentation names (often us-east-1).',
		},
		{
			displayName: 'Custom Endpoint',
			name: 'endpoint',
			type: 'string',
			default: '',
			placeholder: 'e.g. https://<account-id>.r2.cloudflarestorage.com',
			description:
				'Empty for AWS. For S3-compatible stores (MinIO, Cloudflare R2, Wasabi, Backblaze B2, Ceph): their S3 endpoint URL. The service fetches the media from it, so it must be reachable from the internet.',
		},
		{
			displayName: 'Force Path Style',
			name: 'forcePathStyle',
			type: 'boolean',
			default: false,
			description:
				'Whether to address objects as endpoint/bucket/key instead of bucket.endpoint/key. MinIO and Ceph usually need it; AWS, R2 and Wasabi do not.',
		},
		{
			displayName: 'Bucket to Test',
			name: 'testBucket',
			type: 'string',
			default: '',
			placeholder: 'e.g. my-videos',
			description:
				'Optional. The credential test lists one object of this bucket, which also checks the region. Empty: the test lists your buckets.',
		},
	];
}
