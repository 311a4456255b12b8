// More scenarios through anyagent-rs's TypeScript client, unchanged.
// Usage: ANYAGENT_BIN=... node scenarios.mjs CLIENT_DIST_INDEX_JS SCENARIO MOCK_SCRIPT DIR
// SCENARIO: die | configure | flood. Prints one JSON summary line on stdout.
const [clientPath, scenario, script, dir] = process.argv.slice(2);
const { Runtime, kindOf, is, AnyagentError } = await import(clientPath);

const rt = await Runtime.start({ mock: script });
const session = await rt.open("mock", { dir });
const out = { scenario };
if (scenario === "die") {
  await session.prompt("hi");
  const kinds = [];
  try {
    for await (const ev of session.events()) {
      kinds.push(kindOf(ev));
      if (is(ev, "TurnEnded")) out.stop = ev.kind.TurnEnded.stop;
    }
    out.thrown = null;
  } catch (e) {
    out.thrown = e instanceof AnyagentError ? { kind: e.kind, message: e.message, data: e.data } : String(e);
  }
  out.kinds = kinds;
} else if (scenario === "configure") {
  const option = session.info.details.config_options.find((o) => o.id === "model");
  out.before = option?.current ?? null;
  await session.configure("model", "opus");
  for await (const ev of session.events()) {
    if (is(ev, "SessionUpdated")) break;
  }
  out.after = session.info.configuration.options.model ?? null;
  out.current = session.info.details.config_options.find((o) => o.id === "model")?.current ?? null;
  try {
    await session.configure("model", "gpt");
    out.bad = null;
  } catch (e) {
    out.bad = e instanceof AnyagentError ? e.kind : String(e);
  }
  await session.close();
  for await (const _ of session.events());
} else if (scenario === "flood") {
  await session.prompt("go");
  let deltas = 0;
  let last = 0;
  let ordered = true;
  for await (const ev of session.events()) {
    if (ev.sequence <= last) ordered = false;
    last = ev.sequence;
    if (is(ev, "TextDelta")) deltas += 1;
    if (is(ev, "TurnEnded")) break;
  }
  Object.assign(out, { deltas, ordered });
  await session.close();
  for await (const _ of session.events());
}
out.code = await rt.close();
console.log(JSON.stringify(out));
