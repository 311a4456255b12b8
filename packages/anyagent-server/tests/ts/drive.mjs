// Drives `anyagent serve --mock SCRIPT` through anyagent-rs's TypeScript client, unchanged.
// Usage: ANYAGENT_BIN=... node drive.mjs CLIENT_DIST_INDEX_JS MOCK_SCRIPT DIR
// Prints one JSON summary line on stdout; exits non-zero on any failure.
const [clientPath, script, dir] = process.argv.slice(2);
const { Runtime, kindOf, is, AnyagentError } = await import(clientPath);

const rt = await Runtime.start({ mock: script });
const discovery = await rt.discover();
const session = await rt.open("mock", { dir });
const delivery = await session.prompt("hi");
const kinds = [];
const texts = [];
let answered = null;
let status = null;
for await (const ev of session.events()) {
  kinds.push(kindOf(ev));
  if (is(ev, "TextDelta")) texts.push(ev.kind.TextDelta.text);
  if (is(ev, "RequestOpened") && "Permission" in ev.kind.RequestOpened) {
    const request = ev.kind.RequestOpened.Permission;
    await session.answer(request.id, { Permission: request.options[0] });
    answered = request.id;
  }
  if (is(ev, "TurnEnded")) {
    status = session.status;
    await session.close();
  }
}
let afterClose = null;
try {
  await session.prompt("again");
} catch (e) {
  afterClose = e instanceof AnyagentError ? e.kind : String(e);
}
const code = await rt.close();
console.log(
  JSON.stringify({
    session: session.id,
    agents: discovery.agents.map((a) => a.id),
    delivery: Object.keys(delivery.kind),
    kinds,
    texts,
    answered,
    status,
    afterClose,
    code,
  }),
);
