/**
 * Text a model, a tool or a run wrote, made safe for a terminal (issue 33 item 11): a reply or a tool's output must
 * not move the cursor, clear the screen, retitle the window or write a hyperlink over what the CLI shows. Every
 * control character — C0 except newline and tab, DEL, C1 — is written as a visible escape (`\x1b`, `\x07`, `\x9b`), so
 * an ANSI/OSC sequence reaches the terminal as inert text (`\x1b[2J`) and a reader still sees that it was there.
 * The CLI's own colours are added after this, around the safe text.
 */

/** Every character a terminal would act on, except `\n` and `\t`. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** `text` with each control character (C0 but `\n` `\t`, DEL, C1) as a visible `\xHH`; everything else unchanged. */
export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
