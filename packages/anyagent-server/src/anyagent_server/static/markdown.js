// A small, safe Markdown renderer: everything is escaped first, then a few constructs are
// recognised (fenced code, headings, nested lists, tables, quotes, emphasis, inline code, links,
// images). No HTML passes; links are http(s) only, images http(s) or inline raster data.
const esc = (s) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

const SAFE_LINK = /^https?:\/\/[^\s]+$/i;
const SAFE_IMAGE = /^(https?:\/\/[^\s]+|data:image\/(png|gif|jpeg|webp);base64,[A-Za-z0-9+/=]+)$/i;

// Inline constructs. Code spans, images and links become placeholders first (their text is never
// touched by emphasis), the rest is escaped, then the placeholders are filled with escaped HTML.
function inline(text) {
  const held = [];
  const hold = (html) => { held.push(html); return `\u0000${held.length - 1}\u0000`; };
  let s = text.replace(/\u0000/g, "");
  s = s.replace(/`([^`]+)`/g, (_, c) => hold(`<code>${esc(c)}</code>`));
  s = s.replace(/!\[([^\]]*)\]\(([^)\s]+)\)/g, (whole, alt, url) =>
    SAFE_IMAGE.test(url) ? hold(`<img src="${esc(url)}" alt="${esc(alt)}" loading="lazy" referrerpolicy="no-referrer">`) : hold(esc(alt ? `[image: ${alt}]` : "[image]")));
  s = s.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (whole, label, url) =>
    SAFE_LINK.test(url) ? hold(`<a href="${esc(url)}" target="_blank" rel="noopener noreferrer">${emphasis(esc(label))}</a>`) : hold(esc(label)));
  s = emphasis(esc(s));
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => held[Number(i)] ?? "");
}

function emphasis(s) {
  return s.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>")
    .replace(/~~([^~]+)~~/g, "<del>$1</del>");
}

const LIST_ITEM = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

const indentOf = (line) => line.match(/^\s*/)[0].replace(/\t/g, "    ").length;

function cells(row) {
  let r = row.trim();
  if (r.startsWith("|")) r = r.slice(1);
  if (r.endsWith("|") && !r.endsWith("\\|")) r = r.slice(0, -1);
  return r.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function table(header, sep, rows) {
  const align = cells(sep).map((c) => (c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : ""));
  const n = align.length;
  const cell = (tag, text, i) => `<${tag}${align[i] ? ` class="align-${align[i]}"` : ""}>${inline(text || "")}</${tag}>`;
  const head = cells(header).slice(0, n);
  while (head.length < n) head.push("");
  const body = rows.map((r) => {
    const cs = cells(r).slice(0, n);
    while (cs.length < n) cs.push("");
    return `<tr>${cs.map((c, i) => cell("td", c, i)).join("")}</tr>`;
  });
  return `<div class="table-wrap"><table><thead><tr>${head.map((c, i) => cell("th", c, i)).join("")}</tr></thead><tbody>${body.join("")}</tbody></table></div>`;
}

// A list block: items by indentation; deeper items nest in the item above them.
function list(lines) {
  const root = { indent: -1, children: [] };
  const stack = [root];
  for (const line of lines) {
    const m = line.match(LIST_ITEM);
    if (!m) { // continuation text of the item above
      const last = stack[stack.length - 1];
      if (last !== root) last.text += `\n${line.trim()}`;
      continue;
    }
    const indent = indentOf(m[1]);
    while (stack.length > 1 && stack[stack.length - 1].indent >= indent) stack.pop();
    const item = { indent, ordered: /\d/.test(m[2]), start: parseInt(m[2], 10), text: m[3], children: [] };
    stack[stack.length - 1].children.push(item);
    stack.push(item);
  }
  const emit = (items) => {
    const out = [];
    let i = 0;
    while (i < items.length) { // consecutive items of one kind form one list
      const ordered = items[i].ordered;
      const group = [];
      while (i < items.length && items[i].ordered === ordered) group.push(items[i++]);
      const tag = ordered ? "ol" : "ul";
      const start = ordered && group[0].start > 1 ? ` start="${group[0].start}"` : "";
      out.push(`<${tag}${start}>${group.map((it) => `<li>${inline(it.text)}${it.children.length ? emit(it.children) : ""}</li>`).join("")}</${tag}>`);
    }
    return out.join("");
  };
  return emit(root.children);
}

export function render(source) {
  const out = [];
  const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  let para = [];
  const flush = () => { if (para.length) { out.push(`<p>${inline(para.join("\n"))}</p>`); para = []; } };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+#.-]*)/);
    if (fence) {
      flush();
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      const lang = fence[2] ? ` data-lang="${esc(fence[2])}"` : "";
      out.push(`<pre class="code"${lang}><code>${highlight(body.join("\n"), fence[2])}</code></pre>`);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)/);
    if (heading) { flush(); const n = heading[1].length; out.push(`<h${n}>${inline(heading[2])}</h${n}>`); i++; continue; }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("|")) {
      flush();
      const header = line;
      const sep = lines[i + 1];
      i += 2;
      const rows = [];
      while (i < lines.length && lines[i].includes("|") && lines[i].trim()) rows.push(lines[i++]);
      out.push(table(header, sep, rows));
      continue;
    }
    if (LIST_ITEM.test(line) && (!para.length || indentOf(line) === 0)) {
      flush();
      const block = [];
      while (i < lines.length) {
        const l = lines[i];
        if (LIST_ITEM.test(l)) { block.push(l); i++; continue; }
        if (l.trim() && indentOf(l) > 0 && block.length) { block.push(l); i++; continue; } // continuation
        if (!l.trim() && i + 1 < lines.length && LIST_ITEM.test(lines[i + 1]) && indentOf(lines[i + 1]) > 0) { i++; continue; }
        break;
      }
      out.push(list(block));
      continue;
    }
    if (/^\s*(---+|\*\*\*+|___+)\s*$/.test(line)) { flush(); out.push("<hr>"); i++; continue; }
    if (line.startsWith(">")) {
      flush();
      const quote = [];
      while (i < lines.length && lines[i].startsWith(">")) quote.push(lines[i++].replace(/^>\s?/, ""));
      out.push(`<blockquote>${render(quote.join("\n"))}</blockquote>`);
      continue;
    }
    if (!line.trim()) { flush(); i++; continue; }
    para.push(line);
    i++;
  }
  flush();
  return out.join("");
}

const KEYWORDS = /\b(def|class|return|if|else|elif|for|while|in|is|not|and|or|import|from|as|with|async|await|let|const|var|function|fn|pub|use|mod|struct|enum|impl|trait|match|mut|true|false|None|null|undefined|True|False|try|except|catch|finally|raise|throw|new|export|yield|lambda|pass|break|continue|type|interface|self|this)\b/g;
const HASH_COMMENTS = new Set(["", "python", "py", "sh", "bash", "shell", "console", "zsh", "ruby", "rb", "toml", "yaml", "yml", "r", "perl", "make", "makefile", "dockerfile", "ini", "conf"]);

// Escapes, then marks strings, comments, numbers and keywords (one pass per token kind, never
// inside another). `#` starts a comment only in languages where it does (not in C, Rust, CSS…).
export function highlight(code, lang = "") {
  const hash = HASH_COMMENTS.has(String(lang).toLowerCase());
  const parts = [];
  const re = hash
    ? /("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`|#[^\n]*|\/\/[^\n]*)/g
    : /("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`|\/\/[^\n]*|\/\*[\s\S]*?\*\/)/g;
  const plain = (s) => esc(s).replace(KEYWORDS, '<span class="kw">$1</span>').replace(/(^|[^\w#&;])(\d+(?:\.\d+)?)\b/g, '$1<span class="nu">$2</span>');
  let last = 0;
  for (const m of code.matchAll(re)) {
    parts.push(plain(code.slice(last, m.index)));
    const cls = /^(#|\/\/|\/\*)/.test(m[0]) ? "cm" : "st";
    parts.push(`<span class="${cls}">${esc(m[0])}</span>`);
    last = m.index + m[0].length;
  }
  parts.push(plain(code.slice(last)));
  return parts.join("");
}

export { esc };
