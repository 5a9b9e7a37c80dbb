import type { Script } from '../activities/model/scripted.js';

/** What the user says, in order: the prompt, then follow-ups sent as `followUp` signals. */
export const DEMO_INPUTS = [
  'Hello',
  'What is 12*8?',
  'What is 1 divided by 0?',
  'Try a wrong parameter name',
  'Show me ../../../etc/hosts',
];

/** The scripted model of the seed demo (003): rules matched against the last message; the fallback stays last. */
export const DEMO_SCRIPT: Script = {
  rules: [
    { match: 'Hello', text: 'Hello! I can use tools now. Try asking me "What is 12*8?".' },
    { match: '12*8', text: 'Let me calculate that.', toolCall: { name: 'calc', arguments: { expression: '12*8' } } },
    { match: 'toolResult:calc 96', text: 'Done: 12*8 = 96.' },
    { match: '1 divided by 0', text: 'Let me try.', toolCall: { name: 'calc', arguments: { expression: '1/0' } } },
    { match: 'toolResult:calc Division by zero', text: 'That cannot be computed: the divisor must not be 0.' },
    {
      match: 'wrong parameter',
      text: 'I will call the parameter expr.',
      toolCall: { name: 'calc', arguments: { expr: '1+1' } },
    },
    {
      match: 'toolResult:calc Validation failed',
      text: 'Wrong parameter name; retrying with expression.',
      toolCall: { name: 'calc', arguments: { expression: '1+1' } },
    },
    { match: 'toolResult:calc 2', text: 'This time it passed: 1+1 = 2.' },
    // the refusal quotes the path, so this rule must come before the one that asks for it
    {
      match: 'toolResult:read_file Path',
      text: 'I cannot read outside the workspace, so I will leave that file alone.',
    },
    {
      match: 'etc/hosts',
      text: 'Let me read it.',
      toolCall: { name: 'read_file', arguments: { path: '../../../etc/hosts' } },
    },
    { text: 'I have no scripted answer for that.' },
  ],
};
