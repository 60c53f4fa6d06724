// A small, safe markdown renderer for answers: fenced code blocks (with copy/insert
// buttons), inline code, bold, italics, links as text, headings, lists, paragraphs.
// Everything is escaped first: model text never becomes markup.

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);
}

function inline(s: string): string {
  return escapeHtml(s)
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>");
}

export function renderMarkdown(src: string): string {
  const out: string[] = [];
  const lines = src.split("\n");
  let para: string[] = [];
  let list: string[] = [];
  const flush = () => {
    if (para.length) out.push(`<p>${para.map(inline).join("<br>")}</p>`);
    if (list.length) out.push(`<ul>${list.map((l) => `<li>${inline(l)}</li>`).join("")}</ul>`);
    para = [];
    list = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const fence = /^```(\S*)/.exec(line);
    if (fence) {
      flush();
      const code: string[] = [];
      i++;
      while (i < lines.length && !/^```/.test(lines[i] ?? "")) code.push(lines[i++] ?? "");
      const lang = escapeHtml(fence[1] ?? "");
      out.push(
        `<div class="code"><div class="code-bar"><span>${lang}</span>` +
          `<button data-act="copy">Copy</button><button data-act="insert">Insert</button></div>` +
          `<pre><code>${escapeHtml(code.join("\n"))}</code></pre></div>`,
      );
      continue;
    }
    const h = /^(#{1,4})\s+(.*)$/.exec(line);
    if (h) {
      flush();
      const n = (h[1] ?? "#").length + 2;
      out.push(`<h${n}>${inline(h[2] ?? "")}</h${n}>`);
      continue;
    }
    const li = /^\s*(?:[-*]|\d+\.)\s+(.*)$/.exec(line);
    if (li) {
      if (para.length) {
        out.push(`<p>${para.map(inline).join("<br>")}</p>`);
        para = [];
      }
      list.push(li[1] ?? "");
      continue;
    }
    if (line.trim() === "") {
      flush();
      continue;
    }
    if (list.length) flush();
    para.push(line);
  }
  flush();
  return out.join("");
}
