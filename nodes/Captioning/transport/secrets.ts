// Secrets the service echoes back in every job: a signed S3 link (media.url of an S3 Object order:
// whoever holds it reads the object; the service may quote it in an error too), and in a Webhook
// URL (options.webhook_url) the Captioning Trigger's Secret Token (`token`) or a waiting
// execution's resume token (`signature`, n8n 2.x): whoever holds those can post events. What the
// nodes output, keep in the node context or put in an error carries none of them.
import type { IDataObject } from 'n8n-workflow';

/** An http(s) URL whose query holds an AWS signature (Signature Version 4 or 2). */
const SIGNED_URL =
	/(https?:\/\/[^\s"'<>?#]+)\?[^\s"'<>#]*?\b(?:X-Amz-Signature|X-Amz-Credential|Signature|AWSAccessKeyId)=[^\s"'<>#]*/gi;

/** The text with every signed URL in it cut to the URL without its query. */
export function withoutSignatures(text: string): string {
	return text.replace(SIGNED_URL, '$1');
}

/** A Webhook URL (or a text quoting one) with its Secret Token and resume token masked. */
export function withoutToken(url: string): string {
	return url.replace(/([?&](?:token|signature)=)[^&#\s"'<>]*/g, '$1***');
}

/** A job, or a list of jobs, with media.url free of signatures and the webhook URL's token masked (changed in place). */
export function hideSecrets(body: unknown): void {
	const object = body as IDataObject | undefined;
	if (!object || typeof object !== 'object') return;
	if (object.object === 'list' && Array.isArray(object.data))
		for (const job of object.data) hideSecrets(job);
	if (object.object !== 'job') return;
	const media = object.media as IDataObject | undefined;
	if (media && typeof media.url === 'string') media.url = withoutSignatures(media.url);
	const options = object.options as IDataObject | undefined;
	if (options && typeof options.webhook_url === 'string')
		options.webhook_url = withoutToken(options.webhook_url);
}
