// The Captioning S3 Media credential's Test button: n8n's CredentialsTester calls the node's
// `methods.credentialTest` function (the node names it with `testedBy`) with the helpers n8n gives
// it (helpers.request, n8n-core's proxyRequestToAxios; the function does not use it, see
// helpers/s3Source.ts), against a real signature-checking S3 server. The e2e and editor suites
// press the real button in real n8n.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ICredentialDataDecryptedObject, ICredentialTestFunctions } from 'n8n-workflow';

import { Captioning } from '../../nodes/Captioning/Captioning.node';
import type { S3Server } from '../helpers/s3Bucket';
import { startS3 } from '../helpers/s3Bucket';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { proxyRequestToAxios } =
	require('n8n-core/dist/execution-engine/node-execution-context/utils/request-helpers/legacy-request-adapter') as {
		proxyRequestToAxios: (
			w: undefined,
			a: undefined,
			n: undefined,
			uriOrObject: unknown,
			options?: unknown,
		) => Promise<unknown>;
	};

let s3: S3Server;
beforeAll(async () => {
	s3 = await startS3();
});
afterAll(async () => await s3.close());

const node = new Captioning();
const testedBy = node.description.credentials!.find((c) => c.name === 'captioningS3Api')!
	.testedBy as string;
const testFunctions = {
	logger: console,
	helpers: {
		request: async (uriOrObject: unknown, options?: unknown) =>
			await proxyRequestToAxios(undefined, undefined, undefined, uriOrObject, options),
	},
} as unknown as ICredentialTestFunctions;

async function pressTest(data: ICredentialDataDecryptedObject) {
	const fn = node.methods.credentialTest[testedBy as 'captioningS3ApiTest'];
	return await fn.call(testFunctions, {
		id: '1',
		name: 'S3',
		type: 'captioningS3Api',
		data: {
			accessKeyId: s3.accessKeyId,
			secretAccessKey: s3.secretAccessKey,
			region: 'us-east-1',
			endpoint: s3.endpoint,
			forcePathStyle: true,
			...data,
		},
	});
}

test('the node tests the credential (testedBy) with a function it offers', () => {
	expect(testedBy).toBe('captioningS3ApiTest');
	expect(typeof node.methods.credentialTest.captioningS3ApiTest).toBe('function');
});

test('right key and secret: the bucket list, or one object of Bucket to Test, is read', async () => {
	expect(await pressTest({})).toEqual({ status: 'OK', message: 'Connection tested successfully' });
	expect(await pressTest({ testBucket: s3.bucket })).toEqual({
		status: 'OK',
		message: 'Connection tested successfully',
	});
	expect(s3.requests.slice(-2).map((r) => [r.method, r.url.split('?')[0], r.status])).toEqual([
		['GET', '/', 200],
		['GET', `/${s3.bucket}`, 200],
	]);
});

test('each problem its own message: wrong secret, unknown bucket, unreachable endpoint, bad fields', async () => {
	expect(await pressTest({ secretAccessKey: 'wrong' })).toEqual({
		status: 'Error',
		message:
			'The Secret Access Key does not match the Access Key ID: copy the secret again. (403 SignatureDoesNotMatch)',
	});
	expect((await pressTest({ testBucket: 'no-such-bucket' })).message).toBe(
		'bucket no-such-bucket: the bucket does not exist in this store. Check Bucket Name (and Custom Endpoint). (404 NoSuchBucket)',
	);
	// A port nothing listens on (fetch refuses a few ports outright, 9 among them).
	const closed = await new Promise<number>((resolve) => {
		const server = createServer().listen(0, '127.0.0.1', () => {
			const { port } = server.address() as AddressInfo;
			server.close(() => resolve(port));
		});
	});
	expect(await pressTest({ endpoint: `http://127.0.0.1:${closed}` })).toEqual({
		status: 'Error',
		message: `Could not reach the S3 store at http://127.0.0.1:${closed} (ECONNREFUSED): check Custom Endpoint (empty for AWS) and Region`,
	});
	expect(await pressTest({ endpoint: 'ftp://x' })).toEqual({
		status: 'Error',
		message:
			'Custom Endpoint "ftp://x" is not an http(s) URL (e.g. https://<account-id>.r2.cloudflarestorage.com)',
	});
	expect(await pressTest({ region: 'Frankfurt' })).toEqual({
		status: 'Error',
		message: 'Region "Frankfurt" is not a region name (e.g. eu-central-1; auto for Cloudflare R2)',
	});
});
