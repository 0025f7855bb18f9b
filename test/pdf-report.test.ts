import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import PDFDocument from "pdfkit";
import { defineTask } from "../src/core/task-type.ts";
import { chunkPdfPages } from "../src/search/chunk-pdf.ts";
import { pdfPages } from "../src/search/pdf-pages.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { tempDir, waitFor } from "./helpers.ts";
import { pgAvailableOrReport, pgTestSchemas, pgUnreachable, pgUrl } from "./pg-env.ts";
import { type Stack, startStack } from "./stack.ts";

// PDFs in and PDF reports out, over real HTTP on a SQLite file: a 50-page PDF uploaded and
// summarised by rag_summary is chunked page by page (a sentence of page 37 is found with its
// page), and its report is an application/pdf artifact whose first page pdftoppm renders and
// whose text holds the title, Latin or Chinese; a file that is not a PDF, and an encrypted PDF,
// fail with DOCUMENT_UNREADABLE. The 50-page run is repeated on PostgreSQL, whose chunks keep
// their page in the same column.

const PDFTOPPM = "/usr/bin/pdftoppm";
const pdftoppmSkip =
  !existsSync(PDFTOPPM) && process.env.CI !== "true"
    ? `${PDFTOPPM} is missing (apt-get install poppler-utils)`
    : false;

const PAGE_37 = "The quartermaster counts thirty-seven copper lanterns beside the eastern granary.";

/** The sentence that only page `n` holds: words no other page has, so a search can tell them apart. */
const sentenceOf = (n: number) =>
  n === 37 ? PAGE_37 : `Ledger entry ${n} records tide tables and mooring fees for berth ${n}.`;

/** A PDF made in the test with pdfkit: `pages` pages, each with its own sentence. */
function makePdf(pages: number, opts: { userPassword?: string } = {}): Promise<Buffer> {
  const doc = new PDFDocument({
    size: "A4",
    ...(opts.userPassword ? { userPassword: opts.userPassword } : {}),
  });
  const done = new Promise<Buffer>((resolve) => {
    const parts: Buffer[] = [];
    doc.on("data", (b: Buffer) => parts.push(b));
    doc.on("end", () => resolve(Buffer.concat(parts)));
  });
  for (let n = 1; n <= pages; n++) {
    if (n > 1) doc.addPage();
    doc.fontSize(16).text(`Harbour ledger, page ${n}`);
    doc.moveDown();
    doc.fontSize(11).text(sentenceOf(n));
  }
  doc.end();
  return done;
}

describe("PDF pages and chunks", () => {
  test("each page's text comes back in order, and each chunk names its page", async () => {
    const pages = await pdfPages(await makePdf(3));
    assert.equal(pages.length, 3);
    assert.match(pages[1]!, /Harbour ledger, page 2/);
    const chunks = chunkPdfPages(pages);
    assert.deepEqual(
      chunks.map((c) => c.source.page),
      [1, 2, 3],
    );
    assert.match(chunks[2]!.text, /berth 3/);
    // A page with no text (a scan, a blank page) gives no chunk; the pages after keep their numbers.
    assert.deepEqual(
      chunkPdfPages(["first page", "", "  \n ", "fourth page"]).map((c) => [c.source.page, c.text]),
      [
        [1, "first page"],
        [4, "fourth page"],
      ],
    );
  });

  test("not a PDF, an encrypted PDF and a cut PDF are DOCUMENT_UNREADABLE", async () => {
    const codeOf = async (bytes: Uint8Array) =>
      pdfPages(bytes).then(
        () => assert.fail("read"),
        (err) => ({ code: err.code, reason: err.details?.reason }),
      );
    assert.deepEqual(await codeOf(Buffer.from("just some text")), {
      code: "DOCUMENT_UNREADABLE",
      reason: "not_pdf",
    });
    assert.deepEqual(await codeOf(await makePdf(1, { userPassword: "s3cret" })), {
      code: "DOCUMENT_UNREADABLE",
      reason: "encrypted",
    });
    assert.deepEqual(await codeOf((await makePdf(2)).subarray(0, 400)), {
      code: "DOCUMENT_UNREADABLE",
      reason: "damaged",
    });
  });
});

async function uploadTo(stack: Stack, bytes: Buffer, filename: string, contentType: string) {
  const res = await fetch(`${stack.url}/v1/files?filename=${filename}`, {
    method: "POST",
    headers: { authorization: `Bearer ${stack.key}`, "content-type": contentType },
    body: new Uint8Array(bytes),
  });
  const body = await res.json();
  assert.equal(res.status, 201, JSON.stringify(body));
  return body.file_id as string;
}

async function runOn(stack: Stack, body: unknown) {
  const submitted = await stack.api("/v1/tasks", { body });
  assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
  const id = submitted.body.task_id as string;
  return waitFor(
    async () => {
      const r = await stack.api(`/v1/tasks/${id}`);
      return ["succeeded", "failed", "canceled", "timed_out"].includes(r.body.status) ? r.body : null;
    },
    120_000,
    `task ${id} to end`,
  );
}

/** Uploads a 50-page PDF, summarises it, and checks that page 37's sentence is found with its page. */
async function summariseLedger(stack: Stack) {
  const fileId = await uploadTo(stack, await makePdf(50), "ledger.pdf", "application/pdf");
  const task = await runOn(stack, {
    type: "rag_summary",
    input: { file_id: fileId, title: "Harbour ledger" },
  });
  assert.equal(task.status, "succeeded", JSON.stringify(task.error));
  assert.ok(task.output.chunks >= 50, `${task.output.chunks} chunks`);
  assert.equal(await stack.store.countChunks(stack.tenantId, task.task_id), task.output.chunks);
  for (const mode of ["keyword", "vector", "hybrid"]) {
    const r = await stack.api("/v1/search", {
      body: {
        query: "how many copper lanterns does the quartermaster count",
        mode,
        filter: { file_id: fileId },
      },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const top = r.body.data[0];
    assert.equal(top.source.page, 37, `${mode}: ${JSON.stringify(top)}`);
    assert.match(top.text, /thirty-seven copper lanterns/);
    assert.equal(top.file_id, fileId);
  }
  return { task, fileId };
}

const badReport = defineTask("report.bad", async (_input, step) =>
  step.report("r", { title: "  ", keyPoints: ["x"] }),
);

describe("rag_summary of PDFs and its PDF report, over HTTP (SQLite)", () => {
  let stack: Stack;
  const tmp = tempDir();
  before(async () => {
    stack = await startStack({ taskTypes: [badReport] });
  });
  after(async () => {
    await stack.close();
    tmp.cleanup();
  });

  const upload = (bytes: Buffer, filename: string, contentType: string) =>
    uploadTo(stack, bytes, filename, contentType);
  const runToEnd = (body: unknown) => runOn(stack, body);
  const download = async (taskId: string, name: string) => {
    const res = await fetch(`${stack.url}/v1/tasks/${taskId}/artifacts/${name}`, {
      headers: { authorization: `Bearer ${stack.key}` },
    });
    assert.equal(res.status, 200);
    return { contentType: res.headers.get("content-type"), bytes: Buffer.from(await res.arrayBuffer()) };
  };
  /** Page 1 as a PNG by pdftoppm: the file it wrote. */
  const renderPage1 = (pdf: Buffer, name: string) => {
    const input = join(tmp.dir, `${name}.pdf`);
    writeFileSync(input, pdf);
    const r = spawnSync(PDFTOPPM, [
      "-png",
      "-r",
      "50",
      "-f",
      "1",
      "-l",
      "1",
      "-singlefile",
      input,
      join(tmp.dir, name),
    ]);
    assert.equal(r.status, 0, r.stderr?.toString());
    return readFileSync(join(tmp.dir, `${name}.png`));
  };

  let ledgerTask: { task_id: string; output: any };
  let ledgerFile: string;

  test("a 50-page PDF ends succeeded, chunked by page: a sentence of page 37 is found with source.page = 37", async () => {
    const r = await summariseLedger(stack);
    ledgerTask = r.task;
    ledgerFile = r.fileId;
  });

  test("its report is served as application/pdf, holds the title and cites chunks by id and page", async () => {
    assert.equal(ledgerTask.output.report.name, "report.pdf");
    assert.equal(ledgerTask.output.report.content_type, "application/pdf");
    const { contentType, bytes } = await download(ledgerTask.task_id, "report.pdf");
    assert.equal(contentType, "application/pdf");
    assert.equal(bytes.subarray(0, 5).toString("latin1"), "%PDF-");
    const text = (await pdfPages(bytes)).join("\n");
    assert.match(text, /^Harbour ledger/);
    assert.match(text, /Key points/);
    assert.match(text, /\[1\] Page 1, lines 1-2/);
    assert.match(text, /berth 41\. \[5\]/);
    assert.ok(text.includes(`chunk ${ledgerTask.task_id}:0`), text);
    assert.ok(text.includes(`file ${ledgerFile}`), text);
    // Pages cited are pages of the document (key points spread through it).
    const cited = [...text.matchAll(/\[\d+\] Page (\d+)/g)].map((m) => Number(m[1]));
    assert.ok(cited.length >= 5 && cited.every((p) => p >= 1 && p <= 50), JSON.stringify(cited));
    assert.ok(new Set(cited).size >= 5, JSON.stringify(cited));
  });

  test("pdftoppm renders page 1 of the report", { skip: pdftoppmSkip }, async () => {
    const { bytes } = await download(ledgerTask.task_id, "report.pdf");
    const png = renderPage1(bytes, "ledger-report");
    assert.equal(png.subarray(1, 4).toString("latin1"), "PNG");
    assert.ok(png.length > 1000, `${png.length} bytes`);
  });

  test("a Chinese title and summary render: the text read back holds them, and pdftoppm draws page 1", async (t) => {
    const title = "港口账簿季度报告";
    const document = "今天港口的天气很好，货船准时到达。\n\n长时间运行的任务在签名的网络钩子上恢复。";
    const task = await runToEnd({ type: "rag_summary", input: { document, title } });
    assert.equal(task.status, "succeeded", JSON.stringify(task.error));
    const { contentType, bytes } = await download(task.task_id, "report.pdf");
    assert.equal(contentType, "application/pdf");
    const text = (await pdfPages(bytes)).join("\n");
    assert.ok(text.startsWith(title), text);
    assert.ok(text.includes("货船准时到达"), text);
    // The font is embedded as a subset of the glyphs used, not whole.
    assert.ok(bytes.length < 200_000, `${bytes.length} bytes`);
    if (pdftoppmSkip) return t.skip(pdftoppmSkip);
    const png = renderPage1(bytes, "chinese-report");
    assert.equal(png.subarray(1, 4).toString("latin1"), "PNG");
  });

  test("a file that says it is a PDF and is not fails with DOCUMENT_UNREADABLE", async () => {
    const file = await upload(Buffer.from("plain words, not a PDF"), "fake.pdf", "application/pdf");
    const task = await runToEnd({ type: "rag_summary", input: { file_id: file } });
    assert.equal(task.status, "failed");
    assert.equal(task.error.code, "DOCUMENT_UNREADABLE", JSON.stringify(task.error));
    assert.match(task.error.message, /not a PDF/);
  });

  test("an encrypted PDF fails with DOCUMENT_UNREADABLE, found by its bytes whatever its type", async () => {
    const file = await upload(
      await makePdf(2, { userPassword: "s3cret" }),
      "locked.bin",
      "application/octet-stream",
    );
    const task = await runToEnd({ type: "rag_summary", input: { file_id: file } });
    assert.equal(task.status, "failed");
    assert.equal(task.error.code, "DOCUMENT_UNREADABLE", JSON.stringify(task.error));
    assert.match(task.error.message, /encrypted/);
    assert.equal(await stack.store.countChunks(stack.tenantId, task.task_id), 0);
  });

  test("a reference with a title beside it is checked when read: a missing file fails the task with FILE_NOT_FOUND", async () => {
    const task = await runToEnd({ type: "rag_summary", input: { file_id: "file_missing", title: "Ledger" } });
    assert.equal(task.status, "failed");
    assert.equal(task.error.code, "FILE_NOT_FOUND", JSON.stringify(task.error));
  });

  test("step.report refuses a report without a title: the task fails with VALIDATION_FAILED", async () => {
    const task = await runToEnd({ type: "report.bad", input: {} });
    assert.equal(task.status, "failed");
    assert.equal(task.error.code, "VALIDATION_FAILED", JSON.stringify(task.error));
    assert.match(task.error.message, /step\.report\("r"\): "title"/);
  });
});

if (pgAvailableOrReport(await pgUnreachable(), "PostgreSQL PDF tests")) {
  const { fresh } = pgTestSchemas();
  describe("rag_summary of a 50-page PDF over HTTP (PostgreSQL)", () => {
    let stack: Stack;
    before(async () => {
      stack = await startStack({ store: new PostgresStore({ url: pgUrl(fresh()) }) });
    });
    after(async () => {
      await stack.close();
    });
    test("ends succeeded; page 37's sentence is found with source.page = 37 in every mode", async () => {
      await summariseLedger(stack);
    });
  });
}
