// What an S3-compatible store's refusal of a HEAD means, and the fix (Job → Create's check of an
// S3 Object).
/** What an S3 error means and what to do. */
export function explainS3(
	status: number,
	code: string,
	region: string,
	bucketRegion: string,
	what: string,
): string {
	if (bucketRegion && bucketRegion !== region)
		return `${what} is in region ${bucketRegion}, but the credential says ${region}: set Region to ${bucketRegion} in the Captioning S3 Media credential.`;
	switch (code) {
		case 'InvalidAccessKeyId':
			return 'The Access Key ID is not known to this store: copy it again (and check Custom Endpoint: a key of one store is unknown to another).';
		case 'SignatureDoesNotMatch':
			return 'The Secret Access Key does not match the Access Key ID: copy the secret again.';
		case 'AuthorizationHeaderMalformed':
			return `The store refused the signature's scope, most often a wrong Region (now ${region}): set the bucket's region in the credential.`;
		case 'ExpiredToken':
		case 'TokenRefreshRequired':
			return 'The Session Token has expired: enter fresh temporary credentials.';
		case 'InvalidToken':
			return 'The Session Token is not valid for this key: enter the token issued with it, or leave Session Token empty for a permanent key.';
		case 'AccessDenied':
		case 'AllAccessDisabled':
			return `The credential may not read ${what}: give its user or role s3:GetObject on it (and s3:ListBucket to tell a missing key from a denied one).`;
		case 'NoSuchBucket':
			return `${what}: the bucket does not exist in this store. Check Bucket Name (and Custom Endpoint).`;
		case 'NoSuchKey':
			return `${what} does not exist: check Object Key (keys are case-sensitive; the AWS S3 node's Get Many lists them).`;
	}
	if (status === 403)
		return `The store refused to let this credential read ${what} (403): wrong Secret Access Key, or no s3:GetObject permission on it.`;
	if (status === 404)
		return `${what} does not exist: check Bucket Name and Object Key (keys are case-sensitive).`;
	if (status === 301 || status === 307)
		return `${what} is not served at this endpoint${bucketRegion ? ` (its region is ${bucketRegion})` : ''}: check Region and Custom Endpoint in the credential.`;
	return `The store answered ${status}${code ? ` ${code}` : ''}. Check the credential's Region and Custom Endpoint.`;
}
