// The house's rules, read from the code's imports (CONTRIBUTING, "Layout"): every import runs down
// the floors, the triggers never load the order engine or a waiter, no file is over 300 lines
// (a panel's property list aside), no two files share a name, and the code stays within its size.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../..');
const captioning = 'nodes/Captioning';

function files(dir: string, ext = /\.(ts|js)$/): string[] {
	return readdirSync(path.join(root, dir)).flatMap((name) => {
		const rel = path.join(dir, name);
		return statSync(path.join(root, rel)).isDirectory()
			? files(rel, ext)
			: ext.test(name)
				? [rel]
				: [];
	});
}

/** The floor of a file of nodes/ and credentials/: lower floors never import higher ones. */
const FLOORS: Array<[RegExp, number, string]> = [
	[/^nodes\/Captioning\/model\//, 0, "the service's model"],
	[/^nodes\/Captioning\/transport\//, 1, 'transport'],
	[/^nodes\/Captioning\/(media|s3|captions|listing)\//, 2, 'media, s3, captions, listing'],
	[/^nodes\/Captioning\/(orders|events)\//, 3, 'orders, events'],
	[/^nodes\/Captioning\/waiting\//, 4, 'waiting'],
	[/^nodes\/Captioning\/actions\//, 5, 'actions'],
	[
		/^(nodes\/[^/]+\/[^/]+\.node\.ts|nodes\/Captioning(Trigger|PollingTrigger)\/|credentials\/)/,
		6,
		'node classes and their triggers',
	],
];

const floorOf = (file: string) => {
	const found = FLOORS.find(([pattern]) => pattern.test(file));
	if (!found)
		throw new Error(
			`${file} is on no floor: add its folder to FLOORS and to CONTRIBUTING's layout`,
		);
	return found;
};

/** A file's room: its folder under nodes/Captioning (actions, orders, …), else its node's folder. Inside a room, files import each other freely. */
const roomOf = (file: string) => {
	const parts = file.split('/');
	return parts[0] === 'nodes' && parts[1] === 'Captioning' && parts.length > 3
		? parts.slice(0, 3).join('/')
		: path.dirname(file);
};

/** The package's own files a file imports (resolved paths, relative to the root). */
function importsOf(file: string): string[] {
	const text = readFileSync(path.join(root, file), 'utf8');
	const specs = [...text.matchAll(/(?:from|import)\s+'(\.[^']+)'/g)].map((m) => m[1]);
	return specs.map((spec) => {
		const base = path.normalize(path.join(path.dirname(file), spec.replace(/\.js$/, '')));
		for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) {
			try {
				if (statSync(path.join(root, candidate)).isFile()) return candidate;
			} catch {
				// not this one
			}
		}
		throw new Error(`${file} imports ${spec}, which is not a file of the package`);
	});
}

const shipped = [...files('nodes', /\.ts$/), ...files('credentials', /\.ts$/)];

test('every import runs down: model ← transport ← media, captions, listing ← orders, events ← waiting ← actions ← node classes', () => {
	const upward: string[] = [];
	for (const file of shipped) {
		const [, floor, name] = floorOf(file);
		for (const imported of importsOf(file)) {
			const [, importedFloor, importedName] = floorOf(imported);
			if (roomOf(imported) !== roomOf(file) && importedFloor >= floor) {
				upward.push(`${file} (${name}) imports ${imported} (${importedName})`);
			}
		}
	}
	expect(upward).toEqual([]);
});

test('the model imports nothing of the package; transport only the model', () => {
	const offending = shipped.flatMap((file) => {
		const [, floor] = floorOf(file);
		if (floor > 1) return [];
		return importsOf(file)
			.filter(
				(imported) =>
					floorOf(imported)[1] > 0 ||
					(floor === 0 && path.dirname(imported) !== path.dirname(file)),
			)
			.filter((imported) => !(floor === 1 && imported.startsWith(`${captioning}/transport/`)))
			.filter((imported) => !(floor === 0 && imported.startsWith(`${captioning}/model/`)))
			.map((imported) => `${file} → ${imported}`);
	});
	expect(offending).toEqual([]);
});

test('the triggers never load the order engine, a waiter or the actions', () => {
	const closure = (entry: string, seen = new Set<string>()): Set<string> => {
		if (seen.has(entry)) return seen;
		seen.add(entry);
		for (const imported of importsOf(entry)) closure(imported, seen);
		return seen;
	};
	for (const trigger of [
		'nodes/CaptioningTrigger/CaptioningTrigger.node.ts',
		'nodes/CaptioningPollingTrigger/CaptioningPollingTrigger.node.ts',
	]) {
		const loaded = [...closure(trigger)].filter((file) =>
			/^nodes\/Captioning\/(orders|waiting|actions|media|s3)\//.test(file),
		);
		expect({ trigger, loaded }).toEqual({ trigger, loaded: [] });
	}
});

test('no file over 300 lines in nodes/, sandbox/ or bench/, but a panel whose lines are mostly its property list', () => {
	const long = [...shipped, ...files('sandbox'), ...files('bench')].filter((file) => {
		const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
		if (lines.length <= 300) return false;
		// A panel: its property list (from the first `properties` array to its end) is most of the file.
		const start = lines.findIndex((line) =>
			/^const properties: INodeProperties\[\] = \[/.test(line),
		);
		const end = lines.findIndex((line, n) => n > start && line === '];');
		return start < 0 || lines.length - (end - start) > 300;
	});
	expect(long).toEqual([]);
});

test('no two files of the package, its sandbox, bench or tests share a name', () => {
	const all = [...shipped, ...files('sandbox'), ...files('bench'), ...files('test')];
	const byName = new Map<string, string[]>();
	for (const file of all) {
		// index.ts names its folder, and an operation is named by its resource's folder (n8n's own
		// layout: actions/<resource>/<operation>.operation.ts).
		if (/(^|\/)index\.ts$|\.operation\.ts$/.test(file)) continue;
		const name = path
			.basename(file)
			.replace(/\.[^.]+$/, '')
			.toLowerCase();
		byName.set(name, [...(byName.get(name) ?? []), file]);
	}
	expect([...byName.values()].filter((list) => list.length > 1)).toEqual([]);
});

test('README.md stays at most 250 lines: the rest lives in docs/', () => {
	expect(
		readFileSync(path.join(root, 'README.md'), 'utf8').trimEnd().split('\n').length,
	).toBeLessThanOrEqual(250);
});

test('README.md and docs/ stay at most 700 lines together: say less, not more', () => {
	const docs = ['README.md', ...files('docs', /\.md$/)];
	// Counted as `cat README.md docs/*.md | wc -l` counts them: line ends.
	const text = docs.map((file) => readFileSync(path.join(root, file), 'utf8')).join('');
	expect(text.split('\n').length - 1).toBeLessThanOrEqual(700);
});

test('nodes/ and credentials/ hold at most 4,600 lines of code (comments and blank lines aside)', () => {
	const code = shipped
		.filter((file) => file.endsWith('.ts'))
		.flatMap((file) => readFileSync(path.join(root, file), 'utf8').split('\n'))
		.filter((line) => !/^\s*(\/\/|\*|\/\*)/.test(line) && !/^\s*$/.test(line));
	expect(code.length).toBeLessThanOrEqual(4600);
});
