// A signed S3 link is a secret for its lifetime: whoever holds it reads the object. The service
// echoes the media_url of an S3 Object order back in every job (media.url) and may quote it in an
// error, so what the nodes output or put in an error carries the link without its query.
import type { IDataObject } from 'n8n-workflow';

/** An http(s) URL whose query holds an AWS signature (Signature Version 4 or 2). */
const SIGNED_URL = /(https?:\/\/[^\s"'<>?#]+)\?[^\s"'<>#]*?\b(?:X-Amz-Signature|X-Amz-Credential|Signature|AWSAccessKeyId)=[^\s"'<>#]*/gi;

/** The text with every signed URL in it cut to the URL without its query. */
export function withoutSignatures(text: string): string {
	return text.replace(SIGNED_URL, '$1');
}

/** A job, or a list of jobs, with media.url free of signatures (changed in place). */
export function hideSignatures(body: unknown): void {
	const object = body as IDataObject | undefined;
	if (!object || typeof object !== 'object') return;
	if (object.object === 'list' && Array.isArray(object.data)) {
		for (const job of object.data) hideSignatures(job);
		return;
	}
	const media = object.object === 'job' ? (object.media as IDataObject | undefined) : undefined;
	if (media && typeof media.url === 'string') media.url = withoutSignatures(media.url);
}
