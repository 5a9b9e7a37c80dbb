// A vitest reporter that writes what fails outside any test — unhandled errors (an uncaught exception or rejection
// while the files ran) and files that failed as a whole (a hook, an import) — to .keel/test-errors-<projects>.json,
// so that scripts/test-summary.mjs can print them at the end of a long log (vitest then exits 1 with every test
// passed, and its own report of them is far above the last lines a CI log shows).
import { mkdirSync, writeFileSync } from 'node:fs';

const firstLines = (text, n) =>
  String(text ?? '')
    .split('\n')
    .slice(0, n)
    .join('\n');

export default class TestErrorsReporter {
  onInit(vitest) {
    this.vitest = vitest;
  }

  onTestRunEnd(testModules, unhandledErrors) {
    const projects = [...new Set(testModules.map((m) => m.project.name))].sort().join('-') || 'none';
    const errors = [
      ...unhandledErrors.map((e) => ({
        kind: 'unhandled',
        where: e.VITEST_TEST_PATH ?? e.VITEST_TEST_NAME ?? '(no test file named)',
        message: firstLines(e.stack ?? `${e.name}: ${e.message}`, 8),
      })),
      ...testModules.flatMap((m) =>
        m.errors().map((e) => ({ kind: 'file', where: m.moduleId, message: firstLines(e.stack ?? e.message, 8) })),
      ),
    ];
    mkdirSync('.keel', { recursive: true });
    writeFileSync(`.keel/test-errors-${projects}.json`, JSON.stringify(errors, null, 2));
  }
}
