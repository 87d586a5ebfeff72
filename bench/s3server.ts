// The bench's S3 server in a process of its own (as the sandbox is), so that its work does not
// share the bench's thread with the node it measures. Prints "READY <endpoint> <bucket>" once the
// objects are stored, then one "REQ <json>" line per finished request (method, url, status, bytes).
// Usage: node --import tsx bench/s3server.ts [--latency-ms N] <key>=<bytes> …
import { startS3 } from '../test/helpers/s3Bucket';

async function main() {
	const args = process.argv.slice(2);
	const latency = args[0] === '--latency-ms' ? Number(args.splice(0, 2)[1]) : 0;
	const s3 = await startS3('captioning.videos', latency);
	for (const arg of args) {
		const [key, bytes] = arg.split('=');
		await s3.putLarge(key, Number(bytes));
	}
	let reported = 0;
	setInterval(() => {
		// An entry is finished once its status is set.
		while (reported < s3.requests.length && s3.requests[reported].status)
			process.stdout.write(`REQ ${JSON.stringify(s3.requests[reported++])}\n`);
	}, 20);
	process.stdout.write(`READY ${s3.endpoint} ${s3.bucket}\n`);
}

main().catch((error) => {
	process.stderr.write(`${(error as Error).stack}\n`);
	process.exit(1);
});
