// Drives one hosted-API provider's official SDK against relayq and prints
// one JSON line per case: {"case", "ok", "data" | "error"}.
// Environment: RELAY (host:port of relayq's HTTP listener), KEY (a relayq
// API key), TOK (a token prefix the test finds in delivered Subjects),
// ATTACH (base64 content of the attachment).
'use strict';

const provider = process.argv[2];
const { RELAY, KEY, TOK, ATTACH } = process.env;

function print(name, ok, value) {
  process.stdout.write(JSON.stringify({ case: name, ok, [ok ? 'data' : 'error']: value }) + '\n');
}

// The message every SDK sends first: the Go test sends the same through
// relayq's own API and compares the delivered bytes.
const same = {
  from: 'App <app@example.org>',
  to: 'rcpt@example.net',
  subject: `${TOK}-message`,
  text: 'Hello from the SDK',
  html: '<p>Hello from the SDK</p>',
  filename: 'report.txt',
};

async function postmarkCases() {
  const postmark = require('postmark');
  const opts = { useHttps: false, requestHost: RELAY };
  const client = new postmark.ServerClient(KEY, opts);
  const run = async (name, fn) => {
    try {
      print(name, true, await fn());
    } catch (e) {
      print(name, false, { name: e.name, code: e.code, statusCode: e.statusCode, message: e.message });
    }
  };
  const msg = (subject, extra) => Object.assign({
    From: same.from, To: same.to, Subject: subject, TextBody: same.text, HtmlBody: same.html, MessageStream: 'outbound',
  }, extra);
  await run('message', () => client.sendEmail(msg(same.subject, {
    Attachments: [{ Name: same.filename, Content: ATTACH, ContentType: 'text/plain', ContentID: null }],
  })));
  const batch = [];
  for (let i = 0; i < 50; i++) batch.push(msg(`${TOK}-batch-${i}`, { Tag: 'batch', Metadata: { n: String(i) } }));
  await run('batch', () => client.sendEmailBatch(batch));
  await run('bad-credentials', () => new postmark.ServerClient('app.wrong-secret', opts).sendEmail(msg(`${TOK}-refused-key`)));
  await run('unsupported-field', () => client.sendEmail(msg(`${TOK}-refused-track`, { TrackOpens: true })));
  await run('unsupported-template', () => client.sendEmailWithTemplate({ From: same.from, To: same.to, TemplateId: 1, TemplateModel: {} }));
  await run('bad-sender', () => client.sendEmail(msg(`${TOK}-refused-from`, { From: 'not an address' })));
}

async function resendCases() {
  const { Resend } = require('resend');
  const resend = new Resend(KEY, { baseUrl: `http://${RELAY}` });
  // The SDK returns {data, error} and never throws for an API error.
  const run = async (name, fn) => {
    const r = await fn();
    print(name, !r.error, r.error || r.data);
  };
  const msg = (subject, extra) => Object.assign({ from: same.from, to: same.to, subject, text: same.text, html: same.html }, extra);
  await run('message', () => resend.emails.send(msg(same.subject, {
    attachments: [{ filename: same.filename, content: Buffer.from(ATTACH, 'base64'), contentType: 'text/plain' }],
  })));
  const batch = [];
  for (let i = 0; i < 50; i++) batch.push(msg(`${TOK}-batch-${i}`, { tags: [{ name: 'n', value: String(i) }] }));
  await run('batch', () => resend.batch.send(batch));
  const key = `${TOK}-idem`;
  await run('idempotent-first', () => resend.emails.send(msg(`${TOK}-idem`), { idempotencyKey: key }));
  await run('idempotent-retry', () => resend.emails.send(msg(`${TOK}-idem`), { idempotencyKey: key }));
  await run('idempotent-other', () => resend.emails.send(msg(`${TOK}-idem-other`), { idempotencyKey: key }));
  const at = new Date(Date.now() + 3600 * 1000).toISOString();
  await run('scheduled', () => resend.emails.send(msg(`${TOK}-scheduled`, { scheduledAt: at })));
  await run('bad-credentials', () => new Resend('app.wrong-secret', { baseUrl: `http://${RELAY}` }).emails.send(msg(`${TOK}-refused-key`)));
  await run('unsupported-field', () => resend.emails.send(msg(`${TOK}-refused-template`, { template: { id: 'welcome' } })));
  await run('bad-sender', () => resend.emails.send(msg(`${TOK}-refused-from`, { from: 'not an address' })));
}

async function sendgridCases() {
  const { MailService } = require('@sendgrid/mail');
  const { Client } = require('@sendgrid/client');
  const mailer = (key) => {
    // setApiKey resets the base URL to the region's, so the override
    // (the client's documented setDefaultRequest) comes after it.
    const m = new MailService();
    const c = new Client();
    c.setApiKey(key);
    c.setDefaultRequest('baseUrl', `http://${RELAY}/`);
    m.setClient(c);
    return m;
  };
  const sg = mailer(KEY);
  const run = async (name, fn) => {
    try {
      const r = await fn();
      const list = Array.isArray(r[0]) ? r.map((x) => x[0]) : [r[0]];
      print(name, true, list.map((x) => ({ statusCode: x.statusCode, messageId: x.headers['x-message-id'] })));
    } catch (e) {
      print(name, false, { code: e.code, message: e.message, body: e.response && e.response.body });
    }
  };
  const msg = (subject, extra) => Object.assign({
    from: { email: 'app@example.org', name: 'App' }, to: same.to, subject, text: same.text, html: same.html,
  }, extra);
  await run('message', () => sg.send(msg(same.subject, {
    attachments: [{ filename: same.filename, content: ATTACH, type: 'text/plain', disposition: 'attachment' }],
  })));
  const batch = [];
  for (let i = 0; i < 50; i++) batch.push(msg(`${TOK}-batch-${i}`, { categories: ['batch'], customArgs: { n: String(i) } }));
  await run('batch', () => sg.send(batch));
  await run('scheduled', () => sg.send(msg(`${TOK}-scheduled`, { sendAt: Math.floor(Date.now() / 1000) + 3600 })));
  await run('bad-credentials', () => mailer('app.wrong-secret').send(msg(`${TOK}-refused-key`)));
  await run('unsupported-field', () => sg.send(msg(`${TOK}-refused-template`, { templateId: 'd-123' })));
  await run('unsupported-tracking', () => sg.send(msg(`${TOK}-refused-track`, { trackingSettings: { openTracking: { enable: true } } })));
  await run('bad-sender', () => sg.send(msg(`${TOK}-refused-from`, { from: { email: 'not an address' } })));
}

const cases = { postmark: postmarkCases, resend: resendCases, sendgrid: sendgridCases };
if (!cases[provider]) {
  process.stderr.write(`usage: node sdk.js ${Object.keys(cases).join('|')}\n`);
  process.exit(2);
}
cases[provider]().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
