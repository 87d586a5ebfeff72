// A webhook's own answer to a job event (the Captioning Trigger, On Webhook's resume).
import type { IDataObject, IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';

/** Answers a webhook request with a status and a JSON body, telling n8n not to answer again. */
export function respond(
	ctx: IWebhookFunctions,
	status: number,
	body: IDataObject,
): IWebhookResponseData {
	ctx.getResponseObject().status(status).json(body);
	return { noWebhookResponse: true };
}
