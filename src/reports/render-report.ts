import { fileURLToPath } from "node:url";
import { type ReportSpec, sourceLocation } from "../core/report.ts";

/**
 * The font for text beyond Latin-1: a subset of Noto Sans SC (OFL 1.1, `fonts/OFL.txt`) holding
 * ASCII, Latin-1, punctuation and the 6 763 hanzi of GB 2312, made by
 * `scripts/subset-cjk-font.py`. It ships with the code (the build copies `.ttf` files beside the
 * modules), so rendering reads nothing outside the package and fetches nothing.
 */
const CJK_FONT = fileURLToPath(new URL("./fonts/noto-sans-sc-gb2312.ttf", import.meta.url));

// What the PDF standard fonts' WinAnsi encoding can show; anything else needs the embedded font.
const LATIN_1 = /^[\t\n\r\u0020-\u007e\u00a0-\u00ff]*$/;

function allText(spec: ReportSpec): string[] {
  return [
    spec.title,
    spec.summary ?? "",
    ...(spec.keyPoints ?? []),
    ...(spec.sections ?? []).flatMap((s) => [s.heading, s.body]),
    ...(spec.sources ?? []).map((s) => `${s.label} ${sourceLocation(s)}`),
  ];
}

/**
 * Renders a report as a PDF (A4): the title, the summary, the key points as a list, each section
 * under its heading, then the sources numbered, each with where it lies (page, lines, file,
 * chunk). Latin-1 text is set in the built-in Helvetica, which embeds nothing; a report with any
 * other character is set in the embedded CJK font throughout, of which pdfkit embeds only the
 * glyphs used (a few tens of KB for a page of Chinese). A character the font lacks shows as a box.
 */
export async function renderReportPdf(spec: ReportSpec): Promise<Uint8Array> {
  const latin = allText(spec).every((t) => LATIN_1.test(t));
  // Loaded on first use, so a worker that renders no report never loads pdfkit and fontkit.
  const { default: PDFDocument } = await import("pdfkit");
  const doc = new PDFDocument({
    size: "A4",
    margin: 56,
    info: { Title: spec.title, Producer: "longhaul", Creator: "longhaul step.report" },
    lang: latin ? "en" : "zh-CN",
    displayTitle: true,
  });
  const done = new Promise<Uint8Array>((resolve, reject) => {
    const parts: Buffer[] = [];
    doc.on("data", (b: Buffer) => parts.push(b));
    doc.on("end", () => resolve(new Uint8Array(Buffer.concat(parts))));
    doc.on("error", reject);
  });
  if (latin) {
    doc.registerFont("body", "Helvetica");
    doc.registerFont("bold", "Helvetica-Bold");
  } else {
    doc.registerFont("body", CJK_FONT);
    // One weight ships (size is the cost of each); headings are set larger instead of bolder.
    doc.registerFont("bold", CJK_FONT);
  }
  const heading = (text: string) => {
    doc.moveDown(0.8);
    doc.font("bold").fontSize(14).fillColor("#1f2937").text(text);
    doc.moveDown(0.3);
  };
  const body = (text: string, opts: PDFKit.Mixins.TextOptions = {}) =>
    doc
      .font("body")
      .fontSize(11)
      .fillColor("#111827")
      .text(text, { lineGap: 2, ...opts });

  doc.font("bold").fontSize(22).fillColor("#111827").text(spec.title);
  doc
    .moveTo(doc.page.margins.left, doc.y + 6)
    .lineTo(doc.page.width - doc.page.margins.right, doc.y + 6)
    .strokeColor("#9ca3af")
    .stroke();
  doc.moveDown(0.5);
  if (spec.summary) {
    heading("Summary");
    body(spec.summary);
  }
  if (spec.keyPoints && spec.keyPoints.length > 0) {
    heading("Key points");
    for (const p of spec.keyPoints) body(`•  ${p}`, { indent: 0, paragraphGap: 3 });
  }
  for (const s of spec.sections ?? []) {
    heading(s.heading);
    body(s.body);
  }
  if (spec.sources && spec.sources.length > 0) {
    heading("Sources");
    spec.sources.forEach((src, i) => {
      const where = sourceLocation(src);
      body(`[${i + 1}] ${src.label}`, { paragraphGap: 1 });
      if (where)
        doc.font("body").fontSize(9).fillColor("#4b5563").text(where, { indent: 18, paragraphGap: 3 });
    });
  }
  doc.end();
  return done;
}
