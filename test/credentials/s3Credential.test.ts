// The Captioning S3 Media credential: its signing `authenticate`, and its Test button pressed as
// n8n's CredentialsTester does (test/engine/credentialTest.ts: n8n-core's RoutingNode sends it with
// n8n's own request helpers) against a real signature-checking S3 server. The e2e and editor suites
// press the real button in real n8n.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ICredentialDataDecryptedObject, IHttpRequestOptions } from 'n8n-workflow';

import { CaptioningS3Api } from '../../credentials/CaptioningS3Api.credentials';
import { pressTest as pressCredentialTest } from '../engine/credentialTest';
import type { S3Server } from '../helpers/s3Bucket';
import { startS3 } from '../helpers/s3Bucket';

const credential = new CaptioningS3Api();
const authenticate = credential.authenticate as (
	c: ICredentialDataDecryptedObject,
	o: IHttpRequestOptions,
) => Promise<IHttpRequestOptions>;

let s3: S3Server;
beforeAll(async () => {
	s3 = await startS3();
});
afterAll(async () => await s3.close());

const local = (data: ICredentialDataDecryptedObject = {}) => ({
	accessKeyId: s3.accessKeyId,
	secretAccessKey: s3.secretAccessKey,
	region: 'us-east-1',
	endpoint: s3.endpoint,
	forcePathStyle: true,
	...data,
});

const pressTest = async (data: ICredentialDataDecryptedObject) =>
	await pressCredentialTest(credential, local(data));

test('the test goes where the node would: Bucket to Test virtual-hosted on AWS, the bucket list without one', async () => {
	const aws = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', region: 'eu-central-1' };
	const listing = await authenticate({ ...aws, testBucket: 'my-videos' }, { url: '' });
	expect(listing.url).toBe(
		'https://my-videos.s3.eu-central-1.amazonaws.com/?list-type=2&max-keys=1&prefix=n8n-credential-test',
	);
	expect(listing).toMatchObject({ maxRedirects: 0, disableFollowRedirect: true });
	expect(listing.headers?.authorization).toMatch(
		/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-central-1\/s3\/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/,
	);
	expect(JSON.stringify(listing)).not.toContain('secret');
	expect((await authenticate(aws, { url: '' })).url).toBe('https://s3.eu-central-1.amazonaws.com/');
	// An address of its own (the HTTP Request node with this credential) is signed as it is.
	const own = 'https://my-videos.s3.eu-central-1.amazonaws.com/a%20b.mp4';
	expect((await authenticate(aws, { url: own, method: 'HEAD' })).url).toBe(own);
	await expect(authenticate(aws, { url: own, method: 'POST' })).rejects.toThrow(
		/signs GET and HEAD requests only, not POST/,
	);
});

test('right key and secret: the bucket list, or one object of Bucket to Test, is read', async () => {
	const ok = { status: 'OK', message: 'Connection successful!' };
	expect(await pressTest({})).toEqual(ok);
	expect(await pressTest({ testBucket: s3.bucket })).toEqual(ok);
	expect(s3.requests.slice(-2).map((r) => [r.method, r.url.split('?')[0], r.status])).toEqual([
		['GET', '/', 200],
		['GET', `/${s3.bucket}`, 200],
	]);
});

test('each problem its message: wrong secret, unknown bucket, unreachable endpoint, bad fields', async () => {
	expect(await pressTest({ secretAccessKey: 'wrong' })).toEqual({
		status: 'Error',
		message: expect.stringMatching(/^S3 refused the key \(403\): copy Access Key ID and Secret/),
	});
	expect(await pressTest({ testBucket: 'no-such-bucket' })).toEqual({
		status: 'Error',
		message: expect.stringMatching(/^No such bucket \(404\): check Bucket to Test/),
	});
	// A port nothing listens on.
	const closed = await new Promise<number>((resolve) => {
		const server = createServer().listen(0, '127.0.0.1', () => {
			const { port } = server.address() as AddressInfo;
			server.close(() => resolve(port));
		});
	});
	expect(await pressTest({ endpoint: `http://127.0.0.1:${closed}` })).toEqual({
		status: 'Error',
		message: expect.stringMatching(/ECONNREFUSED|refused the connection/),
	});
	expect((await pressTest({ endpoint: 'ftp://x' })).message).toMatch(
		/Custom Endpoint "ftp:\/\/x" is not an http\(s\) URL/,
	);
	expect((await pressTest({ region: 'Frankfurt' })).message).toMatch(
		/Region "Frankfurt" is not a region name/,
	);
	expect((await pressTest({ secretAccessKey: ' ' })).message).toMatch(
		/Access Key ID and Secret Access Key are both needed/,
	);
});
