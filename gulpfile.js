// Copies the node and credential icons next to the compiled code (`npm run build` runs tsc, then this).
const { src, dest, task } = require('gulp');

task('build:icons', () => src('icons/*.{png,svg}').pipe(dest('dist/icons')));
