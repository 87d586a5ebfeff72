// The Captioning S3 Media credential's Test (the Captioning node offers it: `testedBy`): one listing,
// and for each failure its fix.
import type {
	ICredentialsDecrypted,
	ICredentialTestFunctions,
	IN8nHttpFullResponse,
	INodeCredentialTestResult,
} from 'n8n-workflow';

import { header, networkCode } from '../transport/errors';
import type { S3Access } from '../transport/s3';
import { bucketUrl, serviceUrl } from '../transport/s3';
import { explainS3, s3Error } from './s3Answers';
import { origin, s3AccessOf, s3Options } from './s3Object';

/**
 * The credential test's one request. A credential test gets one helper from n8n, the deprecated
 * `request`, which n8n's lint refuses in a community node: so Node's own fetch, once, no redirects.
 */
async function listOnce(
	access: S3Access,
	url: string,
): Promise<IN8nHttpFullResponse | { networkCode: string }> {
	const options = s3Options(access, 'GET', url);
	try {
		const res = await fetch(url, {
			method: 'GET',
			headers: options.headers as Record<string, string>,
			redirect: 'manual',
			signal: AbortSignal.timeout(30000),
		});
		return {
			statusCode: res.status,
			headers: Object.fromEntries(res.headers.entries()),
			body: await res.text(),
		};
	} catch (error) {
		return { networkCode: networkCode(error) };
	}
}

/** The credential test: lists one object of Bucket to Test, or the buckets; each failure says its fix. */
export async function testS3Credential(
	this: ICredentialTestFunctions,
	credential: ICredentialsDecrypted,
): Promise<INodeCredentialTestResult> {
	const data = credential.data ?? {};
	const access = s3AccessOf(data);
	if (typeof access === 'string') return { status: 'Error', message: access };
	const bucket = String(data.testBucket ?? '').trim();
	// A listing under a prefix no one uses: the same checks (key, secret, region, s3:ListBucket), no object names read.
	const url = bucket
		? `${bucketUrl(access, bucket)}?list-type=2&max-keys=1&prefix=n8n-credential-test`
		: serviceUrl(access);
	const what = bucket ? `bucket ${bucket}` : 'the bucket list';
	const response = await listOnce(access, url);
	if ('networkCode' in response) {
		return {
			status: 'Error',
			message: `Could not reach the S3 store at ${origin(access)} (${response.networkCode}): check Custom Endpoint (empty for AWS) and Region`,
		};
	}
	if (response.statusCode === 200)
		return { status: 'OK', message: 'Connection tested successfully' };
	const { code, message } = s3Error(response.body);
	const bucketRegion =
		header(response, 'x-amz-bucket-region') ||
		(message.match(/expecting '([a-z0-9-]+)'/)?.[1] ?? '');
	if (code === 'AccessDenied' && !bucket) {
		return {
			status: 'Error',
			message:
				'The key and secret are right, but this credential may not list buckets (s3:ListAllMyBuckets). Enter a Bucket to Test that it may read, and test again.',
		};
	}
	return {
		status: 'Error',
		message: `${explainS3(response.statusCode, code, access.region, bucketRegion, what)} (${response.statusCode}${code ? ` ${code}` : ''})`,
	};
}
