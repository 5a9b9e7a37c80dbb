// The end of a script that is both a module and a command: runs `main(argv)` when this process was started on that
// file (`node scripts/x.mjs …`, also through a symlink), and not when it is imported. `main` resolves to the exit code;
// a thrown error prints one line `[keel] <message>` and exits 1.
import { realpathSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** @param {string} moduleUrl the script's `import.meta.url` @param {(argv: string[]) => Promise<number>} main */
export function runIfMain(moduleUrl, main) {
  if (!isMain(moduleUrl)) return;
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`[keel] ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}

function isMain(moduleUrl) {
  if (!process.argv[1]) return false;
  try {
    return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return pathToFileURL(process.argv[1]).href === moduleUrl;
  }
}
