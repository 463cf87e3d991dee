// Preloaded into a process with `node --require`: when the process exits, it writes the files of
// every module it loaded through require (the compiled service is CommonJS) to the JSON file
// named by LOADED_MODULES_FILE.
'use strict';
const { writeFileSync } = require('node:fs');

process.on('exit', () => {
  writeFileSync(process.env.LOADED_MODULES_FILE, JSON.stringify(Object.keys(require.cache)));
});
