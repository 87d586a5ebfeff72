// Copies what tsc does not: the icons, and each node's codex (.node.json) next to its compiled file.
const { src, dest, task, parallel } = require('gulp');

task(
	'build:icons',
	parallel(
		() => src('icons/*.{png,svg}').pipe(dest('dist/icons')),
		() => src('nodes/**/*.node.json').pipe(dest('dist/nodes')),
	),
);
